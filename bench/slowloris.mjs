#!/usr/bin/env node
// The attacker of the slowloris benchmark (bench/sections/slowloris.mjs), in a process of its own:
//   slowloris.mjs <port> <connections> <ms> <reopen-ms>
// keeps <connections> connections to 127.0.0.1:<port> open, each with a request line and one more
// header every second but never the blank line that ends the headers; each one the server closes
// is opened again <reopen-ms> later (slowloris.py waits 15 s), until <ms> have passed, then everything is closed and the process ends (also on
// SIGTERM, and never later than <ms> + 5 s). Prints `open` once the first <connections> are
// connected, then a JSON report: opened, closedByServer, answeredWith (statuses the server wrote
// before closing), mostOpen (the most open at once, as this side saw them).
import net from 'node:net';

const [portText, connectionsText, msText, reopenText] = process.argv.slice(2);
const port = Number(portText);
const connections = Number(connectionsText);
const ms = Number(msText);
const reopenMs = Number(reopenText);
if (!(port > 0 && connections > 0 && ms > 0 && reopenMs > 0)) {
  process.stderr.write('usage: slowloris.mjs <port> <connections> <ms> <reopen-ms>\n');
  process.exit(2);
}

const report = { opened: 0, closedByServer: 0, answeredWith: {}, mostOpen: 0 };
const sockets = new Set();
let stopping = false;
let connected = 0;

function open() {
  if (stopping) return;
  report.opened += 1;
  let header = 0;
  let drip;
  const socket = net.connect(port, '127.0.0.1', () => {
    sockets.add(socket);
    report.mostOpen = Math.max(report.mostOpen, sockets.size);
    socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    drip = setInterval(() => socket.write(`X-Slow-${header++}: still coming\r\n`), 1000);
    connected += 1;
    if (connected === connections) process.stdout.write('open\n');
  });
  socket.on('data', (chunk) => {
    const status = /^HTTP\/1\.1 (\d+)/.exec(chunk.toString('latin1'))?.[1];
    if (status) report.answeredWith[status] = (report.answeredWith[status] ?? 0) + 1;
  });
  socket.on('error', () => undefined);
  socket.on('close', () => {
    clearInterval(drip);
    sockets.delete(socket);
    if (stopping) return;
    report.closedByServer += 1;
    // Never at once, so that a server that closes at once does not spin this loop.
    setTimeout(open, reopenMs);
  });
}

function finish() {
  if (stopping) return;
  stopping = true;
  for (const socket of sockets) socket.destroy();
  process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
}
process.on('SIGTERM', finish);
setTimeout(finish, ms);
setTimeout(() => process.exit(1), ms + 5_000).unref();

for (let i = 0; i < connections; i++) open();
