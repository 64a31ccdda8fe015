#!/usr/bin/env python3
"""Measures nanosandbox-mcp side by side with its peers and prints the table
as Markdown. bench/peers.sh installs the peers, builds the binary and runs
this; run it through that script.

Every figure is a median of runs that interleave ours and the peers run by
run (one-shot commands, paced calls) or block by block (calls back to back,
concurrent bursts), repeated --reps times with the order rotated; a cell
reads "median (lowest–highest median of one repetition)". Ratios are
ours / peer of the medians. CPU of an MCP server is its process tree's
(utime+stime+cutime+cstime from /proc, so children it has reaped count),
read before and after a block of calls.

--smoke runs one iteration of each of our own figures, no peer, and fails
only if one of them produced no number or our sandbox let a write out.
"""

import argparse
import datetime
import json
import os
import platform
import pwd
import re
import shutil
import signal
import statistics
import struct
import subprocess
import sys
import threading
import time
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mcpclient import Session  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
YES_1GIB = "yes | head -c 1073741824"
DD = ["dd", "if=/dev/zero", "of=/dev/null", "bs=1", "count=2000000"]
CONCURRENT = 50
# The one-shot row that runs our binary with --version: no sandbox, no command.
ALONE = "ours: the binary alone (--version)"
# The server whose workspace is a git repository (husky, 3,000 loose objects).
REPO = "ours (root), in a git repository"
PACE_S = 0.020
SETTLE_S = 0.2


def log(*args):
    print("peers:", *args, file=sys.stderr, flush=True)


def rotated(items, k):
    if not items:
        return []
    k %= len(items)
    return items[k:] + items[:k]


# -- results ------------------------------------------------------------------


class Results:
    """Samples per (figure, tool), kept per repetition; or a note saying why
    a tool has no number for a figure."""

    def __init__(self):
        self.samples = defaultdict(lambda: defaultdict(list))
        self.notes = {}

    def add(self, fig, tool, rep, value):
        if value is not None:
            self.samples[(fig, tool)][rep].append(value)

    def note(self, fig, tool, text):
        self.notes.setdefault((fig, tool), text)

    def median(self, fig, tool):
        reps = self.samples.get((fig, tool))
        if not reps:
            return None
        return statistics.median([v for vs in reps.values() for v in vs])

    def spread(self, fig, tool):
        reps = self.samples.get((fig, tool)) or {}
        meds = [statistics.median(vs) for vs in reps.values() if vs]
        return (min(meds), max(meds)) if len(meds) > 1 else None

    def cell(self, fig, tool, fmt):
        m = self.median(fig, tool)
        if m is None:
            return self.notes.get((fig, tool), "–")
        s = fmt(m)
        sp = self.spread(fig, tool)
        if sp and fmt(sp[0]) != fmt(sp[1]):
            s += " (%s–%s)" % (fmt(sp[0]), fmt(sp[1]))
        return s

    def ratio(self, fig, ours, peer):
        a, b = self.median(fig, ours), self.median(fig, peer)
        if a is None or b is None:
            return "–"
        if b == 0:
            return "∞" if a else "="
        return "%.2f×" % (a / b)


def f1(v):
    return "%.1f" % v


def f2(v):
    return "%.2f" % v


def f0(v):
    return "%.0f" % v


def mib(v):
    return "%.1f" % (v / (1 << 20))


def size(v):
    for unit, n in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= n:
            return "%.1f %s" % (v / n, unit)
    return "%d B" % v


# -- processes ----------------------------------------------------------------


def tree(pid):
    """pid and its descendants, pid first."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir("/proc/%d/task" % p):
                with open("/proc/%d/task/%s/children" % (p, tid)) as f:
                    todo.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return out


def threads(pid):
    try:
        return len(os.listdir("/proc/%d/task" % pid))
    except OSError:
        return 0


def stat_fields(pid):
    with open("/proc/%d/stat" % pid) as f:
        data = f.read()
    return data[data.rindex(")") + 2:].split()  # field n of proc(5) is [n-3]


def tree_cpu_s(pid):
    """CPU seconds of pid's process tree: each live process's own time and
    the time of the children it has reaped."""
    total = 0
    for p in tree(pid):
        try:
            f = stat_fields(p)
        except OSError:
            continue
        total += int(f[11]) + int(f[12]) + int(f[13]) + int(f[14])
    return total / CLK_TCK


def status_kb(pid, field):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_memory(pid):
    """(RSS bytes, PSS bytes, processes) summed over pid's tree, from smaps_rollup."""
    rss = pss = n = 0
    for p in tree(pid):
        try:
            with open("/proc/%d/smaps_rollup" % p) as f:
                for line in f:
                    if line.startswith("Rss:"):
                        rss += int(line.split()[1]) * 1024
                    elif line.startswith("Pss:"):
                        pss += int(line.split()[1]) * 1024
            n += 1
        except OSError:
            pass
    return rss, pss, n


class PeakSampler:
    """Samples the summed VmRSS of a process tree every 20 ms."""

    def __init__(self, pid):
        self.pid, self.peak, self._stop = pid, 0, threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)
        self._t.start()

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, sum(status_kb(p, "VmRSS") for p in tree(self.pid)))
            self._stop.wait(0.02)

    def stop(self):
        self._stop.set()
        self._t.join()
        return self.peak


def reset_peaks(pid):
    """Resets VmHWM of every process in pid's tree (clear_refs 5, Linux 4.0+)."""
    for p in tree(pid):
        try:
            with open("/proc/%d/clear_refs" % p, "w") as f:
                f.write("5")
        except OSError:
            pass


def forks_total():
    """Tasks created since boot on the whole machine (/proc/stat processes)."""
    with open("/proc/stat") as f:
        for line in f:
            if line.startswith("processes "):
                return int(line.split()[1])
    return 0


# -- perf -----------------------------------------------------------------------

