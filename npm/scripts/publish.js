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
//
// Authentication: trusted publishing (OIDC) in the release workflow, which
// needs no token, but cannot create a package the registry has never had,
// and npm lets a trusted publisher be set up only for a package that
// exists. So the first release is a bootstrap: when any package is new to
// the registry, every package of the run is published with the token in
// the NPM_TOKEN environment variable (named in a temporary npm config, its
// value never written), and the output says how to set up trusted
// publishing for each and to delete the token. Without NPM_TOKEN such a run
// publishes nothing and says what to do. Once every package exists,
// NPM_TOKEN is ignored (with a warning) and npm's own authentication is
// used: trusted publishing in CI, or a token in the npm config.
const childProcess = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const LAUNCHER = 'nanosandbox-mcp';
// Where trusted publishing is set up for every package: this repository's
// release workflow, in its npm environment.
const WORKFLOW = 'release.yml';
const ENVIRONMENT = 'npm';

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

// npm runs the npm client with env (default: this process's); tests
// replace it.
function npm(args, env = process.env) {
  const r = childProcess.spawnSync('npm', args, { encoding: 'utf8', env, stdio: ['ignore', 'pipe', 'pipe'] });
  if (r.error) {
    throw r.error;
  }
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

// state reports where pkg stands on the registry: "published" (this
// name@version is there), "new-version" (the package is, this version is
// not) or "new-package" (the registry has never had it: E404). Anything
// else is an error.
function state(run, pkg, registryArgs) {
  const r = run(['view', `${pkg.name}@${pkg.version}`, 'version', ...registryArgs]);
  if (r.status === 0) {
    const versions = r.stdout.trim().split('\n').map((l) => l.trim().replace(/^'|'$/g, ''));
    return versions.includes(pkg.version) ? 'published' : 'new-version';
  }
  if (/E404|404 Not Found|is not in this registry/.test(r.stderr)) {
    return 'new-package';
  }
  throw new Error(`npm view ${pkg.name}@${pkg.version} failed:\n${r.stderr}`);
}

// published reports whether name@version is on the registry.
function published(run, pkg, registryArgs) {
  return state(run, pkg, registryArgs) === 'published';
}

// repository returns "owner/name" of the launcher's GitHub repository.
function repository(dir) {
  const m = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const url = typeof m.repository === 'string' ? m.repository : (m.repository || {}).url || '';
  const found = /github\.com[/:]([^/]+\/[^/.]+)/.exec(url);
  if (!found) {
    throw new Error(`${path.join(dir, 'package.json')}: repository ${JSON.stringify(url)} is not on GitHub`);
  }
  return found[1];
}

// trustCommands returns the commands that set up trusted publishing for
// pkgs: this repository's release workflow, in its npm environment.
function trustCommands(pkgs, repo, registryArgs) {
  return pkgs.map((p) => ['npm', 'trust', 'github', p.name, '--repo', repo, '--file', WORKFLOW,
    '--env', ENVIRONMENT, '--allow-publish', '--yes', ...registryArgs].join(' '));
}

// tokenConfig writes an npm config that authenticates to registry with the
// token in the NPM_TOKEN environment variable, and returns its path. The
// file names the variable; npm reads its value when it runs.
function tokenConfig(registry) {
  const u = new URL(registry);
  const nerfed = `//${u.host}${u.pathname.replace(/\/?$/, '/')}`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'nsb-publish-'));
  const file = path.join(dir, 'npmrc');
  fs.writeFileSync(file, `registry=${registry}\n${nerfed}:_authToken=\${NPM_TOKEN}\n`, { mode: 0o600 });
  return file;
}

// publish publishes every package in order and returns what it did, one
// line per package. env holds NPM_TOKEN for a bootstrap.
function publish(opts, run = npm, log = (l) => process.stdout.write(`${l}\n`), env = process.env) {
  const registryArgs = opts.registry ? ['--registry', opts.registry] : [];
  const pkgs = order(opts.dir);
  const states = new Map(pkgs.map((p) => [p, state(run, p, registryArgs)]));
  const fresh = pkgs.filter((p) => states.get(p) === 'new-package');
  const repo = repository(pkgs[pkgs.length - 1].dir);
  const auth = [];
  let configDir = null;
  if (fresh.length > 0) {
    const names = fresh.map((p) => p.name).join(', ');
    if (!env.NPM_TOKEN && !opts.dryRun) {
      throw new Error([
        `first publish: ${names} ${fresh.length === 1 ? 'is' : 'are'} not on the registry yet, and trusted publishing cannot create a package.`,
        'Bootstrap once: make an npm token that may publish new packages, give it to this run as NPM_TOKEN',
        `(in the release workflow: the secret NPM_TOKEN of the "${ENVIRONMENT}" environment), and run it again;`,
        'nothing was published. RELEASING.md has the whole path.',
      ].join('\n'));
    }
    log(`bootstrap: ${names} not on the registry yet; publishing every package with the token in NPM_TOKEN`);
    if (!opts.dryRun) {
      const registry = opts.registry || run(['config', 'get', 'registry']).stdout.trim();
      const config = tokenConfig(registry);
      configDir = path.dirname(config);
      auth.push('--userconfig', config);
    }
  } else if (env.NPM_TOKEN) {
    log('warning: NPM_TOKEN is set, but every package is on the registry: publishing with trusted publishing, not the token; delete the NPM_TOKEN secret and revoke the token');
  }
  const done = [];
  try {
    for (const pkg of pkgs) {
      const id = `${pkg.name}@${pkg.version}`;
      if (states.get(pkg) === 'published') {
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
      const r = run([...args, ...auth], auth.length ? env : withoutToken(env));
      if (r.status !== 0) {
        throw new Error(`npm publish ${id} failed:\n${r.stderr}`);
      }
      done.push(`publish ${id}`);
    }
  } finally {
    if (configDir) {
      fs.rmSync(configDir, { recursive: true, force: true });
    }
  }
  if (fresh.length > 0) {
    log([
      'bootstrap done. Now set up trusted publishing for each package, once, as an owner of them on npm (an npm with `npm trust`, such as 11.19.1; 2FA on):',
      ...trustCommands(pkgs, repo, registryArgs).map((c) => `  ${c}`),
      'then delete the NPM_TOKEN secret and revoke the token: later releases publish with trusted publishing.',
    ].join('\n'));
  }
  return done;
}

// withoutToken returns env without the variables a token could come from,
// so that npm authenticates by trusted publishing or its own config.
function withoutToken(env) {
  const out = { ...env };
  delete out.NPM_TOKEN;
  delete out.NODE_AUTH_TOKEN;
  return out;
}

module.exports = { distTag, order, parseArgs, publish, published, repository, state, tokenConfig, trustCommands };

if (require.main === module) {
  try {
    publish(parseArgs(process.argv.slice(2)));
  } catch (err) {
    process.stderr.write(`publish: ${err.message}\n`);
    process.exitCode = 1;
  }
}
