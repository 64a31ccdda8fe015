package e2e

import (
	"debug/elf"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox/sandboxtest"
)

// The server keeps a sandbox helper started ahead of the next call. These
// tests check that it never outlives the server and that a spare that died
// while it waited is not handed a call.

// spareHelpers waits up to 10s for the server to have its spare helper,
// with the helper's exec stage, and returns the pids of every process below
// the server.
func spareHelpers(t *testing.T, s *session) []int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		pids := sandboxtest.Descendants(s.cmd.Process.Pid)
		found := map[string]bool{}
		for _, pid := range pids {
			found[cmdline(pid)] = true
		}
		// A static binary's spare has its exec stage started too.
		if found["nanosandbox-mcp: sandbox"] && (found["nanosandbox-mcp: exec"] || hasInterp(serverBin)) {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("no spare helper below the server after 10s (below it: %v)", pids)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdline is a process's command line, arguments after the first dropped.
func cmdline(pid int) string {
	raw, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	first, _, _ := strings.Cut(string(raw), "\x00")
	return first
}

// waitPidsGone waits up to d for every pid to be gone (or a zombie).
func waitPidsGone(t *testing.T, pids []int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		var left []string
		for _, pid := range pids {
			if _, state, ok := sandboxtest.Stat(pid); ok && state != "Z" {
				left = append(left, strconv.Itoa(pid)+" "+cmdline(pid))
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left running after the server: %v", left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestSpareHelper(t *testing.T) {
	linuxOnly(t, "a helper kept for the next call (macOS keeps none)")
	t.Run("ends with the server", func(t *testing.T) {
		e := newEnv(t)
		s := e.serve()
		s.sh(t, "true")
		pids := spareHelpers(t, s)
		s.Close()
		waitPidsGone(t, pids, 5*time.Second)
	})
	t.Run("ends with a killed server", func(t *testing.T) {
		e := newEnv(t)
		s := e.serve()
		s.sh(t, "true")
		pids := spareHelpers(t, s)
		s.cmd.Process.Kill()
		waitPidsGone(t, pids, 5*time.Second)
	})
	t.Run("a spare that died is replaced", func(t *testing.T) {
		e := newEnv(t)
		s := e.serve()
		s.sh(t, "true")
		for _, pid := range spareHelpers(t, s) {
			if cmdline(pid) == "nanosandbox-mcp: sandbox" {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"after"}})
		if res.IsError || out.Stdout != "after\n" {
			t.Errorf("call after the spare died: %q %+v", text(res), out)
		}
	})
	t.Run("a spare whose exec stage died is replaced", func(t *testing.T) {
		if hasInterp(serverBin) {
			t.Skip("a dynamic build starts its exec stage only once a call comes")
		}
		e := newEnv(t)
		s := e.serve()
		s.sh(t, "true")
		for _, pid := range spareHelpers(t, s) {
			if cmdline(pid) == "nanosandbox-mcp: exec" {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(100 * time.Millisecond)
		res, out := s.call(t, map[string]any{"command": "echo", "args": []string{"after"}})
		if res.IsError || out.Stdout != "after\n" {
			t.Errorf("call after the spare's exec stage died: %q %+v", text(res), out)
		}
	})
}

// TestDynamicBinary runs a cgo build, which needs its ELF interpreter: what
// the README's go run gives on a machine with a C compiler. Its helper
// starts the exec stage only once the sandbox's root (with the host's
// libraries) is built.
func TestDynamicBinary(t *testing.T) {
	linuxOnly(t, "ELF interpreters")
	if dynamicBin == "" {
		if dynamicWhy == "" {
			dynamicWhy = "binaries were given (NANOSANDBOX_BIN) without NANOSANDBOX_DYNAMIC_BIN"
		}
		t.Skip(dynamicWhy)
	}
	if !hasInterp(dynamicBin) {
		t.Skipf("%s has no ELF interpreter: a cgo build is static here", dynamicBin)
	}
	static := serverBin
	serverBin = dynamicBin
	t.Cleanup(func() { serverBin = static })

	e := newEnv(t)
	if out, errOut, code := e.sh("echo hello > note.txt; cat note.txt"); code != 0 || out != "hello\n" {
		t.Errorf("one-shot: %d %q %q", code, out, errOut)
	}
	if _, _, code := e.sh("echo x > /etc/nsb-dynamic"); code == 0 {
		t.Errorf("one-shot wrote /etc")
	}
	s := e.serve()
	for range 3 { // the first without a spare, then with one
		if res, out := s.call(t, map[string]any{"command": "cat", "args": []string{"note.txt"}}); res.IsError || out.Stdout != "hello\n" {
			t.Errorf("served call: %q %+v", text(res), out)
		}
	}
}

// hasInterp reports whether the binary at path has an ELF interpreter.
func hasInterp(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}
