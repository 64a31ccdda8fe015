'use strict';
// The launcher finds the nanosandbox-mcp binary that npm installed from the
// package for this platform (one of the optionalDependencies) and runs it with
// stdin, stdout and stderr passed through untouched. It forwards signals,
// exits with the server's code or signal, and stops the server when the
// launcher itself is orphaned (a SIGTERM to npx can kill only its shell).
// Plain Node >= 18, no dependencies, no install scripts.

const childProcess = require('node:child_process');
const os = require('node:os');
const path = require('node:path');

const NAME = 'nanosandbox-mcp';

// The released platforms, from the one platform table (platforms.json, next
// to this file, which the stager, the wheel builder and the checks read too):
// "os cpu" as npm spells them (Go amd64 is npm x64) -> the package that
// holds the binary.
const PLATFORMS = Object.freeze(Object.fromEntries(
  require('./platforms.json').map((p) => [`${p.npm_os} ${p.npm_cpu}`, `${NAME}-${p.npm_os}-${p.npm_cpu}`]),
));

const FORWARDED_SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];

// How often the launcher checks whether its parent is gone.
const ORPHAN_POLL_MS = 1000;
// How long the server gets to stop after SIGTERM before it is killed.
const KILL_GRACE_MS = 5000;

class LaunchError extends Error {}

// packageName returns the platform package for platform and arch, or null
// when none is published for them.
function packageName(platform, arch) {
  return PLATFORMS[`${platform} ${arch}`] || null;
}

// npxInstall returns the directory npx installed this launcher in
// (<cache>/_npx/<hash>, whose node_modules holds it), or null when dir is
// not inside one.
function npxInstall(dir) {
  const m = /^(.*[\\/]_npx[\\/][^\\/]+)[\\/]node_modules[\\/]/.exec(dir);
  return m ? m[1] : null;
}

// shellQuote quotes s for a POSIX shell, unless it needs no quoting.
function shellQuote(s) {
  return /^[\w@%+=:,./~-]+$/.test(s) ? s : `'${s.replace(/'/g, "'\\''")}'`;
}

// missingMessage explains that pkg is not installed and how to fix it.
// dir is where this launcher is installed: inside npx's cache, the fix
// also needs that install removed, because npx reuses it as it is, without
// the platform package, on every later run of the same command, with or
// without --omit=optional.
function missingMessage(pkg, dir = __dirname) {
  const lines = [
    `${NAME}: error: the platform package "${pkg}" is not installed`,
    `${NAME}: hint: npm installs it as an optional dependency of ${NAME} on ${pkg.slice(NAME.length + 1)}; ` +
      `reinstall without --omit=optional (check npm_config_omit too), or install it directly: npm install ${pkg}`,
  ];
  const npx = npxInstall(dir);
  if (npx) {
    lines.push(
      `${NAME}: hint: npx keeps reusing this install, made without it, until it is removed: ` +
        `rm -rf ${shellQuote(npx)} (or all of npx's cache, ~/.npm/_npx), then run npx again without --omit=optional`,
    );
  }
  return lines.join('\n');
}

// unsupportedMessage explains that platform and arch have no binary.
function unsupportedMessage(platform, arch) {
  const lines = [`${NAME}: error: no binary for ${platform}/${arch}`];
  if (platform === 'win32') {
    lines.push(`${NAME}: hint: Windows is not supported: a sandbox there could limit resources, not access`);
  } else {
    lines.push(`${NAME}: hint: builds exist for ${Object.keys(PLATFORMS).map((k) => k.replace(' ', '/')).join(', ')}`);
  }
  return lines.join('\n');
}

// binaryPath returns the path of the binary inside the platform package,
// resolved from this module. resolve defaults to require.resolve; tests pass
// their own. It throws a LaunchError whose message tells the user what to do.
function binaryPath(platform = process.platform, arch = process.arch, resolve = require.resolve) {
  const pkg = packageName(platform, arch);
  if (!pkg) {
    throw new LaunchError(unsupportedMessage(platform, arch));
  }
  let manifest;
  try {
    manifest = resolve(`${pkg}/package.json`);
  } catch (err) {
    if (err && err.code === 'MODULE_NOT_FOUND') {
      throw new LaunchError(missingMessage(pkg));
    }
    throw err;
  }
  return path.join(path.dirname(manifest), 'bin', NAME);
}

