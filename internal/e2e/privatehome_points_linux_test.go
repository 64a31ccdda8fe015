package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The mount points of grants inside the home (a --read-only file or
// directory there, the home's tool directories on PATH) are made in the
// private home, which commands write. Whatever a command leaves where one
// belongs, of any type, is moved aside (NAME.nanosandbox-moved-N, never
// removed, never followed) and said so; the next start and its calls work,
// with the grant in place.
func TestPrivateHomeMountPointsInTheWay(t *testing.T) {
	noHomeTools := []string{"--no-home-tools"}
	for _, tt := range []struct {
		name   string
		plant  []string // flags of the server whose command plants
		script string   // what the command leaves, in its HOME
		moved  string   // what is moved aside, relative to the home
		kept   string   // a shell test, run on the host in the private home, that what was moved aside is intact
	}{
		{"a non-empty directory where a file is granted", nil,
			`rm -rf ~/.toolrc && mkdir -p ~/.toolrc/keep && echo mine > ~/.toolrc/keep/f`, ".toolrc",
			`[ "$(cat .toolrc.nanosandbox-moved-N/keep/f)" = mine ]`},
		{"an empty directory where a file is granted", nil,
			`rm -rf ~/.toolrc && mkdir ~/.toolrc`, ".toolrc", `[ -d .toolrc.nanosandbox-moved-N ]`},
		{"a symbolic link where a file is granted", nil,
			`rm -rf ~/.toolrc && echo mine > ~/target && ln -s target ~/.toolrc`, ".toolrc",
			`[ -L .toolrc.nanosandbox-moved-N ] && [ "$(cat target)" = mine ]`},
		{"a FIFO where a file is granted", nil,
			`rm -rf ~/.toolrc && mkfifo ~/.toolrc`, ".toolrc", `[ -p .toolrc.nanosandbox-moved-N ]`},
		{"a file where a home tool's directory goes", noHomeTools,
			`rm -rf ~/.cargo/bin && mkdir -p ~/.cargo && echo mine > ~/.cargo/bin`, ".cargo/bin",
			`[ "$(cat .cargo/bin.nanosandbox-moved-N)" = mine ]`},
		{"a symbolic link where a home tool's directory goes", noHomeTools,
			`rm -rf ~/.cargo/bin && mkdir -p ~/.cargo ~/elsewhere && echo mine > ~/elsewhere/f && ln -s ../elsewhere ~/.cargo/bin`, ".cargo/bin",
			`[ -L .cargo/bin.nanosandbox-moved-N ] && [ "$(ls -A elsewhere)" = f ]`},
		{"a file where a directory above a home tool goes", noHomeTools,
			`rm -rf ~/.cargo && echo mine > ~/.cargo`, ".cargo",
			`[ "$(cat .cargo.nanosandbox-moved-N)" = mine ]`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := homeToolsEnv(t)
			next := []string{"--read-only", filepath.Join(e.home, ".toolrc")}
			plant := func() {
				t.Helper()
				if out, stderr, code := e.run(tt.plant, "sh", "-c", tt.script+` && echo planted`); code != 0 || out != "planted\n" {
					t.Fatalf("plant: exit %d, %q %q", code, out, stderr)
				}
			}
			// Planted, then the one-shot form with both grants: they are
			// in place, and a note says what was moved aside.
			plant()
			out, stderr, code := e.run(next, "sh", "-c", `cat ~/.toolrc; cg`)
			if code != 0 || !strings.Contains(out, "tool_setting = 1\n") || !strings.Contains(out, "cargo-ok\n") {
				t.Errorf("the call after the plant: exit %d, stdout %q, stderr %q", code, out, stderr)
			}
			if want := filepath.Join(e.home, tt.moved) + ".nanosandbox-moved-1"; !strings.Contains(stderr, "note: ") || !strings.Contains(stderr, want) {
				t.Errorf("no note names %s:\n%s", want, stderr)
			}
			e.checkKept(strings.ReplaceAll(tt.kept, "-N", "-1"))
			// Planted again, then a server: it starts, logs the move, and
			// its calls see the grant.
			plant()
			s := e.serve(next...)
			res, o := s.sh(t, `cat ~/.toolrc; cg`)
			if res.IsError || !strings.Contains(o.Stdout, "tool_setting = 1\n") || !strings.Contains(o.Stdout, "cargo-ok\n") {
				t.Errorf("a call of the next server: %s", text(res))
			}
			if want := filepath.Join(e.home, tt.moved) + ".nanosandbox-moved-2"; !strings.Contains(s.stderr.String(), want) {
				t.Errorf("the server's log does not name %s:\n%s", want, s.stderr.String())
			}
			e.checkKept(strings.ReplaceAll(tt.kept, "-N", "-2"))
		})
	}

	// Every fixed name beside it taken: the move takes a name past them,
	// and the start works.
	t.Run("every fixed name taken", func(t *testing.T) {
		e := homeToolsEnv(t)
		next := []string{"--read-only", filepath.Join(e.home, ".toolrc")}
		if out, stderr, code := e.run(nil, "sh", "-c", `rm -rf ~/.toolrc && mkdir ~/.toolrc && for i in $(seq 1 1000); do mkdir ~/.toolrc.nanosandbox-moved-$i; done && echo planted`); code != 0 || out != "planted\n" {
			t.Fatalf("plant: exit %d, %q %q", code, out, stderr)
		}
		out, stderr, code := e.run(next, "sh", "-c", `cat ~/.toolrc`)
		if code != 0 || out != "tool_setting = 1\n" {
			t.Errorf("the call after the plant: exit %d, stdout %q, stderr %q", code, out, stderr)
		}
	})

	// On the first call of a fresh private home, in the one-shot form,
	// the directories above a home tool's mount point are pinned too: the
	// command cannot move them away and leave a file where the tool goes.
	t.Run("first call of a fresh private home", func(t *testing.T) {
		e := homeToolsEnv(t)
		out, _, _ := e.run(nil, "sh", "-c", `mv ~/.cargo ~/.cargo-old && mkdir ~/.cargo && : > ~/.cargo/bin && echo planted`)
		if strings.Contains(out, "planted") {
			t.Errorf("the first call moved ~/.cargo away and planted a file at ~/.cargo/bin")
		}
		s := e.serve()
		if res, o := s.sh(t, `cg`); res.IsError || o.Stdout != "cargo-ok\n" {
			t.Errorf("a call of the next server: %s", text(res))
		}
	})
}

