'use strict';
// Tests of stage.js, set-version.js and publish.js on a fake GoReleaser dist
// and a fake npm client.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const { normalizeVersion, setVersion } = require('./set-version.js');
const { stage, parseArgs: parseStageArgs } = require('./stage.js');
const { distTag, order, parseArgs: parsePublishArgs, publish, tokenConfig } = require('./publish.js');

const LAUNCHER_DIR = path.join(__dirname, '..', 'nanosandbox-mcp');
const PLATFORMS = require('../nanosandbox-mcp/lib/platforms.json');

function tmpdir(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsb-npm-scripts-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// fakeDist writes dist/artifacts.json and dist/metadata.json under root with
// one small "binary" per platform of the table (its content names it).
function fakeDist(root, { version = '1.2.3', skip = null } = {}) {
  const dist = path.join(root, 'dist');
  const artifacts = [{ name: 'metadata.json', path: 'dist/metadata.json', type: 'Metadata' }];
  for (const { goos, goarch } of PLATFORMS) {
    if (skip === `${goos}/${goarch}`) {
      continue;
    }
    const rel = `dist/nanosandbox-mcp_${goos}_${goarch}/nanosandbox-mcp`;
    fs.mkdirSync(path.join(root, path.dirname(rel)), { recursive: true });
    fs.writeFileSync(path.join(root, rel), `binary ${goos}/${goarch}\n`, { mode: 0o644 });
    artifacts.push({ name: 'nanosandbox-mcp', path: rel, goos, goarch, type: 'Binary' });
    artifacts.push({ name: `x_${goos}_${goarch}.tar.gz`, path: `dist/x_${goos}_${goarch}.tar.gz`, goos, goarch, type: 'Archive' });
  }
  fs.writeFileSync(path.join(dist, 'artifacts.json'), JSON.stringify(artifacts));
  fs.writeFileSync(path.join(dist, 'metadata.json'), JSON.stringify({ project_name: 'nanosandbox-mcp', version }));
  return dist;
}

function readJSON(file) {
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

test('normalizeVersion accepts semver and git tags, refuses the rest', () => {
  assert.equal(normalizeVersion('v1.2.3'), '1.2.3');
  assert.equal(normalizeVersion('0.1.1-dev'), '0.1.1-dev');
  assert.equal(normalizeVersion('1.0.0-rc.1'), '1.0.0-rc.1');
  for (const bad of ['1.2', 'latest', '1.2.3.4', '']) {
    assert.throws(() => normalizeVersion(bad), /not semver/, bad);
  }
});

test('setVersion stamps the version and pins the platform packages', (t) => {
  const dir = tmpdir(t);
  fs.cpSync(path.join(LAUNCHER_DIR, 'package.json'), path.join(dir, 'package.json'));
  setVersion(dir, 'v2.0.0-rc.1');
  const m = readJSON(path.join(dir, 'package.json'));
  assert.equal(m.version, '2.0.0-rc.1');
  assert.deepEqual(Object.values(m.optionalDependencies), Array(4).fill('2.0.0-rc.1'));
});

test('stage builds four platform packages and the launcher', (t) => {
  const root = tmpdir(t);
  const dist = fakeDist(root);
  const out = path.join(root, 'out');
  const dirs = stage({ dist, out, version: null });
  assert.deepEqual(dirs.map((d) => path.basename(d)), [
    'nanosandbox-mcp-linux-x64',
    'nanosandbox-mcp-linux-arm64',
    'nanosandbox-mcp-darwin-x64',
    'nanosandbox-mcp-darwin-arm64',
    'nanosandbox-mcp',
  ]);
  for (const [name, os_, cpu, goos, goarch] of [
    ['nanosandbox-mcp-linux-x64', 'linux', 'x64', 'linux', 'amd64'],
    ['nanosandbox-mcp-linux-arm64', 'linux', 'arm64', 'linux', 'arm64'],
    ['nanosandbox-mcp-darwin-x64', 'darwin', 'x64', 'darwin', 'amd64'],
    ['nanosandbox-mcp-darwin-arm64', 'darwin', 'arm64', 'darwin', 'arm64'],
  ]) {
    const m = readJSON(path.join(out, name, 'package.json'));
    assert.equal(m.name, name);
    assert.equal(m.version, '1.2.3');
    assert.deepEqual(m.os, [os_]);
    assert.deepEqual(m.cpu, [cpu]);
    assert.deepEqual(m.files, ['bin/nanosandbox-mcp']);
    assert.equal(m.bin, undefined, 'a platform package must not link a bin of its own');
    assert.equal(m.scripts, undefined);
    const bin = path.join(out, name, 'bin', 'nanosandbox-mcp');
    assert.equal(fs.readFileSync(bin, 'utf8'), `binary ${goos}/${goarch}\n`);
    assert.equal(fs.statSync(bin).mode & 0o777, 0o755);
  }
  const launcher = readJSON(path.join(out, 'nanosandbox-mcp', 'package.json'));
  assert.equal(launcher.version, '1.2.3');
  assert.equal(launcher.scripts, undefined, 'the published launcher runs no scripts');
  assert.deepEqual(launcher.optionalDependencies, {
    'nanosandbox-mcp-darwin-arm64': '1.2.3',
    'nanosandbox-mcp-darwin-x64': '1.2.3',
    'nanosandbox-mcp-linux-arm64': '1.2.3',
    'nanosandbox-mcp-linux-x64': '1.2.3',
  });
  assert.ok(fs.existsSync(path.join(out, 'nanosandbox-mcp', 'lib', 'launcher.js')));
  assert.ok(!fs.existsSync(path.join(out, 'nanosandbox-mcp', 'test')));
  // The source manifest is left alone.
  assert.equal(readJSON(path.join(LAUNCHER_DIR, 'package.json')).version, '0.0.0');
});

test('stage makes one package per row of the platform table', (t) => {
  const root = tmpdir(t);
  const out = path.join(root, 'out');
  stage({ dist: fakeDist(root), out, version: null });
  for (const p of PLATFORMS) {
    const name = `nanosandbox-mcp-${p.npm_os}-${p.npm_cpu}`;
    const m = readJSON(path.join(out, name, 'package.json'));
    assert.deepEqual([m.os, m.cpu], [[p.npm_os], [p.npm_cpu]], name);
    assert.equal(fs.readFileSync(path.join(out, name, 'bin', 'nanosandbox-mcp'), 'utf8'), `binary ${p.goos}/${p.goarch}\n`);
  }
  const launcher = readJSON(path.join(out, 'nanosandbox-mcp', 'package.json'));
  assert.equal(Object.keys(launcher.optionalDependencies).length, PLATFORMS.length);
  // The launcher reads the table at run time: it ships with it.
  assert.deepEqual(readJSON(path.join(out, 'nanosandbox-mcp', 'lib', 'platforms.json')), PLATFORMS);
});

test('stage refuses a dist that lacks a platform', (t) => {
  const root = tmpdir(t);
  const dist = fakeDist(root, { skip: 'darwin/arm64' });
  assert.throws(() => stage({ dist, out: path.join(root, 'out'), version: null }), /no binary for darwin\/arm64/);
});

test('stage takes --version over metadata.json', (t) => {
  const root = tmpdir(t);
  const dist = fakeDist(root, { version: '0.0.1-dev' });
  const out = path.join(root, 'out');
  stage({ dist, out, version: 'v3.1.4' });
  assert.equal(readJSON(path.join(out, 'nanosandbox-mcp-linux-x64', 'package.json')).version, '3.1.4');
});

test('stage parses its arguments', () => {
  assert.deepEqual(parseStageArgs(['--dist', 'd', '--out=o']), { dist: 'd', out: 'o', version: null });
  assert.deepEqual(parseStageArgs([]), { dist: 'dist', out: path.join('dist', 'npm'), version: null });
  assert.throws(() => parseStageArgs(['--nope']), /unknown argument/);
  assert.throws(() => parseStageArgs(['--dist']), /needs a value/);
});

test('distTag sends pre-releases to next unless told', () => {
  assert.equal(distTag('1.2.3', null), 'latest');
  assert.equal(distTag('1.2.3-rc.1', null), 'next');
  assert.equal(distTag('1.2.3-rc.1', 'latest'), 'latest');
});

test('publish parses its arguments', () => {
  assert.deepEqual(parsePublishArgs(['--registry', 'http://127.0.0.1:1/', '--provenance', 'x']), {
    registry: 'http://127.0.0.1:1/', tag: null, provenance: true, dryRun: false, dir: 'x',
  });
  assert.throws(() => parsePublishArgs(['--registry']), /needs a value/);
  assert.throws(() => parsePublishArgs(['--bogus']), /unknown argument/);
});

test('publish goes platforms first, launcher last, skipping what is there', (t) => {
  const root = tmpdir(t);
  const out = path.join(root, 'out');
  stage({ dist: fakeDist(root), out, version: null });
  assert.deepEqual(order(out).map((p) => p.name), [
    'nanosandbox-mcp-darwin-arm64',
    'nanosandbox-mcp-darwin-x64',
    'nanosandbox-mcp-linux-arm64',
    'nanosandbox-mcp-linux-x64',
    'nanosandbox-mcp',
  ]);

  const calls = [];
  const registry = new Set(['nanosandbox-mcp-darwin-x64@1.2.3']);
  const fakeNpm = (args) => {
    calls.push(args);
    if (args[0] === 'view') {
      const id = args[1];
      if (registry.has(id)) {
        return { status: 0, stdout: '1.2.3\n', stderr: '' };
      }
      if (id.startsWith('nanosandbox-mcp-linux')) {
        // A package the registry has never seen.
        return { status: 1, stdout: '', stderr: 'npm error code E404\nnpm error 404 Not Found' };
      }
      return { status: 0, stdout: '', stderr: '' }; // known package, other versions only
    }
    const pkg = readJSON(path.join(args[1], 'package.json'));
    registry.add(`${pkg.name}@${pkg.version}`);
    return { status: 0, stdout: '', stderr: '' };
  };
  const logged = [];
  const done = publish({ dir: out, registry: 'http://127.0.0.1:9/', tag: null, provenance: true, dryRun: false }, fakeNpm,
    (l) => logged.push(l), { NPM_TOKEN: 'secret-token' });
  assert.deepEqual(done, [
    'publish nanosandbox-mcp-darwin-arm64@1.2.3',
    'skip nanosandbox-mcp-darwin-x64@1.2.3',
    'publish nanosandbox-mcp-linux-arm64@1.2.3',
    'publish nanosandbox-mcp-linux-x64@1.2.3',
    'publish nanosandbox-mcp@1.2.3',
  ]);
  const publishes = calls.filter((a) => a[0] === 'publish');
  // Two packages are new to the registry: a bootstrap, every publish with the token.
  assert.deepEqual(publishes[0].slice(2, -2), ['--access', 'public', '--tag', 'latest', '--registry', 'http://127.0.0.1:9/', '--provenance']);
  for (const p of publishes) {
    assert.equal(p[p.length - 2], '--userconfig');
  }
  assert.match(logged[0], /^bootstrap: nanosandbox-mcp-linux-arm64, nanosandbox-mcp-linux-x64 not on the registry yet/);
  assert.match(logged[logged.length - 1], /npm trust github nanosandbox-mcp-linux-x64 --repo nanosandbox\/nanosandbox-mcp --file release.yml --env npm --allow-publish --yes --registry http:\/\/127.0.0.1:9\//);
  assert.ok(!fs.existsSync(publishes[0][publishes[0].length - 1]), 'the temporary npm config is removed');
  for (const c of calls.filter((a) => a[0] === 'view')) {
    assert.deepEqual(c.slice(-2), ['--registry', 'http://127.0.0.1:9/']);
  }
  // Run again: everything is there now, and the token is not needed.
  const warned = [];
  const again = publish({ dir: out, registry: null, tag: null, provenance: false, dryRun: false }, fakeNpm, (l) => warned.push(l), { NPM_TOKEN: 'x' });
  assert.ok(again.every((l) => l.startsWith('skip ')), again.join('\n'));
  assert.match(warned[0], /^warning: NPM_TOKEN is set, but every package is on the registry/);
});

test('a first publish without NPM_TOKEN publishes nothing and says how to bootstrap', (t) => {
  const root = tmpdir(t);
  const out = path.join(root, 'out');
  stage({ dist: fakeDist(root), out, version: null });
  const calls = [];
  const fakeNpm = (args) => {
    calls.push(args);
    return { status: 1, stdout: '', stderr: 'npm error code E404\nnpm error 404 Not Found' };
  };
  assert.throws(() => publish({ dir: out, tag: null }, fakeNpm, () => {}, {}),
    /first publish: nanosandbox-mcp-darwin-arm64, .*, nanosandbox-mcp are not on the registry yet.*\n.*NPM_TOKEN/s);
  assert.deepEqual(calls.filter((a) => a[0] !== 'view'), []);
});

test('with every package on the registry, publish runs without the token', (t) => {
  const root = tmpdir(t);
  const out = path.join(root, 'out');
  stage({ dist: fakeDist(root, { version: '1.2.4' }), out, version: null });
  const envs = [];
  const fakeNpm = (args, env) => {
    if (args[0] === 'view') {
      return { status: 0, stdout: '1.2.3\n', stderr: '' }; // an earlier version only
    }
    envs.push(env);
    assert.ok(!args.includes('--userconfig'));
    return { status: 0, stdout: '', stderr: '' };
  };
  const done = publish({ dir: out, tag: null }, fakeNpm, () => {}, { NPM_TOKEN: 'x', NODE_AUTH_TOKEN: 'y', PATH: '/bin' });
  assert.equal(done.length, 5);
  for (const env of envs) {
    assert.deepEqual(env, { PATH: '/bin' });
  }
});

test('tokenConfig names NPM_TOKEN for the registry, never its value', (t) => {
  const file = tokenConfig('http://127.0.0.1:4873/');
  t.after(() => fs.rmSync(path.dirname(file), { recursive: true, force: true }));
  assert.equal(fs.readFileSync(file, 'utf8'), 'registry=http://127.0.0.1:4873/\n//127.0.0.1:4873/:_authToken=${NPM_TOKEN}\n');
  assert.equal(fs.statSync(file).mode & 0o777, 0o600);
});

test('publish stops at the first failure, before the launcher', (t) => {
  const root = tmpdir(t);
  const out = path.join(root, 'out');
  stage({ dist: fakeDist(root), out, version: null });
  const published = [];
  const fakeNpm = (args) => {
    if (args[0] === 'view') {
      return { status: 0, stdout: '', stderr: '' };
    }
    if (args[1].endsWith('linux-arm64')) {
      return { status: 1, stdout: '', stderr: 'npm error 403 Forbidden' };
    }
    published.push(path.basename(args[1]));
    return { status: 0, stdout: '', stderr: '' };
  };
  assert.throws(() => publish({ dir: out, tag: null }, fakeNpm, () => {}), /linux-arm64@1.2.3 failed:\nnpm error 403/);
  assert.deepEqual(published, ['nanosandbox-mcp-darwin-arm64', 'nanosandbox-mcp-darwin-x64']);
});

test('publish fails when the registry cannot be asked', (t) => {
  const root = tmpdir(t);
  const out = path.join(root, 'out');
  stage({ dist: fakeDist(root), out, version: null });
  const fakeNpm = () => ({ status: 1, stdout: '', stderr: 'npm error code ECONNREFUSED' });
  assert.throws(() => publish({ dir: out, tag: null }, fakeNpm, () => {}), /npm view .* failed:\nnpm error code ECONNREFUSED/);
});