PERF_EVENTS = ["-e", "task-clock,page-faults,context-switches",
               "-e", "task:task_newtask",
               "-e", "task:task_newtask", "--filter", "clone_flags & 0x10000",
               "-e", "sched:sched_process_exec"]
PERF_NAMES = ["cpu_ms", "faults", "cswitches", "tasks", "threads", "execs"]


def perf_works():
    if not shutil.which("perf"):
        return "perf is not installed"
    try:
        r = subprocess.run(["perf", "stat", "-x,", *PERF_EVENTS, "--", "true"],
                           capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as e:
        return "perf stat failed: %s" % e
    counts = parse_perf(r.stderr)
    if r.returncode != 0 or counts.get("execs") is None:
        return "perf stat cannot count here: %s" % (r.stderr.strip().splitlines() or ["?"])[-1]
    return None


def parse_perf(text):
    """perf stat -x, output, in PERF_EVENTS' order, as a dict of PERF_NAMES."""
    rows = [line.split(",") for line in text.splitlines() if line and not line.startswith("#") and "," in line]
    out = {}
    for name, row in zip(PERF_NAMES, rows):
        try:
            out[name] = float(row[0])
        except ValueError:  # <not counted>, <not supported>
            out[name] = None
    return out


class PerfAttach:
    """perf stat attached to running processes (and the tasks they create)
    until stop()."""

    def __init__(self, pids, path):
        self.path = path
        self.proc = subprocess.Popen(["perf", "stat", "-x,", "-o", path, "-p", ",".join(map(str, pids)), *PERF_EVENTS],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # Counting starts once perf has opened its counters, one per event and thread.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and self.proc.poll() is None:
            if self.counters() >= len(PERF_NAMES) * sum(threads(p) for p in pids):
                break
            time.sleep(0.02)
        time.sleep(0.05)

    def counters(self):
        n = 0
        try:
            for fd in os.listdir("/proc/%d/fd" % self.proc.pid):
                try:
                    n += os.readlink("/proc/%d/fd/%s" % (self.proc.pid, fd)) == "anon_inode:[perf_event]"
                except OSError:
                    pass
        except OSError:
            pass
        return n

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)
        with open(self.path) as f:
            return parse_perf(f.read())


# -- the tools ----------------------------------------------------------------


class OneShot:
    """A command-line sandbox: argv(cmd) is the command line that runs cmd in it."""

    def __init__(self, name, prefix, env=None, ws=None, shell=False, pass_fds=(), note="", alone=False):
        self.name, self.prefix, self.env, self.ws = name, prefix, env, ws
        self.shell = shell  # takes one shell string (srt -c) rather than argv
        self.pass_fds, self.note = pass_fds, note
        self.alone = alone  # runs prefix alone: no command, no sandbox

    def rewind(self):
        """Puts the files passed by descriptor back at their start: the
        descriptor is shared, and bwrap reads its filter to the end."""
        for fd in self.pass_fds:
            os.lseek(fd, 0, os.SEEK_SET)

    def argv(self, cmd):
        if self.alone:
            return list(self.prefix)
        if self.shell:
            return self.prefix + [" ".join(cmd)]
        return self.prefix + cmd


class Server:
    """An MCP server: how to start it, its tool, and that tool's arguments for
    a command given as argv (tools that take a shell string get it joined)."""

    def __init__(self, name, argv, tool, args_for, ws, shell=False, env=None, user=None, setup=None, check=None):
        self.name, self.argv, self.tool, self.args_for, self.ws = name, argv, tool, args_for, ws
        self.shell = shell  # its tool takes a shell string
        self.env, self.user, self.setup, self.check = env, user, setup, check

    def true_cmd(self):
        """true as a program: through a shell, /bin/true, or the shell would run its builtin."""
        return ["/bin/true"] if self.shell else ["true"]

    def shell_cmd(self, script):
        return [script] if self.shell else ["sh", "-c", script]

    def problem(self, reply):
        """What is wrong with a reply, or None."""
        return reply.error or (self.check(reply) if self.check else None)


def ours_check(reply):
    text = reply.text()
    return None if text.startswith("exit status 0") else "unexpected result: " + text[:200]


def codex_check(reply):
    try:
        code = json.loads(reply.text()).get("exit_code")
    except ValueError:
        return "unexpected result: " + reply.text()[:200]
    return None if code == 0 else "exit_code %s: %s" % (code, reply.text()[:200])


class Bench:
    def __init__(self, opt):
        self.opt = opt
        self.res = Results()
        self.scratch = opt.scratch
        self.notes = []  # (where, text) printed under the tables
        self.checks = []  # (tool, outside, inside)
        self.perf_problem = "not used (--no-perf)" if opt.no_perf else perf_works()
        if self.perf_problem:
            self.notes.append(("counts", "perf: %s; tasks come from /proc/stat's processes line (every fork on the "
                                         "machine: valid only on a quiet machine), execs are not counted, and CPU, faults "
                                         "and context switches of one-shot runs come from getrusage" % self.perf_problem))
        os.chmod(self.scratch, 0o755)  # the other user reaches its workspace through it
        self.mk("ws", "logs", "cache", "outside")
        os.chmod(self.path("outside"), 0o1777)
        self.user = None
        if opt.user:
            try:
                pw = pwd.getpwnam(opt.user)
                self.user = (pw.pw_uid, pw.pw_gid, pw.pw_dir, opt.user)
            except KeyError:
                self.notes.append(("users", "user %s does not exist: ours runs as root only" % opt.user))
        self.oneshots, self.servers, self.dds = [], [], []
        self.define_ours()
        if not opt.smoke:
            self.define_peers()

    # -- paths and environments

    def path(self, *parts):
        return os.path.join(self.scratch, *parts)

    def mk(self, *names):
        for n in names:
            os.makedirs(self.path(n), exist_ok=True)

    def workspace(self, name, owner=None):
        d = self.path("ws", name)
        os.makedirs(d, exist_ok=True)
        if owner:
            os.chown(d, owner[0], owner[1])
        return d

    def env_for(self, user=None, **extra):
        env = dict(os.environ)
        if user:
            uid, gid, home, name = user
            env.update(HOME=home, USER=name, LOGNAME=name)
            cache = self.path("cache", name)
            os.makedirs(cache, exist_ok=True)
            os.chown(cache, uid, gid)
        else:
            cache = self.path("cache", "root")
            os.makedirs(cache, exist_ok=True)
        env["XDG_CACHE_HOME"] = cache  # our private homes live here, removed with the scratch directory
        env.update(extra)
        return env

    # -- definitions

    def define_ours(self):
        b = self.opt.bin
        users = [("root", None)]
        if self.user:
            users.append((self.user[3], self.user))
        for name, user in users:
            label = "ours (%s)" % name
            ws = self.workspace(name, user)
            env = self.env_for(user)
            prefix = [b, "--workspace", ws, "--"]
            if user:
                prefix = ["setpriv", "--reuid=%d" % user[0], "--regid=%d" % user[1], "--clear-groups", "--"] + prefix
            note = "through setpriv (one more exec)" if user else ""
            self.oneshots.append(OneShot(label, prefix, env=env, ws=ws, note=note))
            self.servers.append(Server(label, [b, "--workspace", ws, "--max-concurrent", str(CONCURRENT), "--timeout", "5m"],
                                       "run_command", lambda cmd: {"command": cmd[0], "args": cmd[1:]}, ws,
                                       env=env, user=user, check=ours_check))
            self.dds.append(OneShot(label, prefix, env=env, ws=ws, note=note))
        # A workspace that is a repository as users have them: husky's tracked
        # core.hooksPath (an in-tree layout, whose refs and index git is asked
        # about) and 3,000 loose objects (checked at every call's end), its
        # files settled: what git protection costs a call there.
        repo = self.workspace("repo")
        if not os.path.exists(os.path.join(repo, ".git")) and shutil.which("git"):
            genv = dict(os.environ, GIT_AUTHOR_NAME="b", GIT_AUTHOR_EMAIL="b@example.com",
                        GIT_COMMITTER_NAME="b", GIT_COMMITTER_EMAIL="b@example.com", GIT_CONFIG_GLOBAL="/dev/null")
            os.makedirs(os.path.join(repo, ".husky"), exist_ok=True)
            with open(os.path.join(repo, ".husky", "pre-commit"), "w") as f:
                f.write("#!/bin/sh\nexit 0\n")
            os.chmod(os.path.join(repo, ".husky", "pre-commit"), 0o755)
            for i in range(3000):
                with open(os.path.join(repo, "f%d.txt" % i), "w") as f:
                    f.write("x%d\n" % i)
            for args in (["init", "-q", "-b", "main"], ["config", "core.hooksPath", ".husky"], ["config", "gc.auto", "0"],
                         ["add", "-A"], ["commit", "-q", "-m", "files"]):
                subprocess.run(["git", "-C", repo] + args, env=genv, check=True, stdout=subprocess.DEVNULL)
            time.sleep(1.1)
        if os.path.exists(os.path.join(repo, ".git")):
            self.servers.append(Server(REPO, [b, "--workspace", repo, "--max-concurrent", str(CONCURRENT), "--timeout", "5m"],
                                       "run_command", lambda cmd: {"command": cmd[0], "args": cmd[1:]}, repo,
                                       env=self.env_for(), check=ours_check))
        # The floor of a one-shot run while the command line is a Go program:
        # our binary starting, running its package initialisers and exiting.
        self.oneshots.append(OneShot(ALONE, [b, "--version"], env=self.env_for(), alone=True))
        self.oneshots.append(OneShot("bare true", [], env=self.env_for()))
        self.dds.insert(0, OneShot("direct", [], env=self.env_for()))

    def define_peers(self):
        ws = self.workspace("peers")
        env = self.env_for()
        bwrap = shutil.which("bwrap")
        if bwrap:
            # bench/startup.sh's policy: read-only root, private /tmp, /run and
            # /var/tmp, a writable workspace, fresh /proc and /dev, every namespace.
            bw = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--ro-bind", "/", "/",
                  "--tmpfs", "/tmp", "--tmpfs", "/run", "--tmpfs", "/var/tmp", "--bind", ws, ws,
                  "--proc", "/proc", "--dev", "/dev", "--chdir", ws]
            self.oneshots.append(OneShot("bwrap", bw + ["--"], env=env, ws=ws))
            self.dds.append(OneShot("bwrap", bw + ["--"], env=env, ws=ws))
            # An allow-all seccomp filter: one BPF instruction, RET SECCOMP_RET_ALLOW.
            bpf = self.path("allow-all.bpf")
            with open(bpf, "wb") as f:
                f.write(struct.pack("<HBBI", 0x06, 0, 0, 0x7FFF0000))
            fd = os.open(bpf, os.O_RDONLY)
            os.set_inheritable(fd, True)
            self.dds.append(OneShot("bwrap + seccomp", bw + ["--seccomp", str(fd), "--"], env=env, ws=ws, pass_fds=(fd,),
                                    note="a one-instruction allow-all filter"))
        else:
            self.notes.append(("bwrap", "bwrap is not installed: no bubblewrap figures"))
        fj = shutil.which("firejail")
        if fj:
            # /tmp and /var/tmp are firejail's own tmpfs, so the workspace lives elsewhere (peers.sh puts scratch in /home).
            fjp = [fj, "--quiet", "--noprofile", "--private-tmp", "--net=none", "--seccomp", "--caps.drop=all",
                   "--nonewprivs", "--read-only=/", "--read-write=" + ws, "--"]
            if ws.startswith(("/tmp/", "/var/tmp/")):
                self.notes.append(("firejail", "the workspace is under /tmp, which firejail replaces: "
                                               "its probe write inside fails"))
            self.oneshots.append(OneShot("firejail", fjp, env=env, ws=ws))
            self.dds.append(OneShot("firejail", fjp, env=env, ws=ws, note="its default seccomp filter"))
        else:
            self.notes.append(("firejail", "firejail is not installed: no firejail figures"))
        npm = self.opt.npm_prefix
        srt = os.path.join(npm, "node_modules", ".bin", "srt") if npm else None
        if srt and os.path.exists(srt):
            settings = self.path("srt-settings.json")
            with open(settings, "w") as f:
                json.dump({"network": {"allowedDomains": [], "deniedDomains": []},
                           "filesystem": {"denyRead": ["~"], "allowWrite": [ws], "denyWrite": []}}, f)
            # srt runs its -c string with bash: /bin/true, so that it execs a program as the others do.
            pre = [srt, "--settings", settings, "-c"]
            self.oneshots.append(OneShot("srt", pre, env=env, ws=ws, shell=True))
            self.dds.append(OneShot("srt", pre, env=env, ws=ws, shell=True, note="bwrap and its seccomp helper"))
        elif npm:
            self.notes.append(("srt", "@anthropic-ai/sandbox-runtime is not installed: no srt figures"))
        codex_js = os.path.join(npm or "", "node_modules", "@openai", "codex-shell-tool-mcp", "bin", "mcp-server.js")
        helper = self.opt.codex_linux_sandbox
        if npm and os.path.exists(codex_js) and helper:
            home = self.path("codex-home")
            os.makedirs(home, exist_ok=True)

            def codex_setup(s, ws=ws, helper=helper):
                # What the Codex client sends: workspace-write, no network, the Linux helper.
                _, r = s.request("codex/sandbox-state/update", {
                    "sandboxPolicy": {"type": "workspace-write", "writable_roots": [ws], "network_access": False,
                                      "exclude_tmpdir_env_var": False, "exclude_slash_tmp": False},
                    "codexLinuxSandboxExe": helper, "sandboxCwd": ws, "useLinuxSandboxBwrap": False})
                if r.error:
                    raise RuntimeError("codex/sandbox-state/update: " + r.error)

            self.servers.append(Server(
                "codex-shell-tool-mcp", ["node", codex_js], "shell",
                lambda cmd, ws=ws: {"command": " ".join(cmd), "workdir": ws, "login": False}, ws, shell=True,
                env=self.env_for(None, SHLVL="1", CODEX_HOME=home), setup=codex_setup, check=codex_check))
        elif npm:
            self.notes.append(("codex-shell-tool-mcp", "not installed (or no codex-linux-sandbox): no figures"))
        msc_js = os.path.join(npm or "", "node_modules", "mcp-server-commands", "build", "index.js")
        if npm and os.path.exists(msc_js):
            self.servers.append(Server(
                "mcp-server-commands", ["node", msc_js], "run_command",
                lambda cmd, ws=ws: {"command": " ".join(cmd), "workdir": ws}, ws, shell=True, env=env))

    # -- one-shot commands

    def spawn(self, tool, cmd, perf_out=None):
        """Runs cmd under tool with /dev/null for stdio: (wall s, exit code, rusage)."""
        tool.rewind()
        argv = tool.argv(cmd)
        if perf_out:
            argv = ["perf", "stat", "-x,", "-o", perf_out, *PERF_EVENTS, "--"] + argv
        null = [(os.POSIX_SPAWN_OPEN, fd, os.devnull, os.O_RDWR, 0) for fd in (0, 1, 2)]
        t0 = time.perf_counter()
        pid = os.posix_spawnp(argv[0], argv, tool.env, file_actions=null)
        _, status, ru = os.wait4(pid, 0)
        return time.perf_counter() - t0, os.waitstatus_to_exitcode(status), ru

    def why(self, tool, cmd):
        tool.rewind()
        r = subprocess.run(tool.argv(cmd), env=tool.env, capture_output=True, text=True, pass_fds=tool.pass_fds,
                           stdin=subprocess.DEVNULL, timeout=120)
        return "exit %d: %s" % (r.returncode, (r.stderr.strip() or r.stdout.strip())[-300:])

    def oneshot_true(self, tool):
        return ["true"] if tool.name.startswith("ours") else ["/bin/true"]

    def run_oneshots(self, rep, runs, failed):
        tools = [t for t in self.oneshots if t.name not in failed]
        for i in range(runs):
            for t in rotated(tools, i + rep):
                if t.name in failed:
                    continue
                wall, code, ru = self.spawn(t, self.oneshot_true(t))
                if code != 0:
                    failed[t.name] = self.why(t, self.oneshot_true(t))
                    log("%s failed: %s" % (t.name, failed[t.name]))
                    self.res.note("one.wall", t.name, "failed: " + failed[t.name])
                    continue
                self.res.add("one.wall", t.name, rep, wall * 1e3)
                self.res.add("one.cpu", t.name, rep, (ru.ru_utime + ru.ru_stime) * 1e3)

    def count_oneshots(self, rep, runs, failed):
        """Task, exec, CPU, fault and context-switch counts of one-shot runs
        under perf stat (separate runs: perf's own start is not in the walls)."""
        tools = [t for t in self.oneshots if t.name not in failed]
        out = self.path("logs", "perf-oneshot.txt")
        for i in range(runs):
            for t in rotated(tools, i + rep):
                if self.perf_problem:
                    before = forks_total()
                    _, code, ru = self.spawn(t, self.oneshot_true(t))
                    # Tasks: not the spawned process itself, which perf does not count either.
                    counts = {"tasks": forks_total() - before - 1, "cpu_ms": (ru.ru_utime + ru.ru_stime) * 1e3,
                              "faults": ru.ru_minflt + ru.ru_majflt, "cswitches": ru.ru_nvcsw + ru.ru_nivcsw}
                else:
                    _, code, _ = self.spawn(t, self.oneshot_true(t), perf_out=out)
                    with open(out) as f:
                        counts = parse_perf(f.read())
                if code != 0:
                    continue
                for k, v in counts.items():
                    self.res.add("one." + k, t.name, rep, v)

    def run_dd(self, rep, runs, failed):
        for i in range(runs):
            for t in rotated([t for t in self.dds if t.name not in failed], i + rep):
                self.dd_once(t, rep, failed)

    def dd_once(self, t, rep, failed):
        t.rewind()
        r = subprocess.run(t.argv(DD), env=dict(t.env, LC_ALL="C"), capture_output=True, text=True,
                           pass_fds=t.pass_fds, stdin=subprocess.DEVNULL, timeout=300)
        m = re.search(r"copied, ([0-9.e+-]+) s", r.stderr)
        if r.returncode != 0 or not m:
            failed[t.name] = "exit %d: %s" % (r.returncode, r.stderr.strip()[-300:])
            self.res.note("dd.s", t.name, "failed: " + failed[t.name])
            log("dd under %s failed: %s" % (t.name, failed[t.name]))
            return
        self.res.add("dd.s", t.name, rep, float(m.group(1)))

    # -- MCP

    def start(self, srv, rep):
        user = srv.user[:2] if srv.user else None
        with open(self.path("logs", "%s.%d.stderr" % (tag(srv.name), rep)), "w") as err:
            s = Session(srv.argv, env=srv.env, stderr=err, user=user)
        try:
            s.initialize()
            tools = s.tools()
            if srv.tool not in tools:
                raise RuntimeError("no tool %s (it lists %s)" % (srv.tool, tools))
            if srv.setup:
                srv.setup(s)
            self.call_true(srv, s)
        except Exception:
            s.close()
            raise
        return s

    def call_true(self, srv, s):
        """One call of true: its wall time, or an exception saying why it failed."""
        dt, reply = s.call(srv.tool, srv.args_for(srv.true_cmd()))
        problem = srv.problem(reply)
        if problem:
            raise RuntimeError(problem)
        return dt

    def measure_idle(self, rep, failed):
        """Each server alone (PSS splits the pages it shares with another
        process, such as a second server of the same binary): initialize,
        one call, 1 s idle, then its tree's RSS and PSS."""
        for srv in rotated(self.servers, rep):
            if srv.name in failed:
                continue
            try:
                s = self.start(srv, rep)
            except Exception as e:
                failed[srv.name] = str(e)[:300]
                self.res.note("mem.rss", srv.name, "failed: " + failed[srv.name])
                log("%s failed to start: %s" % (srv.name, e))
                continue
            try:
                time.sleep(1)
                rss, pss, n = tree_memory(s.pid)
                self.res.add("mem.rss", srv.name, rep, rss)
                self.res.add("mem.pss", srv.name, rep, pss)
                self.res.add("mem.procs", srv.name, rep, n)
            finally:
                s.close()

    def run_mcp(self, rep, calls, bursts, count_calls, failed):
        sessions = {}
        try:
            for srv in self.servers:
                if srv.name in failed:
                    continue
                try:
                    sessions[srv.name] = self.start(srv, rep)
                except Exception as e:
                    failed[srv.name] = str(e)[:300]
                    self.res.note("mcp.paced", srv.name, "failed: " + failed[srv.name])
                    log("%s failed to start: %s" % (srv.name, e))
            active = [srv for srv in self.servers if srv.name in sessions]

            def drop(srv, fig, e):
                failed[srv.name] = str(e)[:300]
                self.res.note(fig, srv.name, "failed: " + failed[srv.name])
                log("%s: %s failed: %s" % (srv.name, fig, e))
                active.remove(srv)

            if rep == 0:
                for srv in active:
                    self.probe_server(srv, sessions[srv.name])

            # Paced: one call every 20 ms at least, servers taking turns.
            cpu0 = {srv.name: tree_cpu_s(sessions[srv.name].pid) for srv in active}
            for i in range(calls):
                for srv in rotated(list(active), i + rep):
                    time.sleep(PACE_S)
                    try:
                        self.res.add("mcp.paced", srv.name, rep, self.call_true(srv, sessions[srv.name]) * 1e3)
                    except Exception as e:
                        drop(srv, "mcp.paced", e)
            time.sleep(SETTLE_S)
            for srv in active:
                self.res.add("mcp.paced_cpu", srv.name, rep,
                             (tree_cpu_s(sessions[srv.name].pid) - cpu0[srv.name]) * 1e3 / calls)

            # Back to back, one server at a time.
            for srv in rotated(list(active), rep):
                s = sessions[srv.name]
                time.sleep(SETTLE_S)
                c0 = tree_cpu_s(s.pid)
                try:
                    for _ in range(calls):
                        self.res.add("mcp.b2b", srv.name, rep, self.call_true(srv, s) * 1e3)
                except Exception as e:
                    drop(srv, "mcp.b2b", e)
                    continue
                time.sleep(SETTLE_S)
                self.res.add("mcp.b2b_cpu", srv.name, rep, (tree_cpu_s(s.pid) - c0) * 1e3 / calls)

            # 50 calls written at once.
            for b in range(bursts):
                for srv in rotated(list(active), b + rep):
                    s = sessions[srv.name]
                    time.sleep(SETTLE_S)
                    c0 = tree_cpu_s(s.pid)
                    try:
                        wall, replies = s.call_many(srv.tool, srv.args_for(srv.true_cmd()), CONCURRENT)
                        bad = [p for p in map(srv.problem, replies) if p]
                        if bad:
                            raise RuntimeError("%d of %d calls failed: %s" % (len(bad), CONCURRENT, bad[0]))
                    except Exception as e:
                        drop(srv, "mcp.conc", e)
                        continue
                    time.sleep(SETTLE_S)
                    cpu = (tree_cpu_s(s.pid) - c0) * 1e3
                    self.res.add("mcp.conc", srv.name, rep, wall)
                    self.res.add("mcp.conc_cpu", srv.name, rep, cpu)
                    self.res.add("mcp.conc_cpu_call", srv.name, rep, cpu / CONCURRENT)

            # Tasks and execs per call: a separate paced block under perf.
            for srv in rotated(list(active), rep):
                s = sessions[srv.name]
                time.sleep(SETTLE_S)
                try:
                    counts = self.count_calls(srv, s, count_calls)
                except Exception as e:
                    drop(srv, "mcp.tasks", e)
                    continue
                for k in ("tasks", "threads", "execs", "cpu_ms"):
                    if counts.get(k) is not None:
                        self.res.add("mcp." + k, srv.name, rep, counts[k] / count_calls)

            # 1 GiB of output through the tool.
            for srv in rotated(list(active), rep):
                s = sessions[srv.name]
                time.sleep(SETTLE_S)
                cmd = srv.shell_cmd(YES_1GIB)
                reset_peaks(s.pid)
                sampler = PeakSampler(s.pid)
                t0 = time.perf_counter()
                try:
                    dt, reply = s.call(srv.tool, srv.args_for(cmd), timeout=self.opt.yes_timeout)
                except Exception as e:
                    sampler.stop()
                    self.res.note("yes.outcome", srv.name, "no reply in %.0f s: %s" % (time.perf_counter() - t0, e))
                    log("%s: 1 GiB call: %s" % (srv.name, e))
                    continue
                peak = sampler.stop()
                self.res.add("yes.wall", srv.name, rep, dt)
                self.res.add("yes.peak", srv.name, rep, peak)
                self.res.add("yes.hwm", srv.name, rep, status_kb(s.pid, "VmHWM"))
                self.res.add("yes.text", srv.name, rep, reply.text_bytes())
                problem = srv.problem(reply)
                self.res.note("yes.outcome", srv.name, ("error result: " + problem.splitlines()[0][:100]) if problem else "ok")
        finally:
            for s in sessions.values():
                s.close()

    def count_calls(self, srv, s, n):
        if self.perf_problem:
            before = forks_total()
            for _ in range(n):
                time.sleep(PACE_S)
                self.call_true(srv, s)
            time.sleep(SETTLE_S)
            return {"tasks": forks_total() - before}
        perf = PerfAttach(tree(s.pid), self.path("logs", "perf-mcp.txt"))
        try:
            for _ in range(n):
                time.sleep(PACE_S)
                self.call_true(srv, s)
            time.sleep(SETTLE_S)
        finally:
            counts = perf.stop()
        return counts

    # -- does each sandbox hold?

    def probe(self, name, ws, run):
        """Asks run(script) to write one file outside the workspace and one
        inside, and records which of the two exist afterwards."""
        outside = self.path("outside", tag(name))
        inside = os.path.join(ws, "probe-" + tag(name))
        try:
            run("echo x > %s; echo x > %s" % (outside, inside))
        except Exception as e:
            log("probe of %s: %s" % (name, e))
        self.checks.append((name, "WRITTEN" if os.path.exists(outside) else "denied",
                            "written" if os.path.exists(inside) else "DENIED"))
        for p in (outside, inside):
            if os.path.exists(p):
                os.remove(p)

    def probe_oneshots(self):
        for t in self.oneshots:
            if t.ws is None:
                continue

            def run(script, t=t):
                t.rewind()
                subprocess.run(t.argv([script] if t.shell else ["sh", "-c", script]), env=t.env, cwd=t.ws,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               timeout=120, pass_fds=t.pass_fds)
            self.probe(t.name, t.ws, run)

    def probe_server(self, srv, s):
        def run(script):
            s.call(srv.tool, srv.args_for(srv.shell_cmd(script)), 60)
        self.probe(srv.name + " (MCP)", srv.ws, run)

    # -- the whole run

    def run(self):
        o = self.opt
        self.machine = describe()
        self.started = time.time()
        self.probe_oneshots()
        failed_one, failed_mcp, failed_dd = {}, {}, {}
        for rep in range(o.reps):
            log("repetition %d of %d: one-shot runs" % (rep + 1, o.reps))
            self.run_oneshots(rep, o.runs, failed_one)
            self.count_oneshots(rep, o.count_runs, failed_one)
            log("repetition %d of %d: MCP calls" % (rep + 1, o.reps))
            self.measure_idle(rep, failed_mcp)
            self.run_mcp(rep, o.calls, o.bursts, o.count_calls, failed_mcp)
            log("repetition %d of %d: dd" % (rep + 1, o.reps))
            self.run_dd(rep, o.dd_runs, failed_dd)
        self.elapsed = time.time() - self.started
        self.machine["load_end"] = loadavg()

    # -- the report

    def report(self):
        r, o, out = self.res, self.opt, []
        m = self.machine
        w = out.append
        w("Measured %s by `%s` in %.0f s." % (m["date"], o.command, self.elapsed))
        w("")
        w("| machine | |")
        w("|---|---|")
        m["ours"] = o.ours_version
        m["peers"] = self.peer_versions()
        for k in ("os", "kernel", "cpu", "cores", "memory", "virtualization", "load_start", "load_end", "ours",
                  "peers", "tools"):
            w("| %s | %s |" % (k.replace("_", " "), m.get(k) or "–"))
        w("")
        counts_src = "getrusage and /proc/stat (see the notes)"
        if not self.perf_problem:
            counts_src = ("perf stat: task-clock, page-faults, context-switches, task:task_newtask "
                          "(threads: those with CLONE_THREAD), sched:sched_process_exec")
        ours = self.oneshots[0].name
        w("### Does each sandbox hold? (a write outside the workspace, one inside)")
        w("")
        w("| tool | outside | inside |")
        w("|---|---|---|")
        for name, outside, inside in self.checks:
            w("| %s | %s | %s |" % (name, outside, inside))
        w("")
        w("### One-shot: a sandboxed `true` from the command line")
        w("")
        w("%d runs per tool and repetition, tools taking turns run by run; counts from %d more runs each under %s. "
          "Ours runs `true`; the others `/bin/true` (srt would run `true` as bash's builtin). "
          "CPU from getrusage comes from the timed runs and counts only the processes a tool waits for "
          "(bwrap's first process exits without waiting for its pid-1 child); perf counts every task a run "
          "creates." % (o.runs, o.count_runs, counts_src))
        w("")
        src = "perf" if not self.perf_problem else "getrusage, count runs"
        cols = [("one.wall", "wall ms", f2), ("one.cpu", "CPU ms (getrusage)", f2), ("one.cpu_ms", "CPU ms (%s)" % src, f2),
                ("one.faults", "page faults", f0), ("one.cswitches", "context switches", f0),
                ("one.tasks", "tasks created", f1), ("one.threads", "of which threads", f1), ("one.execs", "execs", f1)]
        self.table(w, [t.name for t in self.oneshots], cols, ours)
        if any(t.name == ALONE for t in self.oneshots):
            of = "%s of our one-shot run" % self.res.ratio("one.cpu_ms", ALONE, ours)
            if self.res.median("one.cpu_ms", "bwrap") is not None:
                of = "%s of bubblewrap's whole run and %s" % (self.res.ratio("one.cpu_ms", ALONE, "bwrap"), of)
            w("The row *%s* sandboxes nothing: our binary starts, runs its package initialisers (the MCP SDK's "
              "and net/http's among them) and exits. Its CPU (%s) is %s: a floor no change to the sandbox "
              "lowers while the command line is a Go program." % (ALONE, src, of))
            w("")
        if self.servers:
            w("### MCP: `run_command true` (or the peer's tool running `/bin/true`) over one session")
            w("")
            w("%d calls per server and repetition paced 20 ms apart (servers taking turns call by call), then %d back to back "
              "(server by server); CPU is the server tree's per call. Tasks and execs per call: %d paced calls under %s." % (
                  o.calls, o.calls, o.count_calls, "perf stat attached to the server tree" if not self.perf_problem else "/proc/stat"))
            w("")
            cols = [("mcp.paced", "paced ms/call", f2), ("mcp.paced_cpu", "paced CPU ms/call", f2),
                    ("mcp.b2b", "back-to-back ms/call", f2), ("mcp.b2b_cpu", "back-to-back CPU ms/call", f2),
                    ("mcp.cpu_ms", "CPU ms/call (perf, paced)", f2), ("mcp.tasks", "tasks/call", f1),
                    ("mcp.threads", "of which threads", f1), ("mcp.execs", "execs/call", f1)]
            names = [s.name for s in self.servers]
            self.table(w, names, cols, ours)
            w("### MCP: %d concurrent `true` calls over one session" % CONCURRENT)
            w("")
            w("%d burst(s) per server and repetition. Ours with `--max-concurrent %d`." % (o.bursts, CONCURRENT))
            w("")
            cols = [("mcp.conc", "wall s", f2), ("mcp.conc_cpu", "server tree CPU ms", f0),
                    ("mcp.conc_cpu_call", "CPU ms/call", f2)]
            self.table(w, names, cols, ours)
            w("### MCP: idle server tree after initialize and one call, 1 s later")
            w("")
            w("Each server alone, so that no second server of the same binary shares its pages (PSS divides a "
              "shared page among the processes mapping it).")
            w("")
            cols = [("mem.rss", "RSS MiB", mib), ("mem.pss", "PSS MiB", mib), ("mem.procs", "processes", f0)]
            self.table(w, names, cols, ours)
            w("### MCP: 1 GiB of output through the tool (`%s`)" % YES_1GIB)
            w("")
            w("Peak: the tree's summed VmRSS sampled every 20 ms; VmHWM of the server process itself, "
              "reset just before the call.")
            w("")
            cols = [("yes.wall", "wall s", f2), ("yes.peak", "tree peak RSS MiB", mib), ("yes.hwm", "server VmHWM MiB", mib),
                    ("yes.text", "text returned", size), ("yes.outcome", "result", None)]
            self.table(w, names, cols, ours)
        w("### Inside the sandbox: 2,000,000 one-byte writes (`%s`)" % " ".join(DD))
        w("")
        w("dd's own time (the loop, not the sandbox's start), %d runs per variant and repetition, taking turns; "
          "ratio to the same dd run directly." % o.dd_runs)
        w("")
        w("| where | dd s | / direct | note |")
        w("|---|---|---|---|")
        for t in self.dds:
            w("| %s | %s | %s | %s |" % (t.name, r.cell("dd.s", t.name, f2).replace("\n", " ").replace("|", "\\|"),
                                         r.ratio("dd.s", t.name, "direct"), t.note))
        w("")
        if self.notes:
            w("Notes from this run:")
            w("")
            for where, text in self.notes:
                w("- %s: %s" % (where, text))
            w("")
        return "\n".join(out)

    def peer_versions(self):
        out = []
        for label, argv in (("bwrap", ["bwrap", "--version"]), ("firejail", ["firejail", "--version"])):
            if any(t.name == label for t in self.oneshots):
                out.append(first_line(argv))
        for pkg in ("@anthropic-ai/sandbox-runtime", "@openai/codex-shell-tool-mcp", "@openai/codex", "mcp-server-commands"):
            try:
                with open(os.path.join(self.opt.npm_prefix or "", "node_modules", pkg, "package.json")) as f:
                    out.append("%s %s" % (pkg, json.load(f)["version"]))
            except (OSError, ValueError, KeyError):
                pass
        return "; ".join(v for v in out if v)

    def table(self, w, names, cols, ours):
        r = self.res
        w("| tool | " + " | ".join(h for _, h, _ in cols) + " |")
        w("|---|" + "---|" * len(cols))
        for n in names:
            cells = [r.notes.get((fig, n), "–") if fmt is None else r.cell(fig, n, fmt) for fig, _, fmt in cols]
            if all(r.median(fig, n) is None for fig, _, fmt in cols if fmt):
                # No number at all: the reason, once.
                why = next((r.notes[(f, n)] for f, _, _ in cols if (f, n) in r.notes), "not run")
                cells = [why] + ["–"] * (len(cols) - 1)
            w("| %s | %s |" % (n, " | ".join(c.replace("\n", " ").replace("|", "\\|") for c in cells)))
        for n in names:
            if n == ours or n.startswith("ours") or n == "bare true":
                continue
            w("| **%s / %s** | %s |" % (ours, n, " | ".join(r.ratio(f, ours, n) if fmt else "" for f, _, fmt in cols)))
        w("")

    def smoke_check(self):
        """Every figure of ours has a number, and our sandbox held."""
        missing = []
        figs = ["one.wall", "one.cpu", "one.cpu_ms", "one.faults", "one.cswitches", "one.tasks",
                "mcp.paced", "mcp.paced_cpu", "mcp.b2b", "mcp.b2b_cpu", "mcp.tasks", "mcp.conc", "mcp.conc_cpu",
                "mem.rss", "mem.pss", "yes.wall", "yes.peak", "yes.hwm", "yes.text", "dd.s"]
        if not self.perf_problem:
            figs += ["one.threads", "one.execs", "mcp.threads", "mcp.execs", "mcp.cpu_ms"]
        for t in [s.name for s in self.servers]:
            for fig in figs:
                if t == REPO and not fig.startswith(("mcp.", "mem.", "yes.")):
                    continue  # a server only: no one-shot or dd row
                if self.res.median(fig, t) is None:
                    missing.append("%s of %s (%s)" % (fig, t, self.res.notes.get((fig, t), "no sample")))
        held = [c for c in self.checks if c[0].startswith("ours") and (c[1] != "denied" or c[2] != "written")]
        probed = {c[0] for c in self.checks}
        for t in self.servers:
            for name in (t.name, t.name + " (MCP)"):
                if name not in probed and not (t.name == REPO and name == REPO):
                    missing.append("the write probe of " + name)
        return missing, held


