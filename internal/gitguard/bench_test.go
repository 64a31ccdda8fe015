package gitguard

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkHooksElement reads the hooks directory git init makes (its
// samples), as every resolve does for every repository: the listing from
// the cache when the directory's times have not moved, every entry read.
func BenchmarkHooksElement(b *testing.B) {
	dir := b.TempDir()
	if err := exec.Command("git", "init", "-q", dir).Run(); err != nil {
		b.Skip("needs git")
	}
	p := filepath.Join(dir, ".git/hooks")
	time.Sleep(1100 * time.Millisecond) // settled: the cache may be used
	for _, cache := range []bool{true, false} {
		b.Run(map[bool]string{true: "cached listing", false: "no cache"}[cache], func(b *testing.B) {
			r := resolver{placeholder: func(string, ident) bool { return false }}
			if cache {
				r.dirs, r.used = map[string]cachedDir{}, map[string]bool{}
			}
			for i := 0; i < b.N; i++ {
				if e, _ := r.hooks(roleHooks, p); e.odd != "" || len(e.entries) == 0 {
					b.Fatalf("%+v", e)
				}
			}
		})
	}
}
