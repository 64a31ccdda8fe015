'use strict';
const test = require('node:test');
const assert = require('node:assert/strict');
const childProcess = require('node:child_process');
const { EventEmitter } = require('node:events');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const launcher = require('../lib/launcher.js');

const PKG_DIR = path.join(__dirname, '..');
const HERE = launcher.packageName(process.platform, process.arch);

function tmpdir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsb-launcher-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function script(dir, name, body) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

// install lays out node_modules the way npm does: the launcher package and,
// unless binary is null, the platform package for this machine holding a
// fake binary (a shell script).
function install(t, binary) {
  const root = tmpdir(t);
  const nm = path.join(root, 'node_modules');
  const dest = path.join(nm, 'nanosandbox-mcp');
  fs.mkdirSync(dest, { recursive: true });
  for (const entry of ['package.json', 'bin', 'lib']) {
    fs.cpSync(path.join(PKG_DIR, entry), path.join(dest, entry), { recursive: true });
  }
  if (binary !== null) {
    const plat = path.join(nm, HERE);
    fs.mkdirSync(path.join(plat, 'bin'), { recursive: true });
    fs.writeFileSync(path.join(plat, 'package.json'), JSON.stringify({ name: HERE, version: '0.0.0' }));
    script(path.join(plat, 'bin'), 'nanosandbox-mcp', binary);
  }
  return { root, bin: path.join(dest, 'bin', 'nanosandbox-mcp.js') };
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (_) {
    return false;
  }
}

