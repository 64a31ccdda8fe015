// The TypeScript SDK's Client over StdioClientTransport, in both protocol
// eras: @modelcontextprotocol/sdk (v1, the client most hosts embed) speaks
// the 2025-11-25 initialize handshake and nothing later; its successor
// @modelcontextprotocol/client (v2) is pinned to 2026-07-28, where there is
// no initialize and every request carries its version in _meta.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport as StdioV1 } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ClientV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioV2 } from '@modelcontextprotocol/client/stdio';

import {
  LEGACY, MODERN, failed, firstWord, marker, processesWith, ran, serverArgs, serverBin, sh, textOf,
  waitFor, workspace,
} from './lib/harness.mjs';

// MESSAGE_LIMIT is the TypeScript SDK's stdio buffer: a larger message
// drops the connection (STDIO_DEFAULT_MAX_BUFFER_SIZE in both SDKs).
const MESSAGE_LIMIT = 10 * 1024 * 1024;

const eras = [
  {
    version: LEGACY,
    async connect(args) {
      const transport = new StdioV1({ command: serverBin, args, stderr: 'pipe' });
      const client = new ClientV1({ name: 'nsb-sdk-v1', version: '1.0.0' });
      let negotiated;
      transport.setProtocolVersion = (v) => { negotiated = v; };
      const stderr = drain(transport.stderr);
      await client.connect(transport);
      return {
        client, stderr,
        negotiated: () => negotiated,
        list: () => client.listTools(),
        call: (args, opts) => client.callTool({ name: 'run_command', arguments: args }, undefined, opts),
        close: () => client.close(),
      };
    },
  },
  {
    version: MODERN,
    async connect(args) {
      const transport = new StdioV2({ command: serverBin, args, stderr: 'pipe' });
      const client = new ClientV2({ name: 'nsb-sdk-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: MODERN } } });
      const stderr = drain(transport.stderr);
      await client.connect(transport);
      return {
        client, stderr,
        negotiated: () => client.getProtocolEra() === 'modern' && client.getNegotiatedProtocolVersion(),
        list: () => client.listTools(),
        call: (args, opts) => client.callTool({ name: 'run_command', arguments: args }, opts),
        close: () => client.close(),
      };
    },
  },
];

// drain collects a stream so the server never blocks on a full pipe.
function drain(stream) {
  const chunks = [];
  stream?.on('data', (c) => chunks.push(c));
  return () => Buffer.concat(chunks).toString();
}

for (const era of eras) {
  describe(`TypeScript SDK, ${era.version}`, () => {
    const ws = workspace(after);
    let s;
    before(async () => {
      s = await era.connect(serverArgs(ws));
    });
    after(() => s?.close());

    test('negotiates the era', () => {
      assert.equal(s.negotiated(), era.version);
    });

    test('lists exactly run_command with its schema', async () => {
      const { tools } = await s.list();
      assert.deepEqual(tools.map((t) => t.name), ['run_command']);
      const [tool] = tools;
      const schema = tool.inputSchema;
      assert.equal(schema.type, 'object');
      assert.deepEqual(Object.keys(schema.properties).sort(), ['args', 'command', 'stdin']);
      assert.deepEqual(schema.required, ['command']);
      assert.equal(schema.additionalProperties, false);
      assert.equal(schema.properties.args.type, 'array');
      assert.equal(schema.properties.command.type, 'string');
      assert.ok(tool.description.includes(ws), 'description names the workspace');
      assert.ok(tool.outputSchema, 'outputSchema');
      assert.equal(tool.annotations?.readOnlyHint, false);
      assert.equal(typeof tool.annotations?.destructiveHint, 'boolean');
    });

    test('calls a command', async () => {
      const sc = ran(await s.call({ command: 'echo', args: ['hello', 'world'] }), 0);
      assert.equal(sc.stdout, 'hello world\n');
      assert.equal(sc.stderr, '');
      assert.equal(sc.stdout_omitted_bytes, 0);
    });

    test('runs in the workspace', async () => {
      writeFileSync(join(ws, 'in-workspace.txt'), 'found\n');
      const sc = ran(await s.call(sh('pwd; cat in-workspace.txt')), 0);
      assert.equal(sc.stdout, `${ws}\nfound\n`);
    });

    test('feeds stdin, then EOF', async () => {
      const sc = ran(await s.call({ command: 'cat', stdin: 'line one\nline two\n' }), 0);
      assert.equal(sc.stdout, 'line one\nline two\n');
    });

    test('gives EOF when stdin is absent', async () => {
      const sc = ran(await s.call({ command: 'cat' }), 0);
      assert.equal(sc.stdout, '');
    });

    test('reports exit codes as data', async () => {
      for (const code of [1, 2, 42, 255]) {
        const sc = ran(await s.call(sh(`echo out; echo err >&2; exit ${code}`)), code);
        assert.equal(sc.stdout, 'out\n');
        assert.equal(sc.stderr, 'err\n');
      }
    });

    test('reports the signal that ended a program', async () => {
      const r = await s.call(sh('kill -KILL $$'));
      assert.equal(r.structuredContent.signal, 'SIGKILL');
      assert.equal(r.structuredContent.exit_code, -1);
      assert.equal(r.structuredContent.timed_out, false);
    });

    test('refuses an extra argument before running anything', async () => {
      const m = marker('extra');
      const r = await s.call({ ...sh(`touch ${m}`), cwd: '/' });
      assert.equal(r.isError, true);
      assert.match(textOf(r), /cwd/);
      const sc = ran(await s.call({ command: 'ls' }), 0);
      assert.ok(!sc.stdout.includes(m), 'the refused command ran');
    });

    // DESIGN.md §2.1 and STYLE.md: a refusal opens with "refused:" and says
    // what run_command takes.
    test('opens a refusal with "refused"', async () => {
      const r = await s.call({ command: 'true', cwd: '/' });
      assert.equal(firstWord(r), 'refused');
      assert.match(textOf(r), /unknown argument "cwd"; run_command takes only command, args and stdin/);
      assert.equal(r.structuredContent.exit_code, -1);
    });

    test('refuses mistyped and missing arguments', async () => {
      for (const args of [{ command: 'true', args: 'x' }, { command: 7 }, {}, { command: 'true', stdin: 3 }]) {
        const r = await s.call(args);
        assert.equal(r.isError, true, `${JSON.stringify(args)} was not refused: ${JSON.stringify(r).slice(0, 200)}`);
      }
    });

    test('reports a program that cannot start', async () => {
      failed(await s.call({ command: 'no-such-program-' + marker('x') }), 'failed');
    });

    test('returns JSON-RPC printed by a command as output', async () => {
      const line = '{"jsonrpc":"2.0","id":1,"result":{"content":[]}}';
      const sc = ran(await s.call({ command: 'echo', args: [line] }), 0);
      assert.equal(sc.stdout, line + '\n');
    });

    test('returns output that is not UTF-8 as valid JSON', async () => {
      const r = await s.call(sh("printf 'a\\377\\376\\000b'; printf '\\300' >&2"));
      const sc = ran(r, 0);
      assert.equal(typeof sc.stdout, 'string');
      assert.ok(sc.stdout.startsWith('a') && sc.stdout.endsWith('b'), JSON.stringify(sc.stdout));
    });

    test('sends progress notifications', async () => {
      const seen = [];
      const sc = ran(await s.call(sh('echo start; sleep 3; echo done'), { onprogress: (p) => seen.push(p) }), 0);
      assert.equal(sc.stdout, 'start\ndone\n');
      assert.ok(seen.length >= 2, `${seen.length} progress notifications in 3 s`);
      for (let i = 1; i < seen.length; i++) assert.ok(seen[i].progress > seen[i - 1].progress, 'progress increases');
      assert.equal(typeof seen[0].message, 'string');
    });

    test('cancels: nothing keeps running', async () => {
      const m = marker('cancel');
      const ac = new AbortController();
      // A loop with the marker as its name, and a setsid'd daemon that
      // left the call's process group.
      const script = `setsid sh -c 'while :; do sleep 0.2; done' ${m}-daemon & while :; do sleep 0.2; done`;
      const call = s.call({ command: 'sh', args: ['-c', script, m] }, { signal: ac.signal });
      call.catch(() => {});
      await waitFor(() => processesWith(`${m}-daemon`).length > 0 && processesWith(m).length >= 2, 15000, 'the command to start');
      ac.abort('test cancels');
      await assert.rejects(call);
      await waitFor(() => processesWith(m).length === 0, 10000, `no process with ${m} (left: ${processesWith(m)})`);
      ran(await s.call({ command: 'true' }), 0); // the session goes on
    });

    test('keeps stderr terse', () => {
      const lines = s.stderr().split('\n').filter(Boolean);
      assert.ok(lines.length <= 20, `${lines.length} stderr lines:\n${lines.slice(0, 30).join('\n')}`);
    });
  });

  describe(`TypeScript SDK, ${era.version}, limits`, () => {
    test('times out and keeps the partial output', async (t) => {
      const s = await era.connect(serverArgs(workspace(t), '--timeout', '2s'));
      t.after(() => s.close());
      const m = marker('timeout');
      const r = await s.call({ command: 'sh', args: ['-c', 'echo partial-out; echo partial-err >&2; while :; do sleep 0.2; done', m] });
      failed(r, 'timed');
      const sc = r.structuredContent;
      assert.equal(sc.timed_out, true);
      assert.equal(sc.stdout, 'partial-out\n');
      assert.equal(sc.stderr, 'partial-err\n');
      assert.ok(sc.duration_ms >= 2000, `duration_ms ${sc.duration_ms}`);
      assert.match(textOf(r), /partial-out/);
      await waitFor(() => processesWith(m).length === 0, 10000, `no process with ${m}`);
      ran(await s.call({ command: 'true' }), 0);
    });


    test('returns a result near the output cap', async (t) => {
      await bigOutput(t, era, 192);
    });

    // At the largest --max-output the server accepts (256 KiB), a result
    // must stay under the TypeScript SDK's 10 MiB limit, whatever the output.
    test('returns a result at the largest output cap', async (t) => {
      await bigOutput(t, era, 256);
    });

    // Escaping counts too: a NUL byte is 6 bytes of JSON ("\u0000") in
    // structuredContent, and 5 in the text block, which shows it as \x00
    // ("\\x00" in JSON): each stream appears twice.
    test('returns binary output at the largest output cap', async (t) => {
      const s = await era.connect(serverArgs(workspace(t), '--max-output', '256KiB'));
      t.after(() => s.close());
      const r = await s.call(sh('head -c 262144 /dev/zero; head -c 262144 /dev/zero >&2'));
      const sc = ran(r, 0);
      assert.equal(sc.stdout.length, 262144);
      assert.equal(sc.stderr.length, 262144);
      const size = Buffer.byteLength(JSON.stringify(r));
      assert.ok(size > 2 * (6 + 5) * 262144 && size < MESSAGE_LIMIT, `result of ${size} bytes`);
    });

    test('refuses an output cap above 256 KiB', async (t) => {
      await assert.rejects(era.connect(serverArgs(workspace(t), '--max-output', '4MiB')));
    });

    test('runs 8 calls at once', async (t) => {
      const ws = workspace(t);
      const s = await era.connect(serverArgs(ws, '--max-concurrent', '8'));
      t.after(() => s.close());
      // Each call checks in, then waits until all 8 have: that can only
      // happen if all 8 run at the same time. Each gives up after 20 s.
      const script = 'mkdir -p barrier; touch barrier/$0; i=0; ' +
        'while [ "$(ls barrier | wc -l)" -lt 8 ]; do i=$((i+1)); [ $i -gt 200 ] && { echo alone; exit 1; }; sleep 0.1; done; echo together';
      const results = await Promise.all([...Array(8).keys()].map((i) => s.call({ command: 'sh', args: ['-c', script, `call${i}`] })));
      for (const r of results) assert.equal(ran(r, 0).stdout, 'together\n');
    });
  });
}

async function bigOutput(t, era, kib) {
  const s = await era.connect(serverArgs(workspace(t), '--max-output', `${kib}KiB`));
  t.after(() => s.close());
  const cap = kib * 1024;
  const printed = 2 * cap;
  const r = await s.call(sh(`head -c ${printed} /dev/zero | tr '\\000' o; head -c ${printed} /dev/zero | tr '\\000' e >&2`));
  const sc = ran(r, 0);
  const size = Buffer.byteLength(JSON.stringify(r));
  assert.ok(size < MESSAGE_LIMIT, `result of ${size} bytes`);
  for (const [text, omitted, ch] of [[sc.stdout, sc.stdout_omitted_bytes, 'o'], [sc.stderr, sc.stderr_omitted_bytes, 'e']]) {
    assert.ok(omitted > 0 && omitted <= printed - cap, `omitted ${omitted}`);
    assert.ok(text.length >= cap - 1024 && text.length <= cap + 1024, `kept ${text.length}`);
    assert.ok(text.startsWith(ch.repeat(100)) && text.endsWith(ch.repeat(100)), 'head and tail kept');
  }
  ran(await s.call({ command: 'true' }), 0);
}
