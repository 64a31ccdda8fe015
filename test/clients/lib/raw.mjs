// A raw JSON-RPC session with the server binary over stdio: lines in,
// lines out, every stdout line checked to be JSON-RPC.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';

import { serverBin } from './harness.mjs';

export class RawSession {
  constructor(args) {
    this.proc = spawn(serverBin, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.lines = []; // every stdout line, in order
    this.replies = new Map(); // JSON id -> reply not yet awaited
    this.waiters = new Map(); // JSON id -> resolve
    this.notifications = [];
    this.bad = []; // stdout lines that are not JSON-RPC
    this.stderr = '';
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
    this.proc.stderr.on('data', (d) => { this.stderr += d; });
    this.proc.stdin.on('error', () => {}); // the server may be gone
    createInterface({ input: this.proc.stdout, crlfDelay: Infinity }).on('line', (line) => this.#take(line));
  }

  #take(line) {
    this.lines.push(line);
    let msg;
    try {
      msg = JSON.parse(line);
    } catch {
      this.bad.push(line);
      return;
    }
    for (const m of Array.isArray(msg) ? msg : [msg]) {
      if (m === null || typeof m !== 'object' || m.jsonrpc !== '2.0') {
        this.bad.push(line);
        continue;
      }
      if ('method' in m) {
        this.notifications.push(m);
        continue;
      }
      const key = JSON.stringify(m.id);
      const w = this.waiters.get(key);
      if (w) {
        this.waiters.delete(key);
        w(m);
      } else {
        this.replies.set(key, m);
      }
    }
  }

  // send writes one line (a string is sent as it is, anything else as JSON).
  send(msg) {
    this.proc.stdin.write((typeof msg === 'string' ? msg : JSON.stringify(msg)) + '\n');
  }

  // reply waits for the reply to id (a JSON value: 1, "a", null).
  reply(id, ms = 20000) {
    const key = JSON.stringify(id);
    if (this.replies.has(key)) {
      const m = this.replies.get(key);
      this.replies.delete(key);
      return Promise.resolve(m);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters.delete(key);
        reject(new Error(`no reply to ${key} in ${ms} ms; last stdout lines:\n${this.lines.slice(-5).join('\n').slice(0, 2000)}\nstderr:\n${this.stderr.slice(-2000)}`));
      }, ms);
      this.waiters.set(key, (m) => {
        clearTimeout(timer);
        resolve(m);
      });
    });
  }

  // request sends a request and waits for its reply.
  async request(id, method, params) {
    this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) });
    return this.reply(id);
  }

  // close ends stdin and waits for the server to exit.
  async close() {
    this.proc.stdin.end();
    const exit = await Promise.race([this.exited, new Promise((r) => setTimeout(() => r(null), 10000))]);
    if (!exit) {
      this.proc.kill('SIGKILL');
      assert.fail('the server did not exit within 10 s of stdin closing');
    }
    assert.deepEqual(this.bad, [], 'stdout lines that are not JSON-RPC');
    return exit;
  }
}
