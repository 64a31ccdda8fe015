package gitguard

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeGitReportingBounds writes a "git" that prints its address space and
// file size bounds, soft and hard, in the shell's units (KiB, 512 bytes).
func fakeGitReportingBounds(t *testing.T) string {
	t.Helper()
	git := filepath.Join(t.TempDir(), "git")
	script := "#!/bin/sh\nulimit -S -v; ulimit -H -v; ulimit -S -f; ulimit -H -f\necho \"args $*\" >&2\n"
	if err := os.WriteFile(git, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return git
}

// TestRunGitIsBounded checks that every run of git the guard makes is
// bounded in address space and file size, soft and hard, before it runs,
// by the program in C where build.sh built it (required in CI's run with
// the blobs, NANOSANDBOX_REQUIRE_CSTAGE), else by the shell.
func TestRunGitIsBounded(t *testing.T) {
	if limitProgram() == "" && os.Getenv("NANOSANDBOX_REQUIRE_CSTAGE") != "" {
		t.Fatal("no bounds program in C (cstage/build.sh), and NANOSANDBOX_REQUIRE_CSTAGE is set")
	}
	var out bytes.Buffer
	msg, err := runGit(fakeGitReportingBounds(t), "bounds", t.TempDir(), []string{"PATH=/usr/bin:/bin"}, nil, &out, "status", "--porcelain")
	if err != nil {
		t.Fatal(err)
	}
	as, fsize := strconv.Itoa(gitMemoryKiB), strconv.Itoa(maxListingBytes/512)
	if want := strings.Join([]string{as, as, fsize, fsize}, "\n") + "\n"; out.String() != want {
		t.Errorf("git ran with bounds\n%s, want\n%s", out.String(), want)
	}
	// The arguments reach git as given, after the guard's own.
	if want := "args -c protocol.allow=never status --porcelain"; msg != want {
		t.Errorf("git's arguments: %q, want %q", msg, want)
	}
}

// TestLimitProgram checks the program in C directly: a lower hard limit
// it inherits holds; a bad number, a relative path or a program that is
// not there end it before anything runs, with status 127 and a line on
// stderr.
func TestLimitProgram(t *testing.T) {
	if limitProgram() == "" {
		if os.Getenv("NANOSANDBOX_REQUIRE_CSTAGE") != "" {
			t.Fatal("no bounds program in C (cstage/build.sh), and NANOSANDBOX_REQUIRE_CSTAGE is set")
		}
		t.Skip("no bounds program in C for this architecture: run internal/sandbox/cstage/build.sh first")
	}
	git := fakeGitReportingBounds(t)
	run := func(shell string, args ...string) (string, string, int) {
		t.Helper()
		// The memfd is close-on-exec here: the shell gets it as fd 3.
		cmd := exec.Command("/bin/sh", append([]string{"-c", shell + `; exec /proc/self/fd/3 "$@"`, "nanosandbox-mcp: git limits"}, args...)...)
		cmd.ExtraFiles = []*os.File{limitFiles[0]}
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return stdout.String(), stderr.String(), code
	}
	stdout, _, code := run("ulimit -v 500000; ulimit -f 1000", strconv.Itoa(gitMemoryKiB<<10), strconv.Itoa(maxListingBytes), git)
	if want := "500000\n500000\n1000\n1000\n"; code != 0 || stdout != want {
		t.Errorf("under lower hard limits: exit %d, bounds\n%s, want\n%s", code, stdout, want)
	}
	for _, c := range []struct {
		name string
		args []string
		says string
	}{
		{"a bad number", []string{"1e9", "1000", git}, "address space bound"},
		{"a number too large", []string{"1000000000", "99999999999999999999", git}, "file size bound"},
		{"a relative path", []string{"1000000000", "1000", "git"}, "not absolute"},
		{"no such program", []string{"1000000000", "1000", git + ".missing"}, "execve (errno 2)"},
		{"too few arguments", []string{"1000000000", "1000"}, "usage"},
	} {
		stdout, stderr, code := run("true", c.args...)
		if code != 127 || stdout != "" || !strings.HasPrefix(stderr, "nanosandbox-mcp: git limits: ") || !strings.Contains(stderr, c.says) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 127, nothing, and %q", c.name, code, stdout, stderr, c.says)
		}
	}
}