// signalNumber returns the number of a signal name, or 0 if unknown.
function signalNumber(name) {
  return (os.constants.signals && os.constants.signals[name]) || 0;
}

// run starts binary with args and settles with {code, signal} once it exits.
// While it runs, the signals in FORWARDED_SIGNALS sent to this process are
// passed on, and if this process's parent goes away (it is reparented), the
// child is sent SIGTERM, then SIGKILL after KILL_GRACE_MS.
// opts.ppid and opts.getPpid replace process.ppid in tests; opts.pollMs and
// opts.graceMs replace the intervals; opts.proc replaces process for the
// signal handlers.
function run(binary, args, opts = {}) {
  const proc = opts.proc || process;
  const getPpid = opts.getPpid || (() => process.ppid);
  const pollMs = opts.pollMs || ORPHAN_POLL_MS;
  const graceMs = opts.graceMs || KILL_GRACE_MS;
  const parent = opts.ppid || getPpid();

  return new Promise((resolve, reject) => {
    const child = childProcess.spawn(binary, args, { stdio: opts.stdio || 'inherit' });
    const handlers = new Map();
    let killTimer = null;

    const forward = (sig) => {
      if (child.exitCode === null && child.signalCode === null) {
        try {
          child.kill(sig);
        } catch (_) {
          // Gone between the check and the kill.
        }
      }
    };
    for (const sig of FORWARDED_SIGNALS) {
      const h = () => forward(sig);
      handlers.set(sig, h);
      proc.on(sig, h);
    }

    const orphanWatch = setInterval(() => {
      const now = getPpid();
      if (now === parent) {
        return;
      }
      // The launcher's parent died: nobody will read the server's output or
      // close its stdin, so stop it instead of leaving it running.
      clearInterval(orphanWatch);
      forward('SIGTERM');
      killTimer = setTimeout(() => forward('SIGKILL'), graceMs);
      killTimer.unref();
    }, pollMs);
    orphanWatch.unref();

    const cleanup = () => {
      clearInterval(orphanWatch);
      if (killTimer) {
        clearTimeout(killTimer);
      }
      for (const [sig, h] of handlers) {
        proc.removeListener(sig, h);
      }
    };

    child.on('error', (err) => {
      cleanup();
      reject(err);
    });
    child.on('exit', (code, signal) => {
      cleanup();
      resolve({ code, signal });
    });
  });
}

// exitLike ends this process the way the child ended: with its exit code, or
// by the same signal (so a parent sees "killed by SIGTERM", not a code).
function exitLike({ code, signal }, proc = process) {
  if (signal) {
    // Handlers are removed by now, so the default action applies.
    try {
      proc.kill(proc.pid, signal);
    } catch (_) {
      // Fall through to the shell's convention below.
    }
    // Still alive (the signal is ignored or blocked here): exit 128+N.
    proc.exit(128 + signalNumber(signal));
    return;
  }
  proc.exit(code === null ? 1 : code);
}

// main runs the server for this platform with argv and never returns
// normally: it exits with the server's status.
async function main(argv = process.argv.slice(2)) {
  let binary;
  try {
    binary = binaryPath();
  } catch (err) {
    if (err instanceof LaunchError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(1);
      return;
    }
    throw err;
  }
  let status;
  try {
    status = await run(binary, argv);
  } catch (err) {
    process.stderr.write(`${NAME}: error: start ${binary}: ${err.message}\n`);
    if (err.code === 'EACCES') {
      process.stderr.write(`${NAME}: hint: the binary is not executable; reinstall the package\n`);
    }
    process.exit(1);
    return;
  }
  exitLike(status);
}

module.exports = {
  FORWARDED_SIGNALS,
  LaunchError,
  PLATFORMS,
  binaryPath,
  exitLike,
  main,
  missingMessage,
  npxInstall,
  packageName,
  run,
  signalNumber,
  unsupportedMessage,
};
