// bridge serves MCP over Streamable HTTP on 127.0.0.1 and forwards each
// message to a stdio MCP server, so HTTP-only tools (the conformance
// suite) can test a stdio server.
//
//   node bridge.mjs [--port N] -- COMMAND [ARG...]
//
// It prints "listening on http://127.0.0.1:PORT/mcp" once ready.
//
// Sessions (2025-11-25): each initialize starts a new server process and
// gets its own Mcp-Session-Id; later requests name it, and DELETE ends
// it. Requests with the 2026-07-28 _meta and no session go to one shared
// process started on first use (that era has no sessions). Request ids are
// rewritten on the way in and restored on the way out, so two HTTP
// clients cannot collide on one process. A request that asked for
// progress and accepts text/event-stream gets its progress notifications
// and then its response as server-sent events; everything else gets one
// application/json response. GET is 405: the server never sends anything
// that is not tied to a request.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createInterface } from 'node:readline';

const MODERN = '2026-07-28';
const MAX_BODY = 32 << 20;

const argv = process.argv.slice(2);
let port = 0;
if (argv[0] === '--port') {
  port = Number(argv[1]);
  argv.splice(0, 2);
}
if (argv[0] !== '--' || argv.length < 2) {
  process.stderr.write('usage: node bridge.mjs [--port N] -- COMMAND [ARG...]\n');
  process.exit(2);
}
const [command, ...commandArgs] = argv.slice(1);

// A Backend is one server process and the requests waiting on it.
class Backend {
  constructor() {
    this.proc = spawn(command, commandArgs, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.pending = new Map(); // internal id -> { resolve, onNotify }
    this.next = 0;
    this.dead = false;
    this.proc.stdin.on('error', () => {});
    this.proc.on('exit', () => {
      this.dead = true;
      for (const [id, p] of this.pending) p.resolve({ jsonrpc: '2.0', id, error: { code: -32603, message: 'the server process exited' } });
      this.pending.clear();
    });
    createInterface({ input: this.proc.stdout, crlfDelay: Infinity }).on('line', (line) => this.#take(line));
  }

  #take(line) {
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      process.stderr.write(`bridge: server wrote a line that is not JSON: ${line.slice(0, 200)}\n`);
      return;
    }
    if (msg.method !== undefined) {
      // A notification (or a request, which this server never sends):
      // hand it to every waiting request that asked for it.
      for (const p of this.pending.values()) p.onNotify?.(msg);
      return;
    }
    const p = this.pending.get(msg.id);
    if (p) {
      this.pending.delete(msg.id);
      p.resolve(msg);
    }
  }

  // request forwards msg (with an id) and resolves with its response,
  // the original id restored.
  request(msg, onNotify) {
    const id = `b${this.next++}`;
    return new Promise((resolve) => {
      if (this.dead) {
        resolve({ jsonrpc: '2.0', id: msg.id, error: { code: -32603, message: 'the server process exited' } });
        return;
      }
      this.pending.set(id, { resolve: (r) => resolve({ ...r, id: msg.id }), onNotify });
      this.proc.stdin.write(JSON.stringify({ ...msg, id }) + '\n');
    });
  }

  notify(msg) {
    if (!this.dead) this.proc.stdin.write(JSON.stringify(msg) + '\n');
  }

  close() {
    this.proc.stdin.end();
    setTimeout(() => this.proc.kill('SIGKILL'), 3000).unref();
  }
}

const sessions = new Map(); // Mcp-Session-Id -> Backend
let stateless;

function json(res, status, body, headers = {}) {
  const data = body === undefined ? '' : JSON.stringify(body);
  res.writeHead(status, { ...(data ? { 'Content-Type': 'application/json' } : {}), ...headers });
  res.end(data);
}

function rpcError(res, status, id, code, message) {
  json(res, status, { jsonrpc: '2.0', id: id ?? null, error: { code, message } });
}

