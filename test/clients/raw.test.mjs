// Raw JSON-RPC over the server's stdio: what no client library sends on
// purpose (malformed lines, batches, 16 MiB lines), and each protocol era
// written out message by message, so the wire itself is asserted.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { LEGACY, MODERN, marker, processesWith, serverArgs, waitFor, workspace } from './lib/harness.mjs';
import { RawSession } from './lib/raw.mjs';

const clientInfo = { name: 'nsb-raw', version: '1.0.0' };
const modernMeta = {
  'io.modelcontextprotocol/protocolVersion': MODERN,
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': clientInfo,
};

async function initialize(s, version = LEGACY) {
  const r = await s.request('init', 'initialize', { protocolVersion: version, capabilities: {}, clientInfo });
  assert.ok(r.result, `initialize: ${JSON.stringify(r)}`);
  s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  return r.result;
}

function call(args, meta) {
  return { name: 'run_command', arguments: args, ...(meta ? { _meta: meta } : {}) };
}

describe('framing: the session survives malformed input', () => {
  const ws = workspace(after);
  let s;
  before(async () => {
    s = new RawSession(serverArgs(ws));
    await initialize(s);
  });
  after(() => s.close());

  const big = 'x'.repeat(17 * 1024 * 1024);
  const cases = [
    { name: 'a line that is not JSON', line: 'hello, server', id: null, code: -32700 },
    { name: 'a truncated object', line: '{"jsonrpc":"2.0","id":"t","method":"tools/li', id: null, code: -32700 },
    { name: 'a number', line: '42', id: null, code: -32600 },
    { name: 'a string', line: '"tools/list"', id: null, code: -32600 },
    { name: 'an object without jsonrpc', line: '{"id":"nv","method":"tools/list"}', id: 'nv', code: -32600 },
    { name: 'the wrong version', line: '{"jsonrpc":"1.0","id":"v1","method":"tools/list"}', id: 'v1', code: -32600 },
    { name: 'a method that is not a string', line: '{"jsonrpc":"2.0","id":"m","method":7}', id: 'm', code: -32600 },
    { name: 'an object as id', line: '{"jsonrpc":"2.0","id":{"x":1},"method":"tools/list"}', id: null, code: -32600 },
    { name: 'an empty batch', line: '[]', id: null, code: -32600 },
    { name: 'a batch', line: '[{"jsonrpc":"2.0","id":"b1","method":"tools/list"},{"jsonrpc":"2.0","method":"notifications/initialized"}]', id: 'b1', code: -32600 },
    { name: 'an unknown method', line: '{"jsonrpc":"2.0","id":"um","method":"no/such/method"}', id: 'um', code: -32601 },
    { name: 'an unknown notification', line: '{"jsonrpc":"2.0","method":"notifications/no_such_thing"}' },
    { name: 'a malformed response', line: '{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"x"}}' },
    { name: 'blank lines', line: '\n   \n\t' },
    { name: 'NUL bytes and a byte order mark', line: '\u0000\u0000\n\ufeff{}', id: null, code: -32700 },
    {
      name: 'a line over 16 MiB',
      line: JSON.stringify({ jsonrpc: '2.0', id: 'big', method: 'tools/call', params: call({ command: 'cat', stdin: big }) }),
      id: 'big', code: -32600,
    },
  ];
  for (const [i, c] of cases.entries()) {
    test(`${c.name}, then a call`, async () => {
      s.send(c.line);
      if (c.code !== undefined) {
        const r = await s.reply(c.id);
        assert.equal(r.error?.code, c.code, JSON.stringify(r).slice(0, 300));
        assert.equal(typeof r.error.message, 'string');
      }
      // After each one the session runs a real command.
      const r = await s.request(`after-${i}`, 'tools/call', call({ command: 'echo', args: [`ok ${i}`] }));
      assert.equal(r.result?.structuredContent?.stdout, `ok ${i}\n`, JSON.stringify(r).slice(0, 300));
    });
  }

  test('a CRLF line is taken', async () => {
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 'crlf', method: 'tools/list' }) + '\r');
    const r = await s.reply('crlf');
    assert.equal(r.result.tools[0].name, 'run_command');
  });

  test('bad input is logged on stderr, tersely', async () => {
    assert.match(s.stderr, /over the size limit/);
    const lines = s.stderr.split('\n').filter(Boolean);
    assert.ok(lines.length <= 30, `${lines.length} stderr lines`);
  });
});

