// The MCP conformance suite (server scenarios) against the binary, through
// bridge.mjs: the suite speaks Streamable HTTP only. Scenarios that test
// features this server does not have, or the HTTP layer (which here is
// the bridge, not the server), are listed as skipped with the reason.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from 'node:test';

import { LEGACY, MODERN, here, node22, serverArgs, serverBin, workspace } from './lib/harness.mjs';

const conformance = join(here, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js');

// Scenarios run, each with the check that must be among its successes.
const applicable = [
  { scenario: 'server-initialize', version: LEGACY, check: 'server-initialize' },
  { scenario: 'ping', version: LEGACY, check: 'ping' },
  { scenario: 'tools-list', version: LEGACY, check: 'tools-list' },
  { scenario: 'tools-list', version: MODERN, check: 'tools-list' },
  { scenario: 'caching', version: MODERN, check: 'sep-2549-tools-list-caching-hints' },
];

// Why each other scenario does not apply. A scenario missing here fails
// the suite, so a new one in a new release is looked at, not ignored.
const testTool = 'calls a fixture tool of the reference test server by name; this server has only run_command';
const notApplicable = {
  'server-session-lifecycle': 'Streamable HTTP sessions (DELETE, 404 after): the bridge\'s HTTP layer, not the stdio server',
  'server-stateless': 'needs fixture tools (test_missing_capability, test_streaming_elicitation, test_logging_tool, test_trigger_tool_change) and list-changed subscriptions; its discover, -32022 and removed-method checks are in raw.test.mjs',
  'logging-set-level': 'the server offers no logging capability',
  'completion-complete': 'no prompts or resource templates to complete',
  'tools-call-simple-text': testTool,
  'tools-call-image': testTool,
  'tools-call-audio': testTool,
  'tools-call-embedded-resource': testTool,
  'tools-call-mixed-content': testTool,
  'tools-call-with-logging': testTool,
  'tools-call-error': `${testTool} (isError results are in sdk.test.mjs)`,
  'tools-call-with-progress': `${testTool} (progress is in sdk.test.mjs)`,
  'tools-call-sampling': 'the server never asks the client for sampling',
  'tools-call-elicitation': 'the server never asks the client for elicitation',
  'json-schema-2020-12': testTool,
  'elicitation-sep1034-defaults': 'the server never asks the client for elicitation',
  'elicitation-sep1330-enums': 'the server never asks the client for elicitation',
  'server-sse-polling': 'SSE stream resumption: the bridge\'s HTTP layer, not the stdio server',
  'server-sse-multiple-streams': 'concurrent SSE streams: the bridge\'s HTTP layer, not the stdio server',
  'resources-list': 'the server has no resources',
  'resources-read-text': 'the server has no resources',
  'resources-read-binary': 'the server has no resources',
  'resources-templates-read': 'the server has no resources',
  'resources-subscribe': 'the server has no resources',
  'resources-unsubscribe': 'the server has no resources',
  'sep-2164-resource-not-found': 'the server has no resources',
  'prompts-list': 'the server has no prompts',
  'prompts-get-simple': 'the server has no prompts',
  'prompts-get-with-args': 'the server has no prompts',
  'prompts-get-embedded-resource': 'the server has no prompts',
  'prompts-get-with-image': 'the server has no prompts',
  'dns-rebinding-protection': 'Origin and Host checks of an HTTP listener; the server listens on nothing (the bridge checks Origin)',
  'http-header-validation': 'HTTP headers: the bridge\'s HTTP layer, not the stdio server',
  'http-custom-header-server-validation': 'HTTP headers: the bridge\'s HTTP layer, not the stdio server',
  'sep-2640-skills-directory': 'skills extension: the server has no skills',
  'sep-2640-skills-enumeration': 'skills extension: the server has no skills',
  'sep-2640-skills-manifest': 'skills extension: the server has no skills',
};
const tasks = 'tasks extension: the server runs each call to completion, it has no tasks';
const inputRequired = 'input_required results: the server never asks the client for input';

function reasonFor(name) {
  if (notApplicable[name]) return notApplicable[name];
  if (name.startsWith('tasks-')) return tasks;
  if (name.startsWith('input-required-result-')) return inputRequired;
  return undefined;
}

function runConformance(args) {
  return new Promise((resolve) => {
    execFile(node22, [conformance, ...args], { timeout: 120000, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
      resolve({ code: err ? (err.code ?? 1) : 0, stdout, stderr });
    });
  });
}

// The server scenarios this version of the suite has, by name.
const { stdout: listing } = await runConformance(['list', '--server']);
const scenarios = [...new Set([...listing.matchAll(/^\s*-\s+(\S+)\s+\[/gm)].map((m) => m[1]))];

describe('conformance through the stdio-to-HTTP bridge', () => {
  const ws = workspace(after);
  let bridge;
  let url;
  before(async () => {
    bridge = spawn(node22, [join(here, 'bridge.mjs'), '--', serverBin, ...serverArgs(ws)], { stdio: ['ignore', 'pipe', 'inherit'] });
    url = await new Promise((resolve, reject) => {
      bridge.on('exit', (code) => reject(new Error(`bridge exited with ${code}`)));
      createInterface({ input: bridge.stdout }).once('line', (line) => {
        const m = /^listening on (\S+)$/.exec(line);
        if (m) resolve(m[1]);
        else reject(new Error(`bridge said ${line}`));
      });
    });
  });
  after(() => bridge?.kill('SIGTERM'));

  for (const { scenario, version, check } of applicable) {
    test(`${scenario} (${version})`, async () => {
      const out = mkdtempSync(join(tmpdir(), 'nsb-conformance-'));
      try {
        const r = await runConformance(['server', '--url', url, '--scenario', scenario, '--spec-version', version, '-o', out]);
        assert.equal(r.code, 0, `conformance exited ${r.code}:\n${r.stdout.slice(-3000)}\n${r.stderr.slice(-2000)}`);
        const [dir] = readdirSync(out);
        const checks = JSON.parse(readFileSync(join(out, dir, 'checks.json'), 'utf8'));
        const bad = checks.filter((c) => !['SUCCESS', 'SKIPPED', 'INFO'].includes(c.status));
        assert.deepEqual(bad.map((c) => `${c.id}: ${c.status} ${c.errorMessage ?? ''}`), []);
        assert.ok(checks.some((c) => c.id === check && c.status === 'SUCCESS'), `no successful ${check} check in ${checks.map((c) => c.id)}`);
      } finally {
        rmSync(out, { recursive: true, force: true });
      }
    });
  }
});

describe('conformance scenarios that do not apply', () => {
  test('the suite lists its server scenarios', () => {
    for (const { scenario } of applicable) assert.ok(scenarios.includes(scenario), `${scenario} is not in:\n${listing}`);
  });
  const run = new Set(applicable.map((a) => a.scenario));
  for (const name of scenarios.filter((s) => !run.has(s))) {
    const reason = reasonFor(name);
    if (reason) test(name, { skip: reason }, () => {});
    else test(`${name} has a reason not to run`, () => assert.fail(`new scenario ${name}: run it or say why it does not apply`));
  }
});