// httpStatus is the status a 2026-07-28 error response goes out with.
function httpStatus(msg, modern) {
  if (!modern || !msg.error) return 200;
  switch (msg.error.code) {
    case -32601: return 404;
    case -32600: case -32602: case -32020: case -32021: case -32022: return 400;
    default: return 200;
  }
}

function readBody(req) {
  return new Promise((resolve, reject) => {
    const chunks = [];
    let size = 0;
    req.on('data', (c) => {
      size += c.length;
      if (size > MAX_BODY) {
        reject(new Error('body too large'));
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function handle(req, res) {
  const url = new URL(req.url, 'http://127.0.0.1');
  if (url.pathname !== '/mcp') return json(res, 404, { error: 'not found' });
  // DNS rebinding: only pages on this machine may call.
  const origin = req.headers.origin;
  if (origin && !/^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:\d+)?$/.test(origin)) {
    return rpcError(res, 403, null, -32600, 'Origin not allowed');
  }
  const sid = req.headers['mcp-session-id'];
  if (req.method === 'DELETE') {
    const b = sid && sessions.get(sid);
    if (!b) return json(res, 404, undefined);
    sessions.delete(sid);
    b.close();
    return json(res, 200, undefined);
  }
  if (req.method !== 'POST') return json(res, 405, undefined, { Allow: 'POST, DELETE' });

  let msg;
  try {
    msg = JSON.parse(await readBody(req));
  } catch {
    return rpcError(res, 400, null, -32700, 'Parse error');
  }
  if (msg === null || typeof msg !== 'object' || Array.isArray(msg) || msg.jsonrpc !== '2.0') {
    return rpcError(res, 400, null, -32600, 'Invalid Request');
  }
  const isRequest = typeof msg.method === 'string' && msg.id !== undefined && msg.id !== null;
  const version = msg.params?._meta?.['io.modelcontextprotocol/protocolVersion'];
  const modern = typeof version === 'string' && version >= MODERN;

  let backend;
  let newSession;
  if (sid) {
    backend = sessions.get(sid);
    if (!backend) return rpcError(res, 404, msg.id, -32001, 'Session not found');
  } else if (msg.method === 'initialize') {
    backend = new Backend();
    newSession = randomUUID();
    sessions.set(newSession, backend);
  } else if (modern) {
    if (req.headers['mcp-protocol-version'] && req.headers['mcp-protocol-version'] !== version) {
      return rpcError(res, 400, msg.id, -32020, 'MCP-Protocol-Version header does not match _meta');
    }
    stateless ??= new Backend();
    backend = stateless;
  } else {
    return rpcError(res, 400, msg.id, -32600, 'Bad Request: no Mcp-Session-Id; send initialize first');
  }

  if (!isRequest) {
    backend.notify(msg);
    return json(res, 202, undefined);
  }
  const token = msg.params?._meta?.progressToken;
  const sse = token !== undefined && (req.headers.accept ?? '').includes('text/event-stream');
  const headers = newSession ? { 'Mcp-Session-Id': newSession } : {};
  if (!sse) {
    const reply = await backend.request(msg);
    return json(res, httpStatus(reply, modern), reply, headers);
  }
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', ...headers });
  const event = (m) => res.write(`event: message\ndata: ${JSON.stringify(m)}\n\n`);
  const reply = await backend.request(msg, (n) => {
    if (n.method === 'notifications/progress' && n.params?.progressToken === token) event(n);
  });
  event(reply);
  res.end();
}

const server = createServer((req, res) => {
  handle(req, res).catch((e) => {
    if (!res.headersSent) rpcError(res, 500, null, -32603, String(e.message ?? e));
    else res.end();
  });
});

function shutdown() {
  for (const b of sessions.values()) b.close();
  stateless?.close();
  server.close();
  setTimeout(() => process.exit(0), 500).unref();
}
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);

server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening on http://127.0.0.1:${server.address().port}/mcp\n`);
});
