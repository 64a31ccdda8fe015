package e2e

import (
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The process rows of DESIGN.md §7: a command sees and signals only its own
// processes, and nothing of the server's environment.

func TestEscapeHostProcess(t *testing.T) {
	e := newEnv(t)
	marker := uniqueMarker(t)
	host := exec.Command("sleep", "300")
	host.Args[0] = marker // shows in the host's /proc/PID/cmdline
	if err := host.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		host.Process.Kill()
		host.Wait()
	})
	pid := strconv.Itoa(host.Process.Pid)
	alive := func(t *testing.T) {
		if err := host.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("the host process died: %v", err)
		}
	}

	t.Run("kill -0", func(t *testing.T) {
		e := e.in(t)
		e.mustDeny(nil, `kill -0 `+pid)
	})
	t.Run("kill(2)", func(t *testing.T) {
		e := e.in(t)
		e.wantDenied(nil, "kill", pid)
	})
	t.Run("ptrace", func(t *testing.T) {
		linuxOnly(t, "the attack helper's ptrace")
		e := e.in(t)
		e.wantDenied(nil, "ptrace-attach", pid)
	})
	t.Run("listed in /proc", func(t *testing.T) {
		linuxOnly(t, "/proc")
		e := e.in(t)
		out := e.mustAllow(nil, `ls /proc; for f in /proc/[0-9]*/cmdline; do tr '\0' ' ' < "$f"; echo; done`)
		if strings.Contains(out, marker) {
			t.Errorf("the host process is visible inside:\n%s", out)
		}
		for _, f := range strings.Fields(out) {
			if f == pid {
				t.Errorf("/proc inside lists the host pid %s:\n%s", pid, out)
			}
		}
	})
	t.Run("kill -9 -1", func(t *testing.T) {
		e := e.in(t)
		if runtime.GOOS == "darwin" {
			// kill(-1) signals its caller too there (as POSIX allows): the
			// shell dies with the rest of its sandbox, the host's process
			// lives, and the call ends.
			e.run(nil, "sh", "-c", `kill -9 `+pid+`; kill -9 -1; echo survived`)
			alive(t)
			return
		}
		// A sleep of its own, killed too, shows that kill -1 ran.
		out, stderr, _ := e.run(nil, "sh", "-c", `kill -9 `+pid+`; sleep 30 & p=$!; kill -9 -1; wait $p; echo "own sleep: $?"`)
		if !strings.Contains(out, "own sleep: 137") {
			t.Errorf("kill -9 -1 did not kill the command's own sleep: %s%s", out, stderr)
		}
		alive(t)
	})
	t.Run("the server", func(t *testing.T) {
		e := e.in(t)
		s := e.serve()
		spid := strconv.Itoa(s.cmd.Process.Pid)
		if _, out := s.sh(t, `kill -0 `+spid+` && echo signalled; ls /proc/`+spid+` && echo listed`); strings.Contains(out.Stdout, "signalled") || strings.Contains(out.Stdout, "listed") {
			t.Errorf("the server is visible or signalable: %+v", out)
		}
		e.wantDenied(nil, "kill", spid)
		if _, out := s.sh(t, `echo still-serving`); out.Stdout != "still-serving\n" {
			t.Errorf("server after the attempts: %+v", out)
		}
	})
	alive(t)
}

func TestEscapeProcOne(t *testing.T) {
	linuxOnly(t, "/proc")
	e := newEnv(t)
	for _, tt := range []struct{ name, script string }{
		{"root", `ls /proc/1/root/`},
		{"root file", `cat /proc/1/root/etc/hostname`},
		{"cwd", `ls /proc/1/cwd/`},
		{"environ", `cat /proc/1/environ`},
		{"mem", `exec 3< /proc/1/mem`},
		{"mem write", `exec 3> /proc/1/mem`},
		{"fd link", `readlink /proc/1/fd/0 /proc/1/fd/4`},
		{"fdinfo", `cat /proc/1/fdinfo/4`},
		{"fd open", `cat /proc/1/fd/0 /proc/1/fd/3 /proc/1/fd/4`},
		{"mnt ns", `exec 3< /proc/1/ns/mnt`},
		// The helper holds the C exec stage's memfd (sealed: even
		// reached, it could not be written).
		{"exec stage memfd", `for n in $(seq 3 64); do if readlink /proc/1/fd/$n | grep -q memfd; then echo x >>/proc/1/fd/$n && exit 0; fi; done; exit 1`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := e.in(t)
			e.mustDeny(nil, tt.script)
		})
	}
	t.Run("own process", func(t *testing.T) {
		e := e.in(t)
		e.mustAllow(nil, `cat /proc/self/environ >/dev/null && ls /proc/self/root/ >/dev/null`)
	})
}

