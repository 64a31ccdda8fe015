#!/usr/bin/env node
'use strict';
// stage builds the npm packages of a release from GoReleaser's output:
// one package per platform (os and cpu set, one binary, mode 0755) and the
// launcher package, all at the version in dist/metadata.json.
//
//   node npm/scripts/stage.js [--dist dist] [--out dist/npm] [--version V]
//
// Paths in dist/artifacts.json are relative to the directory GoReleaser ran
// in: the parent of --dist, or else the current directory.

const fs = require('node:fs');
const path = require('node:path');
const { normalizeVersion, setVersion } = require('./set-version.js');

const LAUNCHER_DIR = path.join(__dirname, '..', 'nanosandbox-mcp');
const REPO_ROOT = path.join(__dirname, '..', '..');

// Go's GOOS/GOARCH → npm's os/cpu, from the one platform table, which the
// launcher reads at run time and so ships inside it.
const TARGETS = JSON.parse(fs.readFileSync(path.join(LAUNCHER_DIR, 'lib', 'platforms.json'), 'utf8'))
  .map((p) => ({ goos: p.goos, goarch: p.goarch, os: p.npm_os, cpu: p.npm_cpu }));

function parseArgs(argv) {
  const opts = { dist: 'dist', out: null, version: null };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s);
    const value = () => (inline !== undefined ? inline : argv[++i]);
    switch (flag) {
      case '--dist': opts.dist = value(); break;
      case '--out': opts.out = value(); break;
      case '--version': opts.version = value(); break;
      default: throw new Error(`unknown argument ${JSON.stringify(argv[i])}`);
    }
    if (opts[flag.slice(2)] === undefined) {
      throw new Error(`${flag} needs a value`);
    }
  }
  opts.out = opts.out || path.join(opts.dist, 'npm');
  return opts;
}

// binaries returns the Binary artifact for each target, keyed "goos/goarch",
// with its path resolved; it fails if one is missing or doubled.
function binaries(dist) {
  const artifacts = JSON.parse(fs.readFileSync(path.join(dist, 'artifacts.json'), 'utf8'));
  const found = new Map();
  for (const a of artifacts) {
    if (a.type !== 'Binary' || a.name !== 'nanosandbox-mcp') {
      continue;
    }
    const key = `${a.goos}/${a.goarch}`;
    if (found.has(key)) {
      throw new Error(`two binaries for ${key} in artifacts.json`);
    }
    const candidates = path.isAbsolute(a.path)
      ? [a.path]
      : [path.resolve(path.dirname(path.resolve(dist)), a.path), path.resolve(a.path)];
    const file = candidates.find((c) => fs.existsSync(c));
    if (!file) {
      throw new Error(`binary for ${key} not found at ${a.path}`);
    }
    found.set(key, file);
  }
  for (const t of TARGETS) {
    if (!found.has(`${t.goos}/${t.goarch}`)) {
      throw new Error(`no binary for ${t.goos}/${t.goarch} in artifacts.json`);
    }
  }
  return found;
}

function readVersion(dist) {
  return JSON.parse(fs.readFileSync(path.join(dist, 'metadata.json'), 'utf8')).version;
}

function copyIfExists(from, to) {
  if (fs.existsSync(from)) {
    fs.copyFileSync(from, to);
  }
}

function platformManifest(t, launcher) {
  const name = `nanosandbox-mcp-${t.os}-${t.cpu}`;
  return {
    name,
    version: launcher.version,
    description: `The ${t.os}-${t.cpu} binary of nanosandbox-mcp; install nanosandbox-mcp, which picks it for you`,
    license: launcher.license,
    repository: launcher.repository,
    homepage: launcher.homepage,
    os: [t.os],
    cpu: [t.cpu],
    files: ['bin/nanosandbox-mcp'],
    preferUnplugged: true,
  };
}

// stage writes every package under out and returns their directories,
// platform packages first.
function stage({ dist, out, version }) {
  const v = normalizeVersion(version || readVersion(dist));
  const bins = binaries(dist);
  fs.rmSync(out, { recursive: true, force: true });
  fs.mkdirSync(out, { recursive: true });

  const launcherOut = path.join(out, 'nanosandbox-mcp');
  fs.mkdirSync(launcherOut);
  for (const entry of ['bin', 'lib']) {
    fs.cpSync(path.join(LAUNCHER_DIR, entry), path.join(launcherOut, entry), { recursive: true });
  }
  const launcher = JSON.parse(fs.readFileSync(path.join(LAUNCHER_DIR, 'package.json'), 'utf8'));
  delete launcher.scripts; // the published launcher runs no scripts at all
  const missing = TARGETS.map((t) => platformManifest(t, launcher).name)
    .filter((name) => !(launcher.optionalDependencies || {})[name]);
  if (missing.length) {
    throw new Error(`${path.join(LAUNCHER_DIR, 'package.json')} lacks optional dependencies on ${missing.join(', ')} (see lib/platforms.json)`);
  }
  fs.writeFileSync(path.join(launcherOut, 'package.json'), `${JSON.stringify(launcher, null, 2)}\n`);
  copyIfExists(path.join(REPO_ROOT, 'README.md'), path.join(launcherOut, 'README.md'));
  copyIfExists(path.join(REPO_ROOT, 'LICENSE'), path.join(launcherOut, 'LICENSE'));

  const dirs = [];
  for (const t of TARGETS) {
    const m = platformManifest(t, launcher);
    const dir = path.join(out, m.name);
    fs.mkdirSync(path.join(dir, 'bin'), { recursive: true });
    const bin = path.join(dir, 'bin', 'nanosandbox-mcp');
    fs.copyFileSync(bins.get(`${t.goos}/${t.goarch}`), bin);
    fs.chmodSync(bin, 0o755);
    fs.writeFileSync(path.join(dir, 'package.json'), `${JSON.stringify(m, null, 2)}\n`);
    fs.writeFileSync(
      path.join(dir, 'README.md'),
      `# ${m.name}\n\nThe ${t.os}-${t.cpu} binary of [nanosandbox-mcp](${launcher.homepage}).\n` +
        'Install `nanosandbox-mcp` (or run `npx -y nanosandbox-mcp`): it depends on this package ' +
        'on matching machines and starts the binary for you.\n',
    );
    copyIfExists(path.join(REPO_ROOT, 'LICENSE'), path.join(dir, 'LICENSE'));
    dirs.push(dir);
  }
  dirs.push(launcherOut);
  for (const dir of dirs) {
    setVersion(dir, v);
  }
  return dirs;
}

function main(argv) {
  const opts = parseArgs(argv);
  for (const dir of stage(opts)) {
    const m = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    const bin = path.join(dir, 'bin', 'nanosandbox-mcp');
    const size = fs.existsSync(bin) ? ` (${(fs.statSync(bin).size / 1e6).toFixed(1)} MB binary)` : '';
    process.stdout.write(`staged ${m.name}@${m.version} in ${dir}${size}\n`);
  }
}

module.exports = { TARGETS, binaries, parseArgs, platformManifest, stage };

if (require.main === module) {
  try {
    main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`stage: ${err.message}\n`);
    process.exitCode = 1;
  }
}