def tag(name):
    """name as a file name: "ours (root)" is ours-root."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


# -- the machine ----------------------------------------------------------------


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def first_line(argv):
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        return (r.stdout.strip() or r.stderr.strip()).splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return None


def describe():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    osname = "?"
    try:
        with open("/etc/os-release") as f:
            osname = dict(line.rstrip().split("=", 1) for line in f if "=" in line).get("PRETTY_NAME", "?").strip('"')
    except OSError:
        pass
    virt = []
    if shutil.which("systemd-detect-virt"):
        virt.append("VM: %s" % (first_line(["systemd-detect-virt", "--vm"]) or "none"))
        virt.append("container: %s" % (first_line(["systemd-detect-virt", "--container"]) or "none"))
    with open("/proc/cpuinfo") as f:
        if " hypervisor" in f.read():
            virt.append("cpu flag hypervisor")
    with open("/proc/meminfo") as f:
        mem = int(f.readline().split()[1]) * 1024
    versions = []
    for label, argv in (("go", ["go", "version"]), ("node", ["node", "--version"]),
                        ("python", [sys.executable, "--version"]), ("perf", ["perf", "--version"])):
        if shutil.which(argv[0]):
            v = first_line(argv)
            if v:
                versions.append("%s: %s" % (label, v))
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "os": osname, "kernel": platform.release(), "cpu": cpu, "cores": str(os.cpu_count()),
        "memory": size(mem), "virtualization": ", ".join(virt) or "?", "load_start": loadavg(),
        "tools": "; ".join(versions),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin", required=True, help="our binary")
    p.add_argument("--scratch", required=True, help="a directory for workspaces and logs (removed by the caller)")
    p.add_argument("--npm-prefix", help="where the npm peers are installed (node_modules inside)")
    p.add_argument("--codex-linux-sandbox", help="codex-linux-sandbox for codex-shell-tool-mcp")
    p.add_argument("--user", default="nsbtest", help="also run ours as this user, if it exists")
    p.add_argument("--smoke", action="store_true", help="one iteration of each of our own figures, no peers")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--runs", type=int, default=50, help="one-shot runs per tool and repetition")
    p.add_argument("--count-runs", type=int, default=10, help="one-shot runs under perf per tool and repetition")
    p.add_argument("--calls", type=int, default=100, help="MCP calls per server, mode and repetition")
    p.add_argument("--count-calls", type=int, default=20, help="MCP calls under perf per server and repetition")
    p.add_argument("--bursts", type=int, default=3, help="bursts of 50 concurrent calls per server and repetition")
    p.add_argument("--dd-runs", type=int, default=3, help="dd runs per variant and repetition")
    p.add_argument("--yes-timeout", type=float, default=300)
    p.add_argument("--no-perf", action="store_true", help="count as where perf cannot run: getrusage, /proc/stat")
    p.add_argument("--command", default="bench/peers.sh", help="the command line to print in the report")
    p.add_argument("--ours-version", help="what our binary was built from, for the report")
    p.add_argument("--out", help="also write the report to this file")
    opt = p.parse_args()
    if opt.smoke:
        opt.reps = opt.runs = opt.count_runs = opt.calls = opt.count_calls = opt.bursts = opt.dd_runs = 1
    bench = Bench(opt)
    bench.run()
    text = bench.report()
    print(text)
    if opt.out:
        with open(opt.out, "w") as f:
            f.write(text + "\n")
    if opt.smoke:
        missing, held = bench.smoke_check()
        for m in missing:
            log("smoke: no number for " + m)
        for h in held:
            log("smoke: our sandbox did not hold: %s outside %s, inside %s" % h)
        if missing or held:
            return 1
        log("smoke: every figure of ours has a number, and our sandbox held")
    return 0


if __name__ == "__main__":
    sys.exit(main())
