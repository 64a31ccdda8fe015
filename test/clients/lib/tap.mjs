// tap runs a stdio MCP server and records every line on its stdin and
// stdout, so a test can see what a client really sent and received.
//
//   node tap.mjs LOG COMMAND [ARG...]
//
// (No "--" before COMMAND: the Inspector's option parser eats it.)
//
// LOG gets one line per message: "> " for client to server, "< " for
// server to client. stdio passes through untouched; signals are passed on;
// tap exits with the server's status.
import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';

const [logPath, command, ...args] = process.argv.slice(2);
if (!logPath || !command) {
  process.stderr.write('usage: node tap.mjs LOG COMMAND [ARG...]\n');
  process.exit(2);
}
const log = createWriteStream(logPath, { flags: 'a' });
const child = spawn(command, args, { stdio: ['pipe', 'pipe', 'inherit'] });

function recorder(prefix) {
  let rest = '';
  return (chunk) => {
    rest += chunk.toString('utf8');
    const lines = rest.split('\n');
    rest = lines.pop();
    for (const line of lines) log.write(prefix + line + '\n');
  };
}

const fromClient = recorder('> ');
const fromServer = recorder('< ');
process.stdin.on('data', (c) => { fromClient(c); child.stdin.write(c); });
process.stdin.on('end', () => child.stdin.end());
child.stdin.on('error', () => {});
child.stdout.on('data', (c) => { fromServer(c); process.stdout.write(c); });
for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) process.on(sig, () => child.kill(sig));
child.on('exit', (code, signal) => {
  log.end(() => {
    if (signal) process.kill(process.pid, signal);
    else process.exit(code ?? 1);
  });
});
