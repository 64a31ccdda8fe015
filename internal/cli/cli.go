package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"os/user"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/nanosandbox/nanosandbox-mcp/internal/policy"
	"github.com/nanosandbox/nanosandbox-mcp/internal/sandbox"
	"github.com/nanosandbox/nanosandbox-mcp/internal/server"
)

const name = "nanosandbox-mcp"

// Exit codes. A command run with "-- CMD" exits with its own status instead,
// or 128+N when signal N ended it, and the shell's 126/127 when it could not
// start.
const (
	exitOK       = 0
	exitRuntime  = 1   // the machine cannot hold the policy, or serving failed
	exitUsage    = 2   // a bad flag or argument
	exitTimedOut = 124 // the one-shot command hit --timeout (as timeout(1))
	exitSetup    = 125 // the sandbox could not be built for the one-shot command
	exitNoExec   = 126
	exitNotFound = 127
)

// usageError is a bad command line: exit 2 with an error and a hint.
type usageError struct{ msg, hint string }

func (e *usageError) Error() string { return e.msg }

// Explain returns the message and the hint.
func (e *usageError) Explain() (msg, hint string) { return e.msg, e.hint }

var _ policy.Hinted = (*usageError)(nil)

type flags struct {
	workspace     string
	readOnly      []string
	writable      []string
	env           []string
	timeout       time.Duration
	maxOutput     sizeValue
	maxConcurrent int
	memory        sizeValue
	maxProcesses  int
	maxFileSize   sizeValue
	tmpSize       sizeValue
	cpuTime       time.Duration
	cpus          float64
	stayInCgroup  bool
	noHomeTools   bool
	hostGit       string
	allowNet      []string
	hostNetwork   bool
	// withoutNamespaces asks for the sandbox without namespaces;
	// unprotected names what it gives up.
	withoutNamespaces bool
	unprotected       []string
	// processCap says why commands get fewer processes than
	// --max-processes asks, or is empty (set by buildPolicy).
	processCap string
	check      bool
	json       bool
	logFile    string
	version    bool
	help       bool
	set        *pflag.FlagSet
	// typed holds each flag's value as given on the command line (the
	// last one for a flag given more than once), for messages.
	typed map[string]string
}

