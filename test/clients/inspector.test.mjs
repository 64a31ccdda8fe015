// The MCP Inspector's CLI (v2, on Node 22) against the binary, in both
// protocol eras (--protocol-era legacy | modern). A tap between the
// Inspector and the server records the wire, so each era is checked on
// what was actually sent, not on what the Inspector says it did.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';

import { LEGACY, MODERN, here, node22, serverArgs, serverBin, workspace } from './lib/harness.mjs';

const inspector = join(here, 'node_modules', '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');
const tap = join(here, 'lib', 'tap.mjs');

// run runs the Inspector CLI once and returns its exit code, its parsed
// JSON output and the messages the tap saw.
function run(era, ws, ...cliArgs) {
  const home = mkdtempSync(join(tmpdir(), 'nsb-inspector-home-'));
  const log = join(home, 'wire.log');
  const args = [inspector, '--cli', '--protocol-era', era, '--format', 'json', ...cliArgs, node22, tap, log, serverBin, ...serverArgs(ws)];
  return new Promise((resolve) => {
    // A private HOME: the Inspector keeps a catalog and settings there.
    execFile(node22, args, { env: { ...process.env, HOME: home }, timeout: 60000, maxBuffer: 64 << 20 }, (err, stdout, stderr) => {
      let wire = [];
      try {
        wire = readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => ({ dir: l.slice(0, 1), msg: JSON.parse(l.slice(2)) }));
      } catch (e) {
        wire = { error: String(e) };
      }
      rmSync(home, { recursive: true, force: true });
      let out;
      try {
        out = JSON.parse(stdout);
      } catch {
        out = { unparsed: stdout };
      }
      resolve({ code: err ? err.code : 0, out, stderr, wire });
    });
  });
}

// checkWire asserts the recorded exchange belongs to the era.
function checkWire(era, wire) {
  assert.ok(Array.isArray(wire), `no wire log: ${JSON.stringify(wire)}`);
  const sent = wire.filter((w) => w.dir === '>').map((w) => w.msg);
  const received = wire.filter((w) => w.dir === '<').map((w) => w.msg);
  assert.ok(received.length > 0, 'the server answered nothing');
  for (const m of received) assert.equal(m.jsonrpc, '2.0');
  const init = sent.find((m) => m.method === 'initialize');
  if (era === 'legacy') {
    assert.ok(init, 'no initialize in the legacy era');
    assert.equal(init.params.protocolVersion, LEGACY);
    const reply = received.find((m) => m.id === init.id);
    assert.equal(reply?.result?.protocolVersion, LEGACY);
  } else {
    assert.equal(init, undefined, 'initialize sent in the modern era');
    const calls = sent.filter((m) => m.method && 'id' in m);
    assert.ok(calls.length > 0);
    for (const m of calls) {
      assert.equal(m.params?._meta?.['io.modelcontextprotocol/protocolVersion'], MODERN, `${m.method} without the ${MODERN} _meta`);
    }
  }
}

for (const era of ['legacy', 'modern']) {
  describe(`Inspector CLI, ${era === 'legacy' ? LEGACY : MODERN}`, () => {
    const ws = workspace(after);

    test('tools/list --strict', async () => {
      const r = await run(era, ws, '--strict', '--method', 'tools/list');
      assert.equal(r.code, 0, `exit ${r.code}; stderr:\n${r.stderr}`);
      // --strict prints each schema portability finding; there are none.
      assert.doesNotMatch(r.stderr, /portab|warn|error/i);
      const tools = r.out.result?.tools;
      assert.deepEqual(tools?.map((t) => t.name), ['run_command'], JSON.stringify(r.out).slice(0, 300));
      assert.equal(tools[0].inputSchema.additionalProperties, false);
      checkWire(era, r.wire);
    });

    test('tools/call', async () => {
      const r = await run(era, ws, '--method', 'tools/call', '--tool-name', 'run_command',
        '--tool-args-json', JSON.stringify({ command: 'sh', args: ['-c', 'echo inspected; exit 3'] }));
      assert.equal(r.code, 0, `exit ${r.code}; stderr:\n${r.stderr}`);
      const res = r.out.result;
      assert.equal(res?.isError ?? false, false, JSON.stringify(r.out).slice(0, 300));
      assert.equal(res.structuredContent.exit_code, 3);
      assert.equal(res.structuredContent.stdout, 'inspected\n');
      checkWire(era, r.wire);
      const call = r.wire.find((w) => w.dir === '>' && w.msg.method === 'tools/call');
      assert.deepEqual(call.msg.params.arguments, { command: 'sh', args: ['-c', 'echo inspected; exit 3'] });
    });

    test('tools/call with an extra argument is refused', async () => {
      const r = await run(era, ws, '--method', 'tools/call', '--tool-name', 'run_command',
        '--tool-args-json', JSON.stringify({ command: 'true', cwd: '/' }));
      // The Inspector exits 5 when a tool returns isError.
      assert.equal(r.code, 5, `exit ${r.code}; stdout ${JSON.stringify(r.out).slice(0, 300)}; stderr:\n${r.stderr}`);
      checkWire(era, r.wire);
      const reply = r.wire.find((w) => w.dir === '<' && w.msg.result?.isError === true);
      assert.ok(reply, 'no isError result on the wire');
    });
  });
}
