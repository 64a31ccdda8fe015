"""A minimal MCP client over stdio for bench/peers.py: newline-delimited
JSON-RPC, standard library only, so the smoke mode needs nothing installed.

It starts a server, initializes a session, lists its tools and calls one
tool once, many times in a row, or many times at once, timing each call from
the request written to the response read. A response line longer than
MAX_LINE bytes (a peer that returns a gigabyte of output) is counted, not
parsed.
"""

import json
import os
import signal
import subprocess
import threading
import time

PROTOCOL_VERSION = "2025-06-18"
MAX_LINE = 64 << 20


class Reply:
    """One response: its JSON (None when the line was too long to parse),
    the size of its line in bytes, and when it was read."""

    def __init__(self, msg, line_bytes, at):
        self.msg = msg
        self.line_bytes = line_bytes
        self.at = at

    @property
    def error(self):
        """The JSON-RPC error, or a tool result with isError set, as text; None if neither."""
        if self.msg is None:
            return None
        if "error" in self.msg:
            return json.dumps(self.msg["error"])[:300]
        res = self.msg.get("result") or {}
        if res.get("isError"):
            return ("tool error: " + self.text())[:300]
        return None

    def texts(self):
        """The text content items the tool returned."""
        res = (self.msg or {}).get("result") or {}
        return [c.get("text", "") for c in res.get("content", []) if c.get("type") == "text"]

    def text(self):
        """The text the tool returned, its items one per line."""
        return "\n".join(self.texts())

    def text_bytes(self):
        """The size of the text the tool returned, in bytes; for a line too
        long to parse, the size of the line."""
        if self.msg is None:
            return self.line_bytes
        return sum(len(t.encode()) for t in self.texts())


class Session:
    """An MCP server started as a child process, spoken to over its stdio."""

    def __init__(self, argv, env=None, cwd=None, stderr=None, user=None):
        kw = {}
        if user is not None:  # run the server as another user: uid, gid, no supplementary groups
            kw = {"user": user[0], "group": user[1], "extra_groups": []}
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=stderr if stderr is not None else subprocess.DEVNULL,
                                     env=env, cwd=cwd, bufsize=0, start_new_session=True, **kw)
        self.pid = self.proc.pid
        self._next = 1
        self._lock = threading.Lock()
        self._cond = threading.Condition()
        self._replies = {}
        self._pending = set()
        self._closed = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    # -- wire --------------------------------------------------------------

    def _send(self, msg):
        data = (json.dumps(msg, separators=(",", ":")) + "\n").encode()
        with self._lock:
            self.proc.stdin.write(data)

    def _read(self):
        out = self.proc.stdout
        buf = b""
        while True:
            chunk = out.read(1 << 20)
            if not chunk:
                break
            buf += chunk
            while True:
                nl = buf.find(b"\n")
                if nl < 0:
                    if len(buf) > MAX_LINE:
                        buf = self._skip_long_line(out, len(buf))
                        if buf is None:
                            return self._eof()
                        continue
                    break
                line, buf = buf[:nl], buf[nl + 1:]
                if line.strip():
                    self._handle(json.loads(line), len(line) + 1)
        self._eof()

    def _skip_long_line(self, out, seen):
        """Reads to the end of a line too long to keep, and counts it as the
        reply to the one request outstanding. Returns what follows the line,
        or None at the end of the stream."""
        while True:
            chunk = out.read(1 << 20)
            if not chunk:
                return None
            nl = chunk.find(b"\n")
            if nl < 0:
                seen += len(chunk)
                continue
            seen += nl + 1
            with self._cond:
                if len(self._pending) == 1:
                    rid = next(iter(self._pending))
                    self._pending.discard(rid)
                    self._replies[rid] = Reply(None, seen, time.perf_counter())
                    self._cond.notify_all()
            return chunk[nl + 1:]

    def _eof(self):
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def _handle(self, msg, size):
        at = time.perf_counter()
        if "method" in msg:
            if "id" in msg:  # a request from the server: answer what a plain client answers
                result = {"ping": {}, "roots/list": {"roots": []}}.get(msg["method"])
                if result is None:
                    self._send({"jsonrpc": "2.0", "id": msg["id"],
                                "error": {"code": -32601, "message": "not supported by this client"}})
                else:
                    self._send({"jsonrpc": "2.0", "id": msg["id"], "result": result})
            return  # notifications (logging, progress) are ignored
        with self._cond:
            self._pending.discard(msg.get("id"))
            self._replies[msg.get("id")] = Reply(msg, size, at)
            self._cond.notify_all()

    def request(self, method, params, timeout=60):
        """Sends one request and waits for its reply: (seconds, Reply)."""
        start = time.perf_counter()
        reply = self._wait([self._submit(method, params)], timeout)[0]
        return reply.at - start, reply

    def _submit(self, method, params):
        with self._cond:
            rid = self._next
            self._next += 1
            self._pending.add(rid)
        self._send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        return rid

    def _wait(self, ids, timeout):
        deadline = time.monotonic() + timeout
        with self._cond:
            while not all(i in self._replies for i in ids):
                left = deadline - time.monotonic()
                if self._closed:
                    raise RuntimeError("server closed its output (exit status %s)" % self.proc.poll())
                if left <= 0:
                    raise TimeoutError("no reply in %ss" % timeout)
                self._cond.wait(left)
            return [self._replies.pop(i) for i in ids]

    # -- MCP ---------------------------------------------------------------

    def initialize(self, timeout=60):
        """initialize, then notifications/initialized: the result of initialize."""
        _, reply = self.request("initialize", {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": "nanosandbox-bench", "version": "1"},
        }, timeout)
        if reply.error:
            raise RuntimeError("initialize: " + reply.error)
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return reply.msg["result"]

    def tools(self):
        """The names of the tools the server lists."""
        _, reply = self.request("tools/list", {})
        if reply.error:
            raise RuntimeError("tools/list: " + reply.error)
        return [t["name"] for t in reply.msg["result"]["tools"]]

    def call(self, tool, arguments, timeout=60):
        """One tools/call: (seconds, Reply)."""
        return self.request("tools/call", {"name": tool, "arguments": arguments}, timeout)

    def call_many(self, tool, arguments, n, timeout=120):
        """n tools/call requests written at once: (seconds until the last reply, [Reply])."""
        start = time.perf_counter()
        ids = [self._submit("tools/call", {"name": tool, "arguments": arguments}) for _ in range(n)]
        replies = self._wait(ids, timeout)
        return max(r.at for r in replies) - start, replies

    def close(self, timeout=5):
        """Closes the server's stdin and waits for it to exit; if it does not,
        kills its process group (the server was started as its leader)."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.pid, signal.SIGKILL)
            self.proc.wait()
        self._reader.join(timeout)


def env_for(base, **extra):
    """A copy of the environment base (os.environ if None) with extra set."""
    env = dict(os.environ if base is None else base)
    env.update(extra)
    return env
