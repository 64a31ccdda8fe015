package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/server"
)

// auditPolicy is a policy with a workspace, a --writable path and a
// private home in a state directory, under a root with a place outside
// them all (out).
func auditPolicy(t *testing.T) (p *policy.Policy, root string) {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws", "data", "home", "out"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err = policy.New(policy.Options{Workspace: root + "/ws", Writable: []string{root + "/data"}, Home: root + "/home", StateDir: root + "/home/.cache/nanosandbox-mcp"})
	if err != nil {
		t.Fatal(err)
	}
	if p.PrivateHome == "" {
		t.Fatal("no private home")
	}
	t.Cleanup(p.Discard)
	return p, root
}

// TestOpenAuditRefused: a log that commands could write, or could make
// lead elsewhere, is a usage error, whichever way the path gets there: a
// final link into the workspace (the sixth sandbox red-team round's F4,
// which then had the server append to whatever a command re-pointed the
// link at), a link in the workspace that leads out, a directory on the way
// there, the private home and the server's state. What is not a regular
// file with one name is refused too. Nothing is created or written.
func TestOpenAuditRefused(t *testing.T) {
	p, root := auditPolicy(t)
	victim := root + "/out/victimrc"
	os.WriteFile(victim, []byte("# victim\n"), 0o644)
	os.WriteFile(root+"/out/two", nil, 0o600)
	os.Link(root+"/out/two", root+"/data/two")
	syscall.Mkfifo(root+"/out/fifo", 0o600)
	os.Mkdir(root+"/ws/d", 0o755)
	for l, to := range map[string]string{
		"out/final":    root + "/ws/log", // F4 as reported
		"out/dangling": root + "/ws/new", // the same before the workspace's log is made
		"ws/out":       victim,           // in the workspace, leading out
		"out/chain":    root + "/ws/out", // to that
		"out/dirlink":  root + "/data",   // a directory on the way
		"out/through":  "../ws/d/../../out/victimrc",
		"out/home":     p.PrivateHome + "/.bashrc",
		"out/loop":     "loop",
	} {
		if err := os.Symlink(to, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct{ path, msg string }{
		{"ws/log", "inside " + root + "/ws, which commands can write"},
		{"data/log", "inside " + root + "/data, which commands can write"},
		{"out/final", "leads into " + root + "/ws through a symbolic link"},
		{"out/dangling", "leads into " + root + "/ws through a symbolic link"},
		{"ws/out", "inside " + root + "/ws"},
		{"out/chain", "leads into " + root + "/ws through a symbolic link"},
		{"out/dirlink/log", "leads into " + root + "/data through a symbolic link"},
		{"out/through", "leads into " + root + "/ws through a symbolic link"},
		{"out/home", "leads into " + p.StateDir + " through a symbolic link"},
		{"home/.cache/nanosandbox-mcp/audit.jsonl", "inside " + p.StateDir + ", which commands can write"},
		{strings.TrimPrefix(p.PrivateHome, root+"/") + "/log", "inside " + p.StateDir},
		{"out/fifo", "is not a regular file"},
		{"out", "is a directory"},
		{"out/two", "has 2 names"},
		{"out/loop", "does not resolve"},
		{"out/no/such/log", "does not resolve"},
	} {
		a, closeAudit, err := openAudit(filepath.Join(root, tt.path), p)
		var ue *usageError
		if !errors.As(err, &ue) {
			t.Errorf("%s: opened (%v), want a usage error", tt.path, err)
			if a != nil {
				closeAudit()
			}
			continue
		}
		msg, hint := ue.Explain()
		if !strings.HasPrefix(msg, "--log-file ") || !strings.Contains(msg, tt.msg) || hint == "" {
			t.Errorf("%s: %q (hint %q), want %q", tt.path, msg, hint, tt.msg)
		}
	}
	if b, _ := os.ReadFile(victim); string(b) != "# victim\n" {
		t.Errorf("the victim was written: %q", b)
	}
	for _, p := range []string{root + "/ws/log", root + "/ws/new", root + "/data/log", p.PrivateHome + "/.bashrc", p.PrivateHome + "/log"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s was created", p)
		}
	}
}

// TestOpenAuditOpens: a log outside every place commands write is made
// 0600 or appended to, a link to it followed; and it is opened once: a
// link put at its path later (as a command would have, F4) leads no line
// elsewhere.
func TestOpenAuditOpens(t *testing.T) {
	p, root := auditPolicy(t)
	os.WriteFile(root+"/out/old.log", []byte("old\n"), 0o644)
	os.Symlink("old.log", root+"/out/link")
	os.Symlink(root+"/out/made.log", root+"/out/dangling")
	for _, tt := range []struct{ path, real, before string }{
		{"out/new.log", "out/new.log", ""},
		{"out/link", "out/old.log", "old\n"},
		{"out/dangling", "out/made.log", ""},
		{"ws/../out/lexical.log", "out/lexical.log", ""}, // made absolute as the user meant it
	} {
		a, closeAudit, err := openAudit(filepath.Join(root, tt.path), p)
		if err != nil {
			t.Errorf("%s: %v", tt.path, err)
			continue
		}
		a.Record(server.AuditEntry{Command: "true"})
		closeAudit()
		real := filepath.Join(root, tt.real)
		b, err := os.ReadFile(real)
		if err != nil || !strings.HasPrefix(string(b), tt.before+`{"time":`) || !strings.Contains(string(b), `"command":"true"`) {
			t.Errorf("%s: %s holds %q (%v)", tt.path, real, b, err)
		}
		if fi, err := os.Stat(real); tt.before == "" && (err != nil || fi.Mode().Perm() != 0o600) {
			t.Errorf("%s: made %v (%v), want 0600", tt.path, fi.Mode(), err)
		}
	}

	log, victim := root+"/out/kept.log", root+"/out/victimrc"
	os.WriteFile(victim, []byte("# victim\n"), 0o644)
	a, closeAudit, err := openAudit(log, p)
	if err != nil {
		t.Fatal(err)
	}
	defer closeAudit()
	os.Rename(log, log+".1")
	os.Symlink(victim, log)
	a.Record(server.AuditEntry{Command: "sh", Args: []string{"-c", `: "$(touch /tmp/INJECTED)"`}})
	if b, _ := os.ReadFile(victim); string(b) != "# victim\n" {
		t.Errorf("a line went where the path was re-pointed: %q", b)
	}
	if b, _ := os.ReadFile(log + ".1"); !strings.Contains(string(b), "INJECTED") {
		t.Errorf("the line is not in the file opened at start: %q", b)
	}
}
