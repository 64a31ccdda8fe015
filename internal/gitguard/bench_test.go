package gitguard

import (
	"os"
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

// BenchmarkTreeLayoutCall measures a call's Begin and End in a repository
// with a tracked core.hooksPath (where each call asks git for its refs and
// index entries there, treerefs.go) against one without, idle and with a
// commit made in each call.
func BenchmarkTreeLayoutCall(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("needs git")
	}
	for _, layout := range []bool{false, true} {
		for _, commit := range []bool{false, true} {
			name := map[bool]string{false: "plain", true: "hooksPath in the tree"}[layout] + map[bool]string{false: ", idle", true: ", a commit per call"}[commit]
			b.Run(name, func(b *testing.B) {
				dir, _ := filepath.EvalSymlinks(b.TempDir())
				ws := filepath.Join(dir, "ws")
				sh := func(script string) {
					cmd := exec.Command("sh", "-c", script)
					cmd.Dir = ws
					cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
					if out, err := cmd.CombinedOutput(); err != nil {
						b.Fatalf("%s: %v\n%s", script, err, out)
					}
				}
				os.MkdirAll(filepath.Join(ws, ".husky"), 0o755)
				sh(`git init -q -b main && printf '#!/bin/sh\n' > .husky/pre-commit && git add -A && git commit -q -m i`)
				if layout {
					sh(`git config core.hooksPath .husky`)
				}
				g, err := New(Config{Roots: []Root{{Host: ws}}, Git: git, Home: dir})
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					c, err := g.Begin()
					if err != nil {
						b.Fatal(err)
					}
					if commit {
						b.StopTimer()
						sh(`git commit -q --allow-empty --no-verify -m x`)
						b.StartTimer()
					}
					if notes := c.End(); len(notes) > 0 {
						b.Fatal(notes)
					}
				}
			})
		}
	}
}