func TestEscapeEnvironment(t *testing.T) {
	e := newEnv(t)
	allowed := []string{"PATH", "HOME", "TMPDIR", "LANG", "LANGUAGE", "TERM", "USER", "LOGNAME", "PWD",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
		// The sandbox's own: its proxy, pip's retries of a refusal, and
		// update checks that would need the network off.
		"HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy", "PIP_RETRIES",
		"PIP_DISABLE_PIP_VERSION_CHECK", "npm_config_update_notifier", "NO_UPDATE_NOTIFIER"}
	checkNames := func(t *testing.T, env string) {
		for _, line := range strings.Split(strings.TrimSpace(env), "\n") {
			name, _, _ := strings.Cut(line, "=")
			if !slices.Contains(allowed, name) && !strings.HasPrefix(name, "LC_") {
				t.Errorf("unexpected variable %q reaches the command", name)
			}
		}
	}
	script := `env; tr '\0' '\n' < /proc/self/environ; cat /proc/1/environ; cat /proc/*/environ; cat /proc/*/cmdline; set`

	t.Run("one-shot", func(t *testing.T) {
		e := e.in(t)
		stdout, stderr, code := e.run(nil, "/usr/bin/env")
		if code != 0 {
			t.Fatalf("env: exit %d: %s", code, stderr)
		}
		checkNames(t, stdout)
		_, out := e.try(nil, script)
		if strings.Contains(stdout+out, secretValue) || strings.Contains(stdout+out, "NSB_TEST_SECRET") {
			t.Errorf("the server's environment is visible:\n%s\n%s", stdout, out)
		}
	})
	t.Run("MCP", func(t *testing.T) {
		e := e.in(t)
		s := e.serve()
		_, out := s.call(t, map[string]any{"command": "/usr/bin/env"})
		if out.ExitCode != 0 {
			t.Fatalf("env: %+v", out)
		}
		checkNames(t, out.Stdout)
		res, out2 := s.sh(t, script)
		all := out.Stdout + out2.Stdout + out2.Stderr + text(res)
		if strings.Contains(all, secretValue) || strings.Contains(all, "NSB_TEST_SECRET") {
			t.Errorf("the server's environment is visible:\n%s", all)
		}
	})
}

func TestEscapeInheritedDescriptors(t *testing.T) {
	e := newEnv(t)
	fds := "/proc/self/fd"
	if runtime.GOOS == "darwin" {
		fds = "/dev/fd"
	}
	check := func(t *testing.T, out string) {
		// ls itself holds one open directory (3).
		for _, f := range strings.Fields(out) {
			if n, err := strconv.Atoi(f); err != nil || n > 3 {
				t.Errorf("descriptors open in the command: %q, want only 0, 1, 2 (and ls's own 3)", out)
				return
			}
		}
	}
	t.Run("one-shot", func(t *testing.T) {
		stdout, stderr, code := e.in(t).run(nil, "ls", fds)
		if code != 0 {
			t.Fatalf("ls: exit %d: %s", code, stderr)
		}
		check(t, stdout)
	})
	t.Run("MCP", func(t *testing.T) {
		s := e.in(t).serve()
		_, out := s.call(t, map[string]any{"command": "ls", "args": []string{fds}})
		check(t, out.Stdout)
	})
}

