#!/usr/bin/env node
'use strict';
// set-version stamps one release version into npm manifests: the "version"
// of each, and every nanosandbox-mcp-* optional dependency (pinned exactly,
// so a launcher only ever runs the binary released with it).
//
//   node npm/scripts/set-version.js VERSION DIR...
//
// With no DIR it stamps npm/nanosandbox-mcp. VERSION may carry a leading "v"
// (a git tag); it must be semver.

const fs = require('node:fs');
const path = require('node:path');

const SEMVER = /^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?$/;

// normalizeVersion strips a leading "v" and checks the rest is semver.
function normalizeVersion(version) {
  const v = String(version).replace(/^v/, '');
  if (!SEMVER.test(v)) {
    throw new Error(`version ${JSON.stringify(version)} is not semver (want 1.2.3 or 1.2.3-rc.1)`);
  }
  return v;
}

// setVersion writes version into dir/package.json and returns the manifest.
function setVersion(dir, version) {
  const v = normalizeVersion(version);
  const file = path.join(dir, 'package.json');
  const manifest = JSON.parse(fs.readFileSync(file, 'utf8'));
  manifest.version = v;
  for (const deps of [manifest.optionalDependencies, manifest.dependencies]) {
    for (const name of Object.keys(deps || {})) {
      if (name.startsWith('nanosandbox-mcp-')) {
        deps[name] = v;
      }
    }
  }
  fs.writeFileSync(file, `${JSON.stringify(manifest, null, 2)}\n`);
  return manifest;
}

function main(argv) {
  if (argv.length < 1 || argv[0].startsWith('-')) {
    process.stderr.write('usage: set-version.js VERSION [DIR...]\n');
    return 2;
  }
  const [version, ...dirs] = argv;
  const targets = dirs.length ? dirs : [path.join(__dirname, '..', 'nanosandbox-mcp')];
  for (const dir of targets) {
    const m = setVersion(dir, version);
    process.stdout.write(`${m.name}@${m.version}\n`);
  }
  return 0;
}

module.exports = { normalizeVersion, setVersion };

if (require.main === module) {
  try {
    process.exitCode = main(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`set-version: ${err.message}\n`);
    process.exitCode = 1;
  }
}