func newFlags() *flags {
	f := &flags{set: pflag.NewFlagSet(name, pflag.ContinueOnError), typed: map[string]string{}}
	fs := f.set
	fs.SortFlags = false
	fs.SetOutput(io.Discard)
	fs.StringVar(&f.workspace, "workspace", "", "working directory of every command, and the only place it can write (required)")
	fs.StringArrayVar(&f.readOnly, "read-only", nil, "also let commands read PATH, shown again if hidden; inside a writable path it is read-only again (repeatable)")
	fs.StringArrayVar(&f.writable, "writable", nil, "also let commands read and write PATH (repeatable)")
	fs.StringArrayVar(&f.env, "env", nil, "pass variable NAME (its value here) or NAME=VALUE to commands (repeatable)")
	f.timeout = policy.DefaultTimeout
	fs.Var((*secondsOrDuration)(&f.timeout), "timeout", "wall-clock limit of one command (a duration, or plain seconds); its whole process tree is killed; 0 for none")
	f.maxOutput = sizeValue(policy.DefaultMaxOutputBytes)
	fs.Var(&f.maxOutput, "max-output", "output returned per stream (stdout, stderr); the head and tail are kept")
	fs.IntVar(&f.maxConcurrent, "max-concurrent", policy.DefaultMaxConcurrent, "commands running at once; more calls wait")
	f.memory = sizeValue(defaultMemoryBytes)
	fs.Var(&f.memory, "memory", "memory of one command (cgroup v2), else of each of its processes (RLIMIT_DATA); 0 for none (Linux only: none on macOS)")
	fs.IntVar(&f.maxProcesses, "max-processes", policy.DefaultMaxProcesses, "processes and threads of one command at once, kept below your own ulimit -u; 0 for no other limit (a root caller without cgroup v2 needs Linux 6.14+)")
	f.maxFileSize = sizeValue(policy.DefaultMaxFileBytes)
	fs.Var(&f.maxFileSize, "max-file-size", "largest file a command may write; 0 for none")
	f.tmpSize = sizeValue(defaultTmpBytes)
	fs.Var(&f.tmpSize, "tmp-size", "size of each private /tmp, /var/tmp, /run and /dev/shm; 0 for the kernel's default, half of RAM (Linux only: none on macOS)")
	fs.DurationVar(&f.cpuTime, "cpu-time", policy.DefaultCPUTime, "CPU time of each process of a command; 0 for none")
	fs.Float64Var(&f.cpus, "cpus", 0, "CPU bandwidth of one command, in CPUs (1.5 = one and a half); 0 for none (needs a delegated cgroup v2)")
	fs.StringVar(&f.hostGit, "host-git", "", "the git the server itself runs on the host, to read your identity and judge repositories, where yours is not in the system's places (/usr, Homebrew on macOS): a path commands cannot write")
	fs.BoolVar(&f.noHomeTools, "no-home-tools", false, "keep the home's tool directories hidden too; by default those on PATH (pyenv, nvm, rustup, ~/.local/bin...) are shown read-only, credentials inside still masked")
	fs.BoolVar(&f.stayInCgroup, "stay-in-cgroup", false, "keep the server in the cgroup it was started in, rather than ask systemd for a delegated cgroup v2 scope of its own (without one, memory is limited per process)")
	fs.StringArrayVar(&f.allowNet, "allow-net", nil, "let commands reach HOST[:PORT] over HTTP(S) through the server's proxy; without a port, 80 and 443; *.example.com for every name below it; presets "+strings.Join(policy.PresetNames(), ", ")+" (repeatable)")
	fs.BoolVar(&f.hostNetwork, "host-network", false, "share the host's network with commands: every host and port, the host's loopback included (host unix sockets stay hidden)")
	fs.BoolVar(&f.withoutNamespaces, "without-namespaces", false, "run commands without namespaces, where the machine refuses them (Ubuntu's AppArmor restriction, containers): under Landlock, seccomp and rlimits only, and weaker; what that cannot keep is refused unless given up with --without-protection (Linux: Landlock ABI 1+)")
	fs.StringSliceVar(&f.unprotected, "without-protection", nil, "with --without-namespaces, give up this protection, which it cannot keep: "+strings.Join(policy.ProtectionNames(), ", ")+" (repeatable, or comma-separated)")
	fs.BoolVar(&f.check, "check", false, "say what this machine enforces and whether the policy holds, then exit (0 only if it holds)")
	fs.BoolVar(&f.json, "json", false, "with --check: print it as one JSON object, for scripts")
	fs.StringVar(&f.logFile, "log-file", "", "append one JSON line per call to this `FILE` (what ran and how it ended; never its input or output): a regular file outside the workspace, the --writable paths and the server's state, with no symbolic link into them on its way")
	fs.BoolVar(&f.version, "version", false, "print the version and exit")
	fs.BoolVarP(&f.help, "help", "h", false, "print this help and exit")
	return f
}

// sizeValue is a pflag value read with policy.ParseSize.
type sizeValue int64

func (s *sizeValue) String() string { return policy.FormatSize(int64(*s)) }
func (s *sizeValue) Type() string   { return "SIZE" }
func (s *sizeValue) Set(v string) error {
	n, err := policy.ParseSize(v)
	if err != nil {
		return err
	}
	*s = sizeValue(n)
	return nil
}

// setFlag sets one flag from the command line, keeping the value as typed.
// A flag that needs a value and is given "--" took the separator for it:
// the value was forgotten.
func (f *flags) setFlag(fl *pflag.Flag, value string) error {
	if value == "--" && fl.NoOptDefVal == "" {
		return &usageError{
			msg:  fmt.Sprintf("--%s needs a value, and got the -- that ends the options", fl.Name),
			hint: fmt.Sprintf("give it one: --%s VALUE ... -- CMD [ARG...]", fl.Name),
		}
	}
	kind := fl.Value.Type()
	if _, twice := f.typed[fl.Name]; twice && !strings.HasSuffix(kind, "Array") && !strings.HasSuffix(kind, "Slice") && kind != "bool" {
		return &usageError{
			msg:  fmt.Sprintf("--%s is given twice (%q, then %q)", fl.Name, f.typed[fl.Name], value),
			hint: fmt.Sprintf("give --%s once", fl.Name),
		}
	}
	if value == "" && (fl.Name == "read-only" || fl.Name == "writable" || fl.Name == "workspace") {
		return &usageError{
			msg:  fmt.Sprintf("--%s is given an empty path", fl.Name),
			hint: fmt.Sprintf("name a directory or file: --%s PATH", fl.Name),
		}
	}
	f.typed[fl.Name] = value
	return f.set.Set(fl.Name, value)
}