// TestEscapeProcSys checks that /proc/sys is read-only inside, by its mount
// and not only by Landlock: a root caller's command passes the owner check
// on kernel.core_pattern, which would run a program of its choice as root
// on the host at the next crash.
func TestEscapeProcSys(t *testing.T) {
	linuxOnly(t, "/proc/sys")
	e := newEnv(t)
	t.Run("mounted read-only", func(t *testing.T) {
		e := e.in(t)
		out := e.mustAllow(nil, `cat /proc/self/mountinfo`)
		var opts []string
		for _, line := range strings.Split(out, "\n") {
			// id parent major:minor root mount-point options ...
			if f := strings.Fields(line); len(f) > 5 && f[4] == "/proc/sys" {
				opts = append(opts, f[5])
			}
		}
		if len(opts) == 0 {
			t.Fatalf("no mount at /proc/sys:\n%s", out)
		}
		if top := opts[len(opts)-1]; !slices.Contains(strings.Split(top, ","), "ro") {
			t.Errorf("/proc/sys is mounted %q, want ro", top)
		}
	})
	for _, tt := range []struct{ name, script string }{
		{"core_pattern", `echo '|/bin/true' > /proc/sys/kernel/core_pattern`},
		{"modprobe", `echo /bin/true > /proc/sys/kernel/modprobe`},
		{"pid_max of the sandbox's pid namespace", `echo 4000000 > /proc/sys/kernel/pid_max`},
		{"a sysctl of the sandbox's network namespace", `echo 1 > /proc/sys/net/ipv4/ip_forward`},
		{"sysrq-trigger", `test -e /proc/sysrq-trigger || exit 1; echo h > /proc/sysrq-trigger`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e.in(t).mustDeny(nil, tt.script)
		})
	}
	t.Run("readable", func(t *testing.T) {
		e := e.in(t)
		if out := e.mustAllow(nil, `cat /proc/sys/kernel/pid_max /proc/sys/kernel/osrelease`); len(strings.Fields(out)) != 2 {
			t.Errorf("reading /proc/sys gave %q", out)
		}
	})
}

// Pid 1 of the sandbox is the helper, run as the command's own host uid.
// Where Landlock scopes signals (ABI 6+) the command cannot signal it at
// all; below that it can, and every signal it may send must leave the
// helper standing: the call ends as the command does, with nothing of the
// helper on its output, and the next call runs. (The Go helper drops what
// kill sends; seccomp refuses a siginfo of the sender's own aimed at it.) The forwarded signals
// (INT, TERM, HUP, QUIT) come back to the command, which ignores them here.
func TestEscapeSignalsAtHelper(t *testing.T) {
	linuxOnly(t, "pid 1 of the sandbox is its helper")
	e := newEnv(t)
	script := `trap '' HUP INT QUIT TERM
for s in $(seq 1 31) $(seq 34 64); do kill -$s 1 2>/dev/null; done
i=0; while [ $i -lt 200 ]; do kill -CHLD 1 2>/dev/null; i=$((i+1)); done
sleep 0.3; echo alive`
	check := func(t *testing.T, stdout, stderr string, code int) {
		t.Helper()
		if code != 0 || stdout != "alive\n" || strings.Contains(stderr, "goroutine") || strings.Contains(stderr, "SIG") {
			if len(stderr) > 400 {
				stderr = stderr[:400] + "..."
			}
			t.Errorf("after signalling pid 1: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	}
	t.Run("one-shot", func(t *testing.T) {
		e := e.in(t)
		stdout, stderr, code := e.run(nil, "sh", "-c", script)
		check(t, stdout, stderr, code)
	})
	// A SIGSEGV or SIGBUS whose siginfo says it is a fault's, queued by a
	// process (si_code SI_QUEUE), in every way a sender may choose its
	// siginfo.
	t.Run("siginfo", func(t *testing.T) {
		e := e.in(t)
		stdout, stderr, code := e.run(nil, "sh", "-c", `for how in rt_sigqueueinfo rt_tgsigqueueinfo pidfd procfd; do
for sig in 11 7 4 8 5; do "$1" sigqueue $how 1 $sig >/dev/null; done; done; sleep 0.3; echo alive`, "sh", e.attackPath())
		check(t, stdout, stderr, code)
	})
	// The command's process group: signalled whole (kill(0, ...)), it
	// must hold nothing of the sandbox's but the command's own processes
	// and pid 1.
	t.Run("process group", func(t *testing.T) {
		e := e.in(t)
		stdout, stderr, code := e.run(nil, "sh", "-c", `trap '' USR1 USR2 ALRM VTALRM PIPE HUP INT QUIT TERM
for s in USR1 USR2 ALRM VTALRM PIPE HUP INT QUIT TERM; do kill -$s 0; done; sleep 0.3; echo alive`)
		check(t, stdout, stderr, code)
	})
	t.Run("server", func(t *testing.T) {
		e := e.in(t)
		s := e.serve()
		for i := 0; i < 2; i++ { // and the server serves on
			_, out := s.sh(t, script)
			check(t, out.Stdout, out.Stderr+out.Error, out.ExitCode)
		}
	})
}