async function waitFor(cond, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (cond()) {
      return true;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return cond();
}

test('PLATFORMS is the platform table, one package per row', () => {
  const table = require('../lib/platforms.json');
  assert.deepEqual(
    launcher.PLATFORMS,
    Object.fromEntries(table.map((p) => [`${p.npm_os} ${p.npm_cpu}`, `nanosandbox-mcp-${p.npm_os}-${p.npm_cpu}`])),
  );
  assert.equal(Object.keys(launcher.PLATFORMS).length, table.length, 'a platform listed twice');
});

test('packageName maps every released platform and nothing else', () => {
  for (const [platform, arch, want] of [
    ['linux', 'x64', 'nanosandbox-mcp-linux-x64'],
    ['linux', 'arm64', 'nanosandbox-mcp-linux-arm64'],
    ['darwin', 'x64', 'nanosandbox-mcp-darwin-x64'],
    ['darwin', 'arm64', 'nanosandbox-mcp-darwin-arm64'],
    ['win32', 'x64', null],
    ['linux', 'ia32', null],
    ['freebsd', 'x64', null],
  ]) {
    assert.equal(launcher.packageName(platform, arch), want, `${platform}/${arch}`);
  }
});

test('binaryPath finds bin/nanosandbox-mcp inside the platform package', () => {
  const got = launcher.binaryPath('linux', 'arm64', (id) => {
    assert.equal(id, 'nanosandbox-mcp-linux-arm64/package.json');
    return '/x/node_modules/nanosandbox-mcp-linux-arm64/package.json';
  });
  assert.equal(got, path.join('/x/node_modules/nanosandbox-mcp-linux-arm64', 'bin', 'nanosandbox-mcp'));
});

test('binaryPath names the missing package and the fix', () => {
  const notFound = () => {
    const err = new Error('Cannot find module');
    err.code = 'MODULE_NOT_FOUND';
    throw err;
  };
  assert.throws(
    () => launcher.binaryPath('linux', 'x64', notFound),
    (err) => {
      assert.ok(err instanceof launcher.LaunchError);
      assert.match(err.message, /"nanosandbox-mcp-linux-x64" is not installed/);
      assert.match(err.message, /--omit=optional/);
      assert.match(err.message, /npm install nanosandbox-mcp-linux-x64/);
      return true;
    },
  );
});

test('npxInstall finds the npx cache directory the launcher runs from', () => {
  for (const [dir, want] of [
    ['/home/u/.npm/_npx/0a1b2c3d4e5f6a7b/node_modules/nanosandbox-mcp/lib', '/home/u/.npm/_npx/0a1b2c3d4e5f6a7b'],
    ['/tmp/my cache/_npx/ffee/node_modules/nanosandbox-mcp/lib', '/tmp/my cache/_npx/ffee'],
    ['/home/u/project/node_modules/nanosandbox-mcp/lib', null],
    ['/usr/lib/node_modules/nanosandbox-mcp/lib', null],
  ]) {
    assert.equal(launcher.npxInstall(dir), want, dir);
  }
});

test('missingMessage inside npx\'s cache says to remove that install', () => {
  const msg = launcher.missingMessage('nanosandbox-mcp-linux-x64',
    "/home/u/.npm/_npx/0a1b2c3d/node_modules/nanosandbox-mcp/lib");
  assert.match(msg, /npx keeps reusing this install/);
  assert.match(msg, /rm -rf \/home\/u\/\.npm\/_npx\/0a1b2c3d /);
  assert.match(msg, /~\/\.npm\/_npx/);
  const quoted = launcher.missingMessage('nanosandbox-mcp-linux-x64',
    "/home/o'neil/my cache/_npx/ab/node_modules/nanosandbox-mcp/lib");
  assert.match(quoted, /rm -rf '\/home\/o'\\''neil\/my cache\/_npx\/ab' /);
  const project = launcher.missingMessage('nanosandbox-mcp-linux-x64', '/p/node_modules/nanosandbox-mcp/lib');
  assert.doesNotMatch(project, /npx/);
});

test('binaryPath passes other resolve errors through', () => {
  const boom = new Error('boom');
  assert.throws(() => launcher.binaryPath('linux', 'x64', () => { throw boom; }), (err) => err === boom);
});

test('binaryPath refuses Windows and unknown platforms with a reason', () => {
  assert.throws(() => launcher.binaryPath('win32', 'x64', () => 'unused'), /Windows is not supported/);
  assert.throws(() => launcher.binaryPath('linux', 'ia32', () => 'unused'), /no binary for linux\/ia32.*\n.*linux\/x64/);
});

test('run settles with the exit code', async (t) => {
  const bin = script(tmpdir(t), 'bin', 'exit 7');
  assert.deepEqual(await launcher.run(bin, [], { stdio: 'ignore' }), { code: 7, signal: null });
});

test('run settles with the terminating signal', async (t) => {
  const bin = script(tmpdir(t), 'bin', 'kill -TERM $$');
  assert.deepEqual(await launcher.run(bin, [], { stdio: 'ignore' }), { code: null, signal: 'SIGTERM' });
});

test('run rejects when the binary cannot start', async (t) => {
  const file = path.join(tmpdir(t), 'not-executable');
  fs.writeFileSync(file, 'x', { mode: 0o644 });
  await assert.rejects(launcher.run(file, [], { stdio: 'ignore' }), { code: 'EACCES' });
});

for (const sig of launcher.FORWARDED_SIGNALS) {
  test(`run forwards ${sig} and then removes its handler`, async (t) => {
    const dir = tmpdir(t);
    const ready = path.join(dir, 'ready');
    const bin = script(dir, 'bin', `trap 'exit 42' ${sig.slice(3)}; : > ${ready}; while :; do sleep 0.05; done`);
    const proc = new EventEmitter();
    const done = launcher.run(bin, [], { stdio: 'ignore', proc });
    assert.equal(proc.listenerCount(sig), 1);
    assert.ok(await waitFor(() => fs.existsSync(ready), 5000), 'child never started');
    proc.emit(sig);
    assert.deepEqual(await done, { code: 42, signal: null });
    assert.equal(proc.listenerCount(sig), 0);
  });
}

test('run stops the child when the parent changes', async (t) => {
  const bin = script(tmpdir(t), 'bin', 'exec sleep 30');
  let ppid = 1000;
  const done = launcher.run(bin, [], { stdio: 'ignore', ppid: 1000, getPpid: () => ppid, pollMs: 20 });
  setTimeout(() => { ppid = 1; }, 100);
  assert.deepEqual(await done, { code: null, signal: 'SIGTERM' });
});

test('run kills a child that ignores SIGTERM after the grace period', async (t) => {
  const dir = tmpdir(t);
  const ready = path.join(dir, 'ready');
  const bin = script(dir, 'bin', `trap '' TERM; : > ${ready}; while :; do sleep 0.05; done`);
  let ppid = 1000;
  const done = launcher.run(bin, [], { stdio: 'ignore', ppid: 1000, getPpid: () => ppid, pollMs: 20, graceMs: 200 });
  assert.ok(await waitFor(() => fs.existsSync(ready), 5000), 'child never started');
  ppid = 1;
  assert.deepEqual(await done, { code: null, signal: 'SIGKILL' });
});

test('exitLike exits with the code, or re-raises the signal', () => {
  const calls = [];
  const proc = { pid: 4242, exit: (c) => calls.push(['exit', c]), kill: (p, s) => calls.push(['kill', p, s]) };
  launcher.exitLike({ code: 3, signal: null }, proc);
  launcher.exitLike({ code: null, signal: 'SIGTERM' }, proc);
  assert.deepEqual(calls, [['exit', 3], ['kill', 4242, 'SIGTERM'], ['exit', 143]]);
});

test('the package has no install scripts and no dependencies', () => {
  const manifest = JSON.parse(fs.readFileSync(path.join(PKG_DIR, 'package.json'), 'utf8'));
  assert.equal(manifest.dependencies, undefined);
  for (const hook of ['preinstall', 'install', 'postinstall', 'prepare']) {
    assert.equal((manifest.scripts || {})[hook], undefined, hook);
  }
  assert.deepEqual(Object.keys(manifest.optionalDependencies).sort(), Object.values(launcher.PLATFORMS).sort());
  for (const v of Object.values(manifest.optionalDependencies)) {
    assert.equal(v, manifest.version);
  }
});

// The tests below run the real bin script under node, as npx would.
const e2e = { skip: HERE ? false : `no platform package for ${process.platform}/${process.arch}` };

test('stdin, stdout, stderr and arguments pass through; the code comes back', e2e, (t) => {
  const { bin } = install(t, 'cat; echo "args:$*"; echo err >&2; exit 3');
  const r = childProcess.spawnSync(process.execPath, [bin, '--workspace', 'a b'], { input: 'hello\n' });
  assert.equal(r.stdout.toString(), 'hello\nargs:--workspace a b\n');
  assert.equal(r.stderr.toString(), 'err\n');
  assert.equal(r.status, 3);
});

test('a signal that ends the binary ends the launcher', e2e, (t) => {
  const { bin } = install(t, 'kill -TERM $$');
  const r = childProcess.spawnSync(process.execPath, [bin]);
  assert.equal(r.signal, 'SIGTERM');
});

test('SIGTERM to the launcher reaches the binary', e2e, async (t) => {
  const dir = tmpdir(t);
  const ready = path.join(dir, 'ready');
  const { bin } = install(t, `trap 'echo got-term; exit 9' TERM; : > ${ready}; while :; do sleep 0.05; done`);
  const child = childProcess.spawn(process.execPath, [bin], { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  assert.ok(await waitFor(() => fs.existsSync(ready), 5000), 'binary never started');
  child.kill('SIGTERM');
  const code = await new Promise((r) => child.on('exit', (c) => r(c)));
  assert.equal(code, 9);
  assert.equal(out, 'got-term\n');
});

test('a missing platform package exits 1 with the fix', e2e, (t) => {
  const { bin } = install(t, null);
  const r = childProcess.spawnSync(process.execPath, [bin, '--version']);
  assert.equal(r.status, 1);
  assert.equal(r.stdout.length, 0);
  assert.match(r.stderr.toString(), new RegExp(`"${HERE}" is not installed`));
  assert.match(r.stderr.toString(), /--omit=optional/);
});

test('an orphaned launcher stops the binary', e2e, async (t) => {
  const dir = tmpdir(t);
  const pidFile = path.join(dir, 'pid');
  const { bin } = install(t, `echo $$ > ${pidFile}.tmp; mv ${pidFile}.tmp ${pidFile}; exec sleep 30`);
  // The shell starts the launcher in the background and exits soon after, so
  // the launcher is reparented, like one whose npx was killed.
  const sh = childProcess.spawnSync('sh', ['-c', `"${process.execPath}" "${bin}" </dev/null >/dev/null 2>&1 & sleep 1`]);
  assert.equal(sh.status, 0);
  assert.ok(await waitFor(() => fs.existsSync(pidFile), 5000), 'binary never started');
  const pid = Number(fs.readFileSync(pidFile, 'utf8'));
  t.after(() => { if (alive(pid)) process.kill(pid, 'SIGKILL'); });
  assert.ok(await waitFor(() => !alive(pid), 5000), `binary ${pid} still running 5s after its launcher was orphaned`);
});