describe(`${MODERN} over raw stdio`, () => {
  const ws = workspace(after);
  let s;
  before(() => { s = new RawSession(serverArgs(ws)); });
  after(() => s.close());

  test('server/discover without initialize', async () => {
    const r = await s.request(1, 'server/discover', { _meta: modernMeta });
    assert.ok(r.result, JSON.stringify(r));
    assert.ok(r.result.supportedVersions.includes(MODERN), JSON.stringify(r.result.supportedVersions));
    assert.ok(r.result.capabilities.tools, 'tools capability');
    assert.equal(r.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'nanosandbox-mcp');
  });

  test('tools/list and tools/call carry the version in _meta', async () => {
    const l = await s.request(2, 'tools/list', { _meta: modernMeta });
    assert.deepEqual(l.result.tools.map((t) => t.name), ['run_command']);
    const r = await s.request(3, 'tools/call', call({ command: 'sh', args: ['-c', 'echo modern; exit 4'] }, modernMeta));
    assert.equal(r.result.structuredContent.exit_code, 4);
    assert.equal(r.result.structuredContent.stdout, 'modern\n');
    assert.equal(r.result.isError ?? false, false);
    assert.equal(r.result._meta?.['io.modelcontextprotocol/serverInfo']?.name, 'nanosandbox-mcp');
  });

  test('progress for a progress token', async () => {
    const before = s.notifications.length;
    const r = await s.request(4, 'tools/call', call({ command: 'sleep', args: ['2.5'] }, { ...modernMeta, progressToken: 'p4' }));
    assert.equal(r.result.structuredContent.exit_code, 0);
    const progress = s.notifications.slice(before).filter((n) => n.method === 'notifications/progress' && n.params.progressToken === 'p4');
    assert.ok(progress.length >= 2, `${progress.length} progress notifications`);
  });

  test('cancellation kills the command', async () => {
    const m = marker('raw-cancel');
    s.send({ jsonrpc: '2.0', id: 5, method: 'tools/call', params: call({ command: 'sh', args: ['-c', 'while :; do sleep 0.2; done', m] }, modernMeta) });
    await waitFor(() => processesWith(m).length > 0, 15000, 'the command to start');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5, reason: 'test' } });
    await waitFor(() => processesWith(m).length === 0, 10000, `no process with ${m}`);
  });

  test('ping is gone from this era', async () => {
    const r = await s.request(6, 'ping', { _meta: modernMeta });
    assert.equal(r.error?.code, -32601, JSON.stringify(r));
  });

  test('an unknown version is refused with the supported ones', async () => {
    const r = await s.request(7, 'tools/list', { _meta: { ...modernMeta, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' } });
    assert.equal(r.error?.code, -32022, JSON.stringify(r));
    assert.ok(r.error.data.supported.includes(MODERN));
  });

  test('missing client capabilities are invalid params', async () => {
    const r = await s.request(8, 'tools/list', { _meta: { 'io.modelcontextprotocol/protocolVersion': MODERN } });
    assert.equal(r.error?.code, -32602, JSON.stringify(r));
  });
});

describe(`${LEGACY} over raw stdio`, () => {
  const ws = workspace(after);

  test('initialize echoes 2025-11-25 and the server says who it is', async () => {
    const s = new RawSession(serverArgs(ws));
    const r = await initialize(s);
    assert.equal(r.protocolVersion, LEGACY);
    assert.equal(r.serverInfo.name, 'nanosandbox-mcp');
    assert.ok(r.capabilities.tools);
    const c = await s.request(1, 'tools/call', call({ command: 'echo', args: ['legacy'] }));
    assert.equal(c.result.structuredContent.stdout, 'legacy\n');
    assert.equal(c.result._meta?.['io.modelcontextprotocol/serverInfo'], undefined, 'no modern _meta in the legacy era');
    await s.close();
  });

  test('initialize never answers with a sessionless version', async () => {
    const s = new RawSession(serverArgs(ws));
    const r = await initialize(s, MODERN);
    assert.equal(r.protocolVersion, LEGACY);
    await s.close();
  });

  test('a call before initialize is an error, and the session goes on', async () => {
    const s = new RawSession(serverArgs(ws));
    const r = await s.request(1, 'tools/call', call({ command: 'true' }));
    assert.ok(r.error, JSON.stringify(r));
    await initialize(s);
    const c = await s.request(2, 'tools/call', call({ command: 'true' }));
    assert.equal(c.result.structuredContent.exit_code, 0);
    await s.close();
  });

  test('closing stdin ends the server', async () => {
    const s = new RawSession(serverArgs(ws));
    await initialize(s);
    const exit = await s.close();
    assert.equal(exit.code, 0);
  });
});
