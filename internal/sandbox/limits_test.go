package sandbox

import (
	"testing"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
)

func TestLimitWords(t *testing.T) {
	l := policy.Limits{MemoryBytes: 256 << 20, MaxProcesses: 64, MaxFileBytes: 10 << 20, TmpBytes: 8 << 20, CPUTime: 90 * time.Second}
	for _, tt := range []struct {
		name string
		hit  limitHit
		want string
	}{
		{"memory, cgroup", limitHit{Kind: memoryLimit, Mech: ByCgroup}, "memory limit 256 MiB (cgroup)"},
		{"memory, rlimit", limitHit{Kind: memoryLimit, Mech: ByRlimit}, "memory limit 256 MiB per process (rlimit)"},
		{"processes, cgroup", limitHit{Kind: processLimit, Mech: ByCgroup}, "process limit 64 (cgroup)"},
		{"processes, pid namespace", limitHit{Kind: processLimit, Mech: ByPidNamespace}, "process limit 64 (pid namespace)"},
		{"file size", limitHit{Kind: fileSizeLimit, Mech: ByRlimit}, "file size limit 10 MiB (rlimit)"},
		{"cpu time", limitHit{Kind: cpuTimeLimit, Mech: ByRlimit}, "CPU time limit 1m30s per process (rlimit)"},
		{"tmp", limitHit{Kind: tmpLimit, Mech: ByTmpfs, Dir: "/tmp"}, "/tmp size limit 8 MiB (tmpfs)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.hit.words(l); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
