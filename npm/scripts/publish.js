#!/usr/bin/env node
'use strict';
// publish publishes the packages stage.js wrote: the platform packages
// first, then the launcher, so the launcher never points at a version that
// is not there yet. A name@version already on the registry is skipped, so a
// failed release can simply be run again.
//
//   node npm/scripts/publish.js [--registry URL] [--tag TAG] [--provenance] [--dry-run] [STAGED_DIR]
//
// STAGED_DIR defaults to dist/npm. Without --tag, a pre-release version
// (1.2.3-rc.1) goes to the "next" dist-tag and any other to "latest".
// Authentication is npm's own: trusted publishing (OIDC) in CI, or a token in
// the npm config.

const childProcess = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const LAUNCHER = 'nanosandbox-mcp';

function parseArgs(argv) {
  const opts = { registry: null, tag: null, provenance: false, dryRun: false, dir: path.join('dist', 'npm') };
  for (let i = 0; i < argv.length; i++) {
    const [flag, inline] = argv[i].split(/=(.*)/s);
    const value = () => {
      const v = inline !== undefined ? inline : argv[++i];
      if (v === undefined || v === '') {
        throw new Error(`${flag} needs a value`);
      }
      return v;
    };
    switch (flag) {
      case '--registry': opts.registry = value(); break;
      case '--tag': opts.tag = value(); break;
      case '--provenance': opts.provenance = true; break;
      case '--dry-run': opts.dryRun = true; break;
      default:
        if (flag.startsWith('-')) {
          throw new Error(`unknown argument ${JSON.stringify(argv[i])}`);
        }
        opts.dir = argv[i];
    }
  }
  return opts;
}

// order lists the staged package directories: platform packages sorted by
// name, then the launcher.
function order(dir) {
  const pkgs = fs.readdirSync(dir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && fs.existsSync(path.join(dir, e.name, 'package.json')))
    .map((e) => {
      const m = JSON.parse(fs.readFileSync(path.join(dir, e.name, 'package.json'), 'utf8'));
      return { dir: path.join(dir, e.name), name: m.name, version: m.version };
    });
  const launcher = pkgs.filter((p) => p.name === LAUNCHER);
  if (launcher.length !== 1) {
    throw new Error(`want exactly one ${LAUNCHER} package in ${dir}, found ${launcher.length}`);
  }
  const platforms = pkgs.filter((p) => p.name !== LAUNCHER).sort((a, b) => a.name.localeCompare(b.name));
  const versions = new Set(pkgs.map((p) => p.version));
  if (versions.size !== 1) {
    throw new Error(`staged packages disagree on the version: ${[...versions].join(', ')}`);
  }
  return [...platforms, launcher[0]];
}

function distTag(version, tag) {
  return tag || (version.includes('-') ? 'next' : 'latest');
}

// npm runs the npm client; tests replace it.
function npm(args) {
  const r = childProcess.spawnSync('npm', args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) {
    throw r.error;
  }
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// published reports whether name@version is on the registry. A registry
// that does not know the package answers E404; anything else is an error.
function published(run, pkg, registryArgs) {
  const r = run(['view', `${pkg.name}@${pkg.version}`, 'version', ...registryArgs]);
  if (r.status === 0) {
    return r.stdout.trim().split('\n').map((l) => l.trim().replace(/^'|'$/g, '')).includes(pkg.version);
  }
  if (/E404|404 Not Found|is not in this registry/.test(r.stderr)) {
    return false;
  }
  throw new Error(`npm view ${pkg.name}@${pkg.version} failed:\n${r.stderr}`);
}

// publish publishes every package in order and returns what it did, one
// line per package.
function publish(opts, run = npm, log = (l) => process.stdout.write(`${l}\n`)) {
  const registryArgs = opts.registry ? ['--registry', opts.registry] : [];
  const done = [];
  for (const pkg of order(opts.dir)) {
    const id = `${pkg.name}@${pkg.version}`;
    if (published(run, pkg, registryArgs)) {
      log(`skip ${id}: already published`);
      done.push(`skip ${id}`);
      continue;
    }
    const args = ['publish', pkg.dir, '--access', 'public', '--tag', distTag(pkg.version, opts.tag), ...registryArgs];
    if (opts.provenance) {
      args.push('--provenance');
    }
    if (opts.dryRun) {
      args.push('--dry-run');
    }
    log(`publish ${id} (npm ${args.join(' ')})`);
    const r = run(args);
    if (r.status !== 0) {
      throw new Error(`npm publish ${id} failed:\n${r.stderr}`);
    }
    done.push(`publish ${id}`);
  }
  return done;
}

module.exports = { distTag, order, parseArgs, publish, published };

if (require.main === module) {
  try {
    publish(parseArgs(process.argv.slice(2)));
  } catch (err) {
    process.stderr.write(`publish: ${err.message}\n`);
    process.exitCode = 1;
  }
}
