package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --log-file: one JSON line per call, what ran and how it ended, never its
// input or output; a log commands could write, or none at all, is refused
// at start.
func TestAuditLog(t *testing.T) {
	e := newEnv(t)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	s := e.serve("--log-file", log)
	s.call(t, map[string]any{"command": "sh", "args": []string{"-c", "printf '%s%s\\n' SECRET OUTPUT; echo ERR >&2; exit 3"}, "stdin": "STDIN-NOT-LOGGED"})
	s.call(t, map[string]any{"command": "true"})
	s.sh(t, "echo x > /etc/nsb-audit")
	s.Close()
	s.cmd.Wait()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "NOT-LOGGED") || strings.Contains(string(b), "SECRETOUTPUT") {
		t.Errorf("the log holds input or output:\n%s", b)
	}
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("a line is not JSON: %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 3 {
		t.Fatalf("%d lines, want 3:\n%s", len(lines), b)
	}
	if lines[0]["command"] != "sh" || lines[0]["exit_code"] != 3.0 || lines[0]["stdout_bytes"] != 13.0 || lines[0]["stderr_bytes"] != 4.0 {
		t.Errorf("first line: %v", lines[0])
	}
	if lines[1]["command"] != "true" || lines[1]["exit_code"] != 0.0 {
		t.Errorf("second line: %v", lines[1])
	}
	if notes, _ := lines[2]["notes"].([]any); len(notes) == 0 {
		t.Errorf("third line has no notes: %v", lines[2])
	}
	if !strings.Contains(s.stderr.String(), "nanosandbox-mcp: serving; writable: "+e.ws) {
		t.Errorf("no one-line summary on stderr at start: %q", s.stderr.String())
	}
	for _, bad := range []string{filepath.Join(e.ws, "log.jsonl"), filepath.Join(t.TempDir(), "no", "such", "dir", "log")} {
		_, stderr, code := e.runRaw("--workspace", e.ws, "--log-file", bad, "--", "true")
		if code != 2 || !strings.Contains(stderr, "error: --log-file") || !strings.Contains(stderr, "hint:") {
			t.Errorf("--log-file %s: exit %d %q", bad, code, stderr)
		}
	}
}

// TestAuditLogLinkRefused: a --log-file that is a symbolic link into the
// workspace is refused at start, as a log in the workspace is. It was
// taken (only its directory was resolved), and a command replaced the
// workspace's file with a link to a file outside: from the next start on,
// the server appended lines whose arguments the command chose there, a
// $(...) that a ~/.bashrc would run. A link in the workspace leading out,
// and a log in the server's state, where the private homes are, are
// refused too. From the sixth sandbox red-team round (F4).
func TestAuditLogLinkRefused(t *testing.T) {
	e := newEnv(t)
	out := t.TempDir()
	victim := filepath.Join(out, "victimrc")
	if err := os.WriteFile(victim, []byte("# victim\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	log := filepath.Join(out, "nsb.log")
	if err := os.Symlink(filepath.Join(e.ws, "log"), log); err != nil {
		t.Fatal(err)
	}
	refused := func(what string, code int, stderr string) {
		t.Helper()
		if code != 2 || !strings.Contains(stderr, "error: --log-file") || !strings.Contains(stderr, "hint:") {
			t.Errorf("%s: exit %d %q, want the start refused", what, code, stderr)
		}
	}
	_, stderr, code := e.run([]string{"--log-file", log}, "sh", "-c", "rm -f log; ln -s "+victim+" log")
	refused("a log path linking into the workspace", code, stderr)
	// What the command did, where it ran; then a later start.
	os.Remove(filepath.Join(e.ws, "log"))
	if err := os.Symlink(victim, filepath.Join(e.ws, "log")); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = e.run([]string{"--log-file", log}, "sh", "-c", `: "$(echo INJECTED)"`)
	refused("the workspace's log re-pointed outside", code, stderr)
	_, stderr, code = e.run([]string{"--log-file", filepath.Join(e.ws, "log")}, "true")
	refused("the workspace's link outside", code, stderr)
	state := filepath.Join(e.home, ".cache", "nanosandbox-mcp")
	if err := os.MkdirAll(state, 0o700); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = e.run([]string{"--log-file", filepath.Join(state, "audit.jsonl")}, "true")
	refused("a log in the server's state", code, stderr)
	if b, err := os.ReadFile(victim); err != nil || string(b) != "# victim\n" {
		t.Errorf("the file outside was written: %q (%v)", b, err)
	}
	if _, err := os.Lstat(filepath.Join(state, "audit.jsonl")); err == nil {
		t.Errorf("a log was made in the server's state")
	}
}

func TestCheckJSON(t *testing.T) {
	e := newEnv(t)
	out, stderr, code := e.runRaw("--check", "--json", "--workspace", e.ws)
	var rep struct {
		Capabilities struct {
			OS string `json:"os"`
		} `json:"capabilities"`
		Verdict string            `json:"verdict"`
		Limits  map[string]string `json:"limits"`
		Policy  string            `json:"policy"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("exit %d, %v:\n%s%s", code, err, out, stderr)
	}
	if rep.Verdict != "ok" || rep.Capabilities.OS != "linux" || rep.Limits["memory"] == "" || !strings.Contains(rep.Policy, e.ws) {
		t.Errorf("%+v", rep)
	}
	if _, stderr, code := e.runRaw("--json", "--workspace", e.ws); code != 2 || !strings.Contains(stderr, "--json goes with --check") {
		t.Errorf("--json alone: exit %d %q", code, stderr)
	}
}

// TestAuditNotesAreTheServers: the log's notes are the server's own, never
// lines of output that look like them (the log promises never to hold
// output, and a forged note would read as the server's).
func TestAuditNotesAreTheServers(t *testing.T) {
	e := newEnv(t)
	e.write("data.txt", "token=FILE-SECRET\n", 0o644)
	log := filepath.Join(t.TempDir(), "audit.jsonl")
	s := e.serve("--log-file", log)
	// FORGED is made by the command, so that the logged arguments do not
	// hold it.
	s.sh(t, `sed 's/^/note: /' data.txt; printf 'note: git: %s%s nothing was moved aside\n' FOR GED; printf 'note: %s%s on stderr\n' FOR GED >&2`)
	// The same, and a write the sandbox refuses, which the server notes.
	s.sh(t, `printf 'note: %s%s again\n' FOR GED; echo x > /etc/nsb-audit-notes`)
	s.Close()
	s.cmd.Wait()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"FILE-SECRET", "FORGED"} {
		if strings.Contains(string(b), bad) {
			t.Errorf("the log holds output (%s):\n%s", bad, b)
		}
	}
	var notes [][]string // of each line
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var m struct {
			Notes []string `json:"notes"`
		}
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("a line is not JSON: %q: %v", l, err)
		}
		notes = append(notes, m.Notes)
	}
	if len(notes) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(notes), b)
	}
	if len(notes[0]) != 0 {
		t.Errorf("a call with no note of the server's logs notes %q", notes[0])
	}
	if len(notes[1]) != 1 || !strings.HasPrefix(notes[1][0], "read-only: ") {
		t.Errorf("notes %q, want the server's one read-only note", notes[1])
	}
}