// Main runs the command line args and returns the exit code.
func Main(ctx context.Context, version string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "homes" {
		return homesMain(args[1:], stdout, stderr)
	}
	f := newFlags()
	err := f.set.ParseAll(args, f.setFlag)
	var ue *usageError
	if errors.As(err, &ue) {
		return fail(stderr, ue)
	}
	if err != nil {
		if ue := renamed(err); ue != nil {
			return fail(stderr, ue)
		}
		return fail(stderr, &usageError{msg: err.Error(), hint: "run " + name + " --help for every option"})
	}
	switch {
	case f.help:
		fmt.Fprint(stdout, usage(f))
		return exitOK
	case f.version:
		fmt.Fprintf(stdout, "%s %s\n", name, version)
		return exitOK
	}
	// Before anything is probed: a bad value is the quickest thing to say.
	if _, err := policy.ParseNetwork(f.allowNet, f.hostNetwork); err != nil {
		return fail(stderr, err)
	}
	var command []string
	if dash := f.set.ArgsLenAtDash(); dash >= 0 {
		if dash > 0 {
			return fail(stderr, &usageError{msg: fmt.Sprintf("unexpected argument %q", f.set.Args()[0]), hint: "to run one command, put it after --: " + name + " --workspace DIR -- CMD [ARG...]"})
		}
		command = f.set.Args()
		if len(command) == 0 {
			return fail(stderr, &usageError{msg: "no command after --", hint: "name the command to run: " + name + " --workspace DIR -- CMD [ARG...]"})
		}
	} else if len(f.set.Args()) > 0 {
		return fail(stderr, &usageError{msg: fmt.Sprintf("unexpected argument %q", f.set.Args()[0]), hint: "to run one command, put it after --: " + name + " --workspace DIR -- CMD [ARG...]"})
	}
	if os.Getenv("GOMAXPROCS") == "" {
		// One goroutine at a time, one command or a server: nothing in
		// this process computes in parallel (the git guard's walks, the
		// waits and the relays are system calls, which run beside it all
		// the same; the sandboxes are other processes), and a second
		// processor only makes the runtime wake idle threads to look for
		// work: about 0.25 ms of a 10 ms -- true, 1.6 ms of a server's
		// 7.75 ms paced call (bench/README.md, "The server on one
		// processor"). Whoever sets GOMAXPROCS has chosen.
		runtime.GOMAXPROCS(1)
	}
	if f.json && !f.check {
		return fail(stderr, &usageError{msg: "--json goes with --check", hint: "run " + name + " --check --json [--workspace DIR]"})
	}
	if len(f.unprotected) > 0 && !f.withoutNamespaces {
		// Before the probe, whose refusal would hide it on a machine that
		// refuses namespaces (policy.New says the same).
		return fail(stderr, &policy.FlagError{Flag: "--without-protection", Value: f.unprotected[0], Err: "goes with --without-namespaces: with namespaces every protection holds", Hint: "drop it, or add --without-namespaces"})
	}
	if f.check && command != nil {
		return fail(stderr, &usageError{msg: "--check runs no command", hint: "drop --check, or the command after --"})
	}

	if f.check {
		return check(f, delegate(f, probe(f, false)), stdout, stderr)
	}
	// Serving proves every layer once at start; a one-shot command proves
	// them by running, which saves a probe and a dry run.
	caps := delegate(f, probe(f, command != nil))
	if r := caps.Refusal(); r != nil {
		return fail(stderr, r)
	}
	pol, err := buildPolicy(f, command != nil)
	if err != nil {
		return fail(stderr, err)
	}
	if err := writeGitSettings(pol); err != nil {
		slog.Warn("your global git settings were not carried into the private home: " + err.Error())
	}
	audit, closeAudit, err := openAudit(f.logFile, pol)
	if err != nil {
		pol.Discard()
		return fail(stderr, err)
	}
	defer closeAudit()
	sb, err := sandbox.New(pol, caps)
	if err != nil {
		pol.Discard()
		return fail(stderr, err)
	}
	if command == nil {
		if err := sb.DryRun(); err != nil {
			pol.Discard()
			return fail(stderr, err)
		}
	}
	if command != nil {
		return runOnce(ctx, sb, pol, audit, command, stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "%s: %s\n", name, summary(pol))
	return serve(ctx, sb, pol, version, audit, stdin, stdout, stderr)
}

// probe finds what this machine can enforce (quickly, for a one-shot
// command: see sandbox.QuickProbe), for the mode the flags ask for.
func probe(f *flags, quick bool) sandbox.Capabilities {
	var caps sandbox.Capabilities
	if quick {
		caps = sandbox.QuickProbe()
	} else {
		caps = sandbox.Probe()
	}
	caps.WithoutNamespaces = f.withoutNamespaces
	return caps
}

// delegate gets the server a delegated cgroup v2 from systemd, where it has
// none and a limit would be held by one, unless --stay-in-cgroup.
func delegate(f *flags, caps sandbox.Capabilities) sandbox.Capabilities {
	switch {
	case f.memory == 0 && f.maxProcesses == 0 && f.cpus == 0:
		return caps
	case f.stayInCgroup:
		if caps.Cgroup == "" {
			caps.CgroupWhy += "; --stay-in-cgroup: systemd was not asked for a scope"
		}
		return caps
	}
	return sandbox.JoinScope(caps)
}

// buildPolicy turns the flags into a checked policy.
func buildPolicy(f *flags, oneShot bool) (*policy.Policy, error) {
	o := policy.Options{
		Workspace:      f.workspace,
		ReadOnly:       f.readOnly,
		Writable:       f.writable,
		Env:            f.env,
		AllowNet:       f.allowNet,
		HostNetwork:    f.hostNetwork,
		Timeout:        f.timeout,
		NoTimeout:      f.timeout == 0 || oneShot && !f.set.Changed("timeout"),
		MaxOutputBytes: int(f.maxOutput),
		MaxConcurrent:  f.maxConcurrent,
		Limits: policy.Limits{
			MemoryBytes:  int64(f.memory),
			MaxProcesses: f.maxProcesses,
			MaxFileBytes: int64(f.maxFileSize),
			TmpBytes:     int64(f.tmpSize),
			CPUTime:      f.cpuTime,
			CPUs:         f.cpus,
		},
		HostEnv:           os.Environ(),
		NoHomeTools:       f.noHomeTools,
		HostGit:           f.hostGit,
		WithoutNamespaces: f.withoutNamespaces,
		Unprotected:       f.unprotected,
	}
	if f.timeout < 0 {
		o.NoTimeout = false
	}
	if int64(f.maxOutput) > policy.MaxMaxOutputBytes {
		o.MaxOutputBytes = policy.MaxMaxOutputBytes + 1 // reported as out of range
	}
	if f.maxConcurrent == 0 {
		o.MaxConcurrent = -1 // reported as out of range
	}
	if err := capProcesses(f, &o.Limits); err != nil {
		return nil, err
	}
	caller(&o)
	p, err := policy.New(o)
	// A value is refused as it was typed, not as it was read (a size in
	// other units, a number in another base, an internal stand-in).
	var fe *policy.FlagError
	if errors.As(err, &fe) {
		if v, ok := f.typed[strings.TrimPrefix(fe.Flag, "--")]; ok && scalarFlags[fe.Flag] {
			fe.Value = v
		}
	}
	return p, err
}

// scalarFlags take one value each, which policy.New checks after reading
// it: its errors quote the value read, which these replace with the value
// typed.
var scalarFlags = map[string]bool{
	"--timeout": true, "--max-output": true, "--max-concurrent": true, "--memory": true,
	"--max-processes": true, "--max-file-size": true, "--tmp-size": true, "--cpu-time": true, "--cpus": true,
}

// caller fills in who runs the server: login name, home, git identity and
// the private homes' place.
func caller(o *policy.Options) {
	if u, err := user.Current(); err == nil {
		o.User = u.Username
		o.Home = u.HomeDir
		o.AccountHome = u.HomeDir
	}
	if h, err := os.UserHomeDir(); err == nil && h != "" {
		o.Home = h
	}
	if c, err := os.UserCacheDir(); err == nil {
		o.StateDir = filepath.Join(c, name)
	}
	o.GitIdentity = gitIdentity // once the paths commands can write are known
	o.GlobalHooksPath = globalHooksPath
}

// capProcesses keeps the process limit of a command below the caller's
// RLIMIT_NPROC, which the sandbox's processes count against with the
// server's own: one command must not leave the server unable to make a
// thread or start the next call's sandbox. A lower limit is stricter, never
// weaker, so it applies without asking; --check says so.
func capProcesses(f *flags, l *policy.Limits) error {
	concurrent := f.maxConcurrent
	if concurrent < 1 || concurrent > policy.MaxMaxConcurrent {
		concurrent = policy.DefaultMaxConcurrent // refused later
	}
	limit, left := sandbox.ProcessesLeft(concurrent)
	switch {
	case limit == 0 || l.MaxProcesses > 0 && l.MaxProcesses <= left:
		return nil
	case left < 8:
		return &sandbox.Refusal{
			Cause: fmt.Sprintf("your process limit (RLIMIT_NPROC, ulimit -u) is %d, and the server keeps %d of it for itself: that leaves commands too few", limit, limit-left),
			Fix:   "raise it (ulimit -u 4096 in the shell that starts the server), or lower --max-concurrent",
		}
	}
	f.processCap = fmt.Sprintf("processes are capped at %d: your process limit (RLIMIT_NPROC, ulimit -u) is %d, and the server keeps %d of it for itself", left, limit, limit-left)
	l.MaxProcesses = left
	return nil
}

// fail prints err for the person launching the server, with its hint
// (policy.Hinted) or else a pointer to --check, and returns its exit code:
// 2 for a bad command line or flag value, 1 otherwise.
func fail(stderr io.Writer, err error) int {
	msg, hint := err.Error(), "run "+name+" --check --workspace DIR to see which layer fails"
	var h policy.Hinted
	if errors.As(err, &h) {
		msg, hint = h.Explain()
	}
	fmt.Fprintf(stderr, "%s: error: %s\n%s: hint: %s\n", name, msg, name, hint)
	var ue *usageError
	var fe *policy.FlagError
	if errors.As(err, &ue) || errors.As(err, &fe) {
		return exitUsage
	}
	return exitRuntime
}

// runOnce runs one command in the sandbox with the terminal's stdio and
// exits with its status. Signals to this process are passed on to it.
func runOnce(ctx context.Context, sb *sandbox.Sandbox, pol *policy.Policy, audit *server.Audit, command []string, stdin io.Reader, stdout, stderr io.Writer) int {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	defer signal.Stop(sigs)
	restore := saveTerminals(stdin, stdout, stderr)
	res, err := sb.Run(ctx, &sandbox.Command{
		Path:    command[0],
		Args:    command[1:],
		Stdin:   stdin,
		Stdout:  stdout,
		Stderr:  stderr,
		Timeout: pol.Timeout,
		Signals: sigs,
	})
	restore() // before anything is written: the command may have left it raw
	for _, n := range res.Notes {
		fmt.Fprintf(stderr, "%s: note: %s\n", name, n)
	}
	entry := server.AuditEntry{Command: command[0], Args: command[1:], ExitCode: res.ExitCode, Signal: res.Signal,
		TimedOut: res.TimedOut, DurationMS: res.Duration.Milliseconds(), Limit: res.Limit, Notes: res.Notes}
	if err != nil {
		entry.ExitCode, entry.Error = -1, err.Error()
	}
	audit.Record(entry)
	var se *sandbox.StartError
	var setup *sandbox.SetupError
	switch {
	case errors.As(err, &se):
		fmt.Fprintf(stderr, "%s: error: %s\n", name, se)
		if se.NotFound {
			return exitNotFound
		}
		return exitNoExec
	case errors.As(err, &setup):
		hint := "run " + name + " --check --workspace DIR to see which layer fails"
		if setup.Fix != "" {
			s := *setup
			hint, s.Fix = setup.Fix, ""
			setup = &s
		}
		fmt.Fprintf(stderr, "%s: error: %s\n%s: hint: %s\n", name, setup, name, hint)
		return exitSetup
	case err != nil:
		fmt.Fprintf(stderr, "%s: error: %s\n", name, err)
		return exitSetup
	case res.TimedOut:
		fmt.Fprintf(stderr, "%s: error: timed out after %s; every process of the command was killed\n", name, pol.Timeout)
		if res.Limit != "" {
			fmt.Fprintf(stderr, "%s: note: it had reached the %s\n", name, res.Limit)
		}
		return exitTimedOut
	case res.Limit != "":
		fmt.Fprintf(stderr, "%s: error: stopped by the %s\n", name, res.Limit)
	}
	if res.SignalNo != 0 {
		return 128 + res.SignalNo
	}
	return res.ExitCode
}

// serve speaks MCP on stdin and stdout until stdin ends or a signal asks to
// stop, then kills every running command before returning.
func serve(ctx context.Context, sb *sandbox.Sandbox, pol *policy.Policy, version string, audit *server.Audit, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	sb.KeepSpare()
	defer sb.Close()
	if err := server.Serve(ctx, sb, pol, version, audit, stdin, stdout, stderr); err != nil {
		fmt.Fprintf(stderr, "%s: error: %s\n", name, err)
		return exitRuntime
	}
	return exitOK
}
