package sandboxtest

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// selfTestEnv makes the helper tests below act; otherwise they return at
// once, so that they pass unnoticed in an ordinary run.
const selfTestEnv = "_SANDBOXTEST_SELFTEST"

func TestHelperSkipsInSubprocess(t *testing.T) {
	if os.Getenv(selfTestEnv) == "" {
		return
	}
	if !RunInSubprocess(t) {
		return
	}
	t.Skip("the machine lacks something, found only in the subprocess")
}

func TestHelperPassesInSubprocess(t *testing.T) {
	if os.Getenv(selfTestEnv) == "" {
		return
	}
	if !RunInSubprocess(t) {
		return
	}
}

func TestHelperFailsInSubprocess(t *testing.T) {
	if os.Getenv(selfTestEnv) == "" {
		return
	}
	if !RunInSubprocess(t) {
		return
	}
	t.Error("failed in the subprocess")
}

// TestRunInSubprocess runs the helper tests above in a test binary of
// their own and checks that the outer test ends as the inner one did.
func TestRunInSubprocess(t *testing.T) {
	for _, tt := range []struct {
		test string
		want string // the outer test's result line
	}{
		{"TestHelperSkipsInSubprocess", "--- SKIP: TestHelperSkipsInSubprocess"},
		{"TestHelperPassesInSubprocess", "--- PASS: TestHelperPassesInSubprocess"},
		{"TestHelperFailsInSubprocess", "--- FAIL: TestHelperFailsInSubprocess"},
	} {
		t.Run(tt.test, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^"+tt.test+"$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), selfTestEnv+"=1")
			out, _ := cmd.CombinedOutput()
			// The subprocess's own lines are indented inside the outer
			// test's log; the outer result line is not.
			found := false
			for _, line := range strings.Split(string(out), "\n") {
				found = found || strings.HasPrefix(line, tt.want+" ")
			}
			if !found {
				t.Errorf("got output without %q:\n%s", tt.want, out)
			}
		})
	}
}

func TestSubprocessOutcome(t *testing.T) {
	for _, tt := range []struct {
		name, out, test, want string
	}{
		{"ran", "=== RUN   TestX\n" + outcomeMarker + "ran TestX\n--- PASS: TestX (0.00s)\n", "TestX", "ran"},
		{"skipped", "    x_test.go:9: needs landlock\n" + outcomeMarker + "skipped TestX\n--- SKIP: TestX\n", "TestX", "skipped"},
		{"another test's line", outcomeMarker + "skipped TestXY\n", "TestX", ""},
		{"subtest", outcomeMarker + "skipped TestX/a_b\n", "TestX/a_b", "skipped"},
		{"no test ran", "testing: warning: no tests to run\nPASS\n", "TestX", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := subprocessOutcome(tt.out, tt.test); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
