package cli

import (
	"strings"
	"testing"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

// TestSummaryNetwork: the line the server writes when it starts serving
// says what network commands have.
func TestSummaryNetwork(t *testing.T) {
	for _, tt := range []struct {
		name string
		o    policy.Options
		want string
	}{
		{"none", policy.Options{}, "; network: none;"},
		{"allow-list", policy.Options{AllowNet: []string{"pkg.example.test", "*.example.test:8443", "127.0.0.1:8080"}}, "; network: HTTP(S) through the proxy to pkg.example.test, *.example.test:8443, 127.0.0.1:8080;"},
		{"host", policy.Options{HostNetwork: true}, "; network: the host's;"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.o.Workspace = t.TempDir()
			p, err := policy.New(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := summary(p); !strings.Contains(got, tt.want) {
				t.Errorf("got %q, want it to contain %q", got, tt.want)
			}
		})
	}
}
