// Package sandbox runs one program under the limits a [policy.Policy] sets,
// and says what this machine can enforce ([Probe]).
//
// It never imports the MCP SDK; the server package turns a [Result] into a
// tool result. It imports policy, gitguard, dbus (to ask systemd for a
// scope), netproxy (the proxy of each call), cstage (the exec stage in C,
// where one was built), the standard library and x/sys.
//
// # Threat model
//
// The program, and everything it starts, is hostile: it was chosen by a model
// that may have read a prompt injection. It must not write outside the
// workspace and the --writable paths, read the caller's home, credentials or
// the server's environment, reach the network but through the server's proxy
// to the hosts --allow-net lists (or, with --host-network, the host's
// network, where it still reaches no host unix socket), see or signal
// processes outside its own call, change what the sandbox enforces (mounts,
// Landlock, seccomp), or leave anything running after its call. It may use
// the CPU, memory and disk within the limits, read the rest of the host
// filesystem, and talk to its own loopback.
//
// Nothing it leaves may run in the user's own git later, outside any
// sandbox: [gitguard] says what of every repository in the writable roots
// is read-only for a call (mounted so by plan.go's carve-outs), and judges,
// once every process of a call is gone and before its result is returned,
// the repositories the call made or changed (git_linux.go, run_linux.go).
// Nothing it leaves runs with more rights later either: the setuid and
// setgid bits and file capabilities are refused (seccomp_linux.go).
//
// A root caller's command does not run as root on the host, which without
// capabilities would still pass every owner check on root's files: it runs
// as an unprivileged uid of its own, and reaches the granted paths, and only
// those, as root, through idmapped mounts (rootcaller_linux.go).
//
// What is hidden is hidden by the filesystem object: wherever another mount
// shows it too (alias.go).
//
// # Platform support
//
// Linux (amd64, arm64): user, mount, pid, net, ipc, uts and cgroup
// namespaces built by a re-executed helper; the command runs in a nested user
// namespace as the caller (a root caller's as another uid), with no
// capabilities, under Landlock (ABI 1+, where the kernel has it) and a
// seccomp filter. The server's
// half: run_linux.go (one call), helperproc_linux.go (a helper as the server
// starts and feeds it), spare_linux.go (the helper kept for the next call).
// Both halves: network_linux.go (the proxy's listening socket, made in the
// sandbox's network namespace and handed to the server, whose proxy dials
// from the host). The re-executions' half: protocol_linux.go (the spec and
// the reports between them), helper_linux.go (pid 1 of the sandbox),
// exec_linux.go (the last restrictions, then exec), tasks_linux.go
// (counting the command's processes where nothing else reports the limit).
// Where the release tooling built them, the helper and the exec stage are
// in C instead, each from a sealed memfd, driven by blocks of precomputed
// system calls (chelper_linux.go, cstage_linux.go, cstage/HELPER-PLAN.md);
// the Go helper always runs the Go exec stage.
// Limits are held per command by a delegated cgroup v2 where the server has
// one or systemd gives it one ([JoinScope], systemd_linux.go), else by
// rlimits, which count less (memory.go).
//
// Without namespaces, on the flag that asks for it (--without-namespaces,
// where the machine refuses them): Landlock keeps writes to the writable
// paths and reads to an allow-list of the system's trees, seccomp holds
// what the namespaces did (no internet or unix sockets, below Landlock ABI
// 9 and 3 no named unix sockets or truncate(2)), rlimits the limits, and
// the helper, the command's subreaper, kills what a call leaves
// (reduced_linux.go, reducedhelper_linux.go). What that cannot keep
// ([policy.Unkept]) the user gives up by name, or the server refuses to
// start; a root caller is refused.
//
// macOS (arm64, amd64): each command runs under /usr/bin/sandbox-exec with
// a Seatbelt profile generated for the call (seatbelt.go, no build tag, so
// Linux tests it; seatbelt_base.sbpl), every path a parameter, never
// profile text: deny by default, reads but of the hidden home, the shared
// temporary directories and credentials, writes only below the writable
// roots but their carve-outs (read-only grants and git's protections, with
// unlink and rename denied on each directory above them), no network. The
// server's half is run_darwin.go; the first process inside the sandbox is
// this binary again, the reaper (reaper_darwin.go), which sets rlimits,
// starts the command in a process group of its own, and kills every
// process of its sandbox when the call ends or the server is gone: only a
// process of the same sandbox may signal them, which tells them apart from
// the user's own without a pid namespace. A command that kills the reaper
// first leaves to the server only what it can still tell apart: its
// process group and session. Limits macOS cannot hold are refused
// (seatbelt_platform.go).
//
// Every other OS: [ErrUnsupported]. What an OS provides is one platform
// (platform.go); run_other.go is the one for every OS without a sandbox.
//
// # What is refused
//
// Nothing fails open: a kernel without user namespaces (or whose
// namespaces give no capabilities) unless --without-namespaces asks to run
// without them, an architecture without a reviewed seccomp filter, a Mac
// where sandbox-exec cannot apply a profile (the server itself sandboxed),
// or a policy that needs a mechanism the machine lacks (on macOS: --memory,
// --tmp-size and --cpus) is refused by [Capabilities.Refusal] before the
// server starts, with the cause and the fix. A Linux kernel without
// Landlock is not refused: the mounts hold the filesystem policy, and
// [Capabilities.MissingLayer] says, in --check and the tool's description,
// that the second layer is missing. Refused too: a root caller on macOS or
// without namespaces; for a root caller on Linux, a grant its commands
// could not reach as their own uid (a writable path on a filesystem without
// idmapped mounts, a path below a directory other users may not enter), and
// --host-network where Landlock cannot scope abstract
// unix sockets (below ABI 6), which belong to the network namespace.
package sandbox
