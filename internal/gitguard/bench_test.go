package gitguard

import (
	"fmt"
	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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
				time.Sleep(1100 * time.Millisecond) // settled: what git said may be kept
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

// BenchmarkCallIndex is one call's Begin and End in a workspace that is a
// repository of a thousand files: with an index no command changed, and
// with one a command's git add rewrote (git's own time not counted).
func BenchmarkCallIndex(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("needs git")
	}
	dir, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	root := filepath.Join(dir, "ws")
	sh := func(script string) {
		cmd := exec.Command("sh", "-c", script)
		cmd.Dir = root
		cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com"}
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%s: %v\n%s", script, err, out)
		}
	}
	if err := exec.Command("mkdir", "-p", root).Run(); err != nil {
		b.Fatal(err)
	}
	sh(`git init -q && for d in 0 1 2 3 4 5 6 7 8 9; do mkdir $d; for f in $(seq 100); do echo $d$f > $d/$f; done; done && git add -A && git commit -qm files`)
	g, err := New(Config{Roots: []Root{{Host: root}}, Git: git, Home: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if err := g.Watch(); err != nil {
		b.Fatal(err)
	}
	time.Sleep(1100 * time.Millisecond)
	for _, changed := range []bool{false, true} {
		b.Run(map[bool]string{false: "index unchanged", true: "git add in the call"}[changed], func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c, err := g.Begin()
				if err != nil {
					b.Fatal(err)
				}
				if changed {
					b.StopTimer()
					sh(`echo ` + strconv.Itoa(i) + ` > 0/1 && git add 0/1`)
					b.StartTimer()
				}
				if notes := c.End(); len(notes) != 0 {
					b.Fatal(notes)
				}
			}
		})
	}
}

// BenchmarkLaunchers is what every Begin and End pays for the launchers of
// a root: one of 5,000 entries (and a types/ directory), with and without
// a node_modules of 1,000 packages (a .bin link each, a hidden lockfile),
// none of which changed since the last call.
func BenchmarkLaunchers(b *testing.B) {
	dir := b.TempDir()
	mk := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < 5000; i++ {
		mk(filepath.Join(dir, fmt.Sprintf("f%d.txt", i)), "x")
	}
	mk(filepath.Join(dir, "types", "index.ts"), "x")
	mk(filepath.Join(dir, "package.json"), `{"name":"app"}`)
	time.Sleep(1100 * time.Millisecond) // settled
	b.Run("no node_modules", func(b *testing.B) {
		cache := launchCache{}
		for i := 0; i < b.N; i++ {
			launchers(dir, cache)
		}
	})
	for i := 0; i < 1000; i++ {
		p := fmt.Sprintf("p%d", i)
		mk(filepath.Join(dir, "node_modules", p, "package.json"), `{"name":"`+p+`","version":"1.0.0"}`)
		if err := os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.Symlink("../"+p+"/x", filepath.Join(dir, "node_modules", ".bin", p)); err != nil {
			b.Fatal(err)
		}
	}
	mk(filepath.Join(dir, "node_modules", ".package-lock.json"), `{"lockfileVersion":3}`)
	time.Sleep(1100 * time.Millisecond)
	b.Run("1000 packages", func(b *testing.B) {
		cache := launchCache{}
		for i := 0; i < b.N; i++ {
			launchers(dir, cache)
		}
	})
}

// BenchmarkWalkDeep is the cost of a walk per directory (ns/dir) of 5,000
// directories at the end of a chain of directories near PATH_MAX, and of
// as many near the root (go test -run '^$' -bench WalkDeep).
func BenchmarkWalkDeep(b *testing.B) {
	for _, room := range []int{4000 - 20, 40} {
		b.Run(map[bool]string{true: "shallow", false: "deep"}[room > 1000], func(b *testing.B) {
			root, err := filepath.EvalSymlinks(b.TempDir())
			if err != nil {
				b.Fatal(err)
			}
			deep, fd := deepChain(b, root, room)
			manyDirs(b, fd, 5000)
			unix.Close(fd)
			skip := func(string) bool { return false }
			dirs := 0
			for b.Loop() {
				w := &walker{skip: skip, visit: func(string, int, dirState, uint8) error { return nil }}
				if err := w.walk(root, 0); err != nil {
					b.Fatal(err)
				}
				dirs = w.dirs
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(dirs), "ns/dir")
			b.Logf("%d directories, the deepest %d levels down", dirs, strings.Count(deep, "/")-strings.Count(root, "/"))
		})
	}
}

