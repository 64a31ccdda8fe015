package main

import (
	"runtime/debug"
	"testing"
)

func TestModuleVersion(t *testing.T) {
	for _, tt := range []struct {
		name    string
		stamped string
		info    *debug.BuildInfo
		want    string
	}{
		{"stamped by a release", "1.0.0", &debug.BuildInfo{Main: debug.Module{Version: "v9.9.9"}}, "1.0.0"},
		{"go install @v1.0.0", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "1.0.0"},
		{"go install @v1.1.0-rc.1", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.1.0-rc.1"}}, "1.1.0-rc.1"},
		{"go install @main (pseudo-version)", "dev",
			&debug.BuildInfo{Main: debug.Module{Version: "v1.0.1-0.20261130120000-0123456789ab"}}, "1.0.1-0.20261130120000-0123456789ab"},
		{"go build in a checkout", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no module version", "dev", &debug.BuildInfo{}, "dev"},
		{"no build info", "dev", nil, "dev"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			read := func() (*debug.BuildInfo, bool) { return tt.info, tt.info != nil }
			if got := moduleVersion(tt.stamped, read); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