// homeToolsEnv is newEnv with a file ~/.toolrc for --read-only and a
// rustup-style tool directory ~/.cargo/bin on the server's PATH.
func homeToolsEnv(t *testing.T) *env {
	e := newEnv(t)
	e.write(filepath.Join(e.home, ".toolrc"), "tool_setting = 1\n", 0o644)
	e.write(filepath.Join(e.home, ".cargo/bin/cg"), "#!/bin/sh\necho cargo-ok\n", 0o755)
	for i, v := range e.vars {
		if strings.HasPrefix(v, "PATH=") {
			e.vars[i] = "PATH=" + filepath.Join(e.home, ".cargo/bin") + ":" + strings.TrimPrefix(v, "PATH=")
		}
	}
	return e
}

// checkKept runs a shell test on the host in e's private home.
func (e *env) checkKept(test string) {
	e.t.Helper()
	cmd := e.command(e.t.Context(), "")
	cmd.Path, cmd.Args = "/bin/sh", []string{"sh", "-c", test}
	cmd.Dir = e.privateHome()
	if out, err := cmd.CombinedOutput(); err != nil {
		ls, _ := os.ReadDir(cmd.Dir)
		var names []string
		for _, d := range ls {
			names = append(names, d.Name())
		}
		e.t.Errorf("in the private home, %q: %v %s (it holds %v)", test, err, out, names)
	}
}