// BenchmarkPollDeep is the cost per directory (ns/dir) of a refresh of
// the poll finder with nothing changed, of 5,000 directories at the end of
// a chain of directories near PATH_MAX (go test -run '^$' -bench PollDeep).
func BenchmarkPollDeep(b *testing.B) {
	root, err := filepath.EvalSymlinks(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	_, fd := deepChain(b, root, 40)
	manyDirs(b, fd, 5000)
	unix.Close(fd)
	defer func(d time.Duration) { settle = d }(settle)
	settle = 0
	p := &pollFinder{roots: []string{root}, skip: func(string) bool { return false }}
	if err := p.refresh(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := p.refresh(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(p.dirs)), "ns/dir")
}

// BenchmarkLooseObjects is one idle call's Begin and End in a repository
// holding 3,000 loose objects (as a busy one keeps before gc packs them),
// none changed: what checking the object store costs when nothing is
// there to check.
func BenchmarkLooseObjects(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("needs git")
	}
	dir, _ := filepath.EvalSymlinks(b.TempDir())
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		b.Fatal(err)
	}
	script := `git init -q -b main && seq 3000 | while read i; do printf 'x%s' "$i" > "f$i"; done && git add -A && git commit -q -m i && rm -f f*`
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	n := 0
	filepath.WalkDir(filepath.Join(ws, ".git", "objects"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && len(filepath.Base(p)) == 38 {
			n++
		}
		return nil
	})
	time.Sleep(1100 * time.Millisecond) // settled
	for _, watch := range []bool{false, true} {
		b.Run(map[bool]string{false: "a one-shot guard (every object stat'ed)", true: "a server's guard (Watch: the objects watched)"}[watch], func(b *testing.B) {
			g, err := New(Config{Roots: []Root{{Host: ws}}, Git: git, Home: dir})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			if watch {
				if err := g.Watch(); err != nil {
					b.Fatal(err)
				}
			}
			idleCalls(b, g)
			b.ReportMetric(float64(n), "loose")
		})
	}
}

// BenchmarkRepoCall is an idle call's Begin and End in the repository of
// bench/peers.py's repository row: husky's tracked core.hooksPath and
// 3,000 committed files, so 3,000 loose objects, watched by a server's
// guard. It is the guard's share of that row's CPU per call, without the
// sandbox around it.
func BenchmarkRepoCall(b *testing.B) {
	git, err := exec.LookPath("git")
	if err != nil {
		b.Skip("needs git")
	}
	dir, _ := filepath.EvalSymlinks(b.TempDir())
	ws := filepath.Join(dir, "ws")
	if err := os.MkdirAll(filepath.Join(ws, ".husky"), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".husky", "pre-commit"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 3000; i++ {
		if err := os.WriteFile(filepath.Join(ws, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("x%d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cmd := exec.Command("sh", "-c", `git init -q -b main && git config core.hooksPath .husky && git config gc.auto 0 && git add -A && git commit -q -m files`)
	cmd.Dir = ws
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=a", "GIT_AUTHOR_EMAIL=a@example.com", "GIT_COMMITTER_NAME=a", "GIT_COMMITTER_EMAIL=a@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%v\n%s", err, out)
	}
	// Settled, and written out: the writeback of 3,000 new files would
	// otherwise slow the placeholders each call makes in .git, by up to
	// 2 ms a call, for as long as it lasts.
	unix.Sync()
	time.Sleep(1100 * time.Millisecond)
	g, err := New(Config{Roots: []Root{{Host: ws}}, Git: git, Home: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	if err := g.Watch(); err != nil {
		b.Fatal(err)
	}
	idleCalls(b, g)
}

// idleCalls makes one call, whose end watches the loose objects, then
// times b.N calls that change nothing, failing on any note.
func idleCalls(b *testing.B, g *Guard) {
	c, err := g.Begin()
	if err != nil {
		b.Fatal(err)
	}
	c.End()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c, err := g.Begin()
		if err != nil {
			b.Fatal(err)
		}
		if notes := c.End(); len(notes) > 0 {
			b.Fatal(notes)
		}
	}
}
