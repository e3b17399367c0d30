#!/usr/bin/env node
// The attacker of the auth benchmark (bench/sections/auth.mjs), in a process of its own: wrong
// passwords for alice at 127.0.0.1:<port>, every one different (so that the exporter's cache of
// failures does not answer them), and stops by itself.
//   auth-flood.mjs <port> burst close|keep <count> <tag>: <count> connections, one request each,
//     each connection closed as soon as its request is written, or kept open until SIGTERM;
//   auth-flood.mjs <port> sustained <connections> <ms> <tag>: <connections> kept-alive connections,
//     each sending its next request as soon as the last is answered, for <ms>.
// Prints `written` once the first requests are out, then a JSON report: answered, unauthorized,
// statuses, seconds (of a sustained flood: its <ms>, and what was answered within them).
import { Agent, request } from 'node:http';
import net from 'node:net';

const [portText, kind, ...rest] = process.argv.slice(2);
const port = Number(portText);
const header = (password) => `Basic ${Buffer.from(`alice:${password}`).toString('base64')}`;
const report = { answered: 0, unauthorized: 0, statuses: {}, seconds: 0 };
const started = performance.now();
// In a sustained flood, only what is answered within its time counts (report.seconds is that time).
let window;
const answered = (status) => {
  if (window !== undefined && performance.now() > window) return;
  report.answered += 1;
  if (status === 401) report.unauthorized += 1;
  report.statuses[status] = (report.statuses[status] ?? 0) + 1;
};
const finish = () => {
  report.seconds = (Math.min(performance.now(), window ?? Infinity) - started) / 1000;
  process.stdout.write(`${JSON.stringify(report)}\n`, () => process.exit(0));
};
process.on('SIGTERM', finish);

if (kind === 'burst') {
  const [mode, countText, tag] = rest;
  const count = Number(countText);
  let written = 0;
  for (let i = 0; i < count; i++) {
    const socket = net.connect(port, '127.0.0.1', () => {
      const text = `GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: ${header(`guess-${tag}-${i}`)}\r\n\r\n`;
      const whenWritten = () => {
        written += 1;
        if (written === count) {
          process.stdout.write('written\n');
          if (mode === 'close') setTimeout(finish, 100);
        }
      };
      if (mode === 'close') socket.end(text, whenWritten);
      else socket.write(text, whenWritten);
    });
    socket.on('data', (chunk) => answered(Number(/^HTTP\/1\.1 (\d+)/.exec(chunk.toString('latin1'))?.[1])));
    socket.on('error', () => undefined);
  }
  // Kept open until the benchmark stops it; never longer than a minute.
  setTimeout(finish, 60_000).unref();
} else if (kind === 'sustained') {
  const [connectionsText, msText, tag] = rest;
  const connections = Number(connectionsText);
  const end = started + Number(msText);
  window = end;
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  let n = 0;
  const one = () =>
    new Promise((resolve) => {
      const req = request(
        { host: '127.0.0.1', port, path: '/metrics', agent, headers: { authorization: header(`guess-${tag}-${n++}`) } },
        (res) => {
          res.resume();
          res.on('end', () => {
            answered(res.statusCode);
            resolve();
          });
        },
      );
      req.on('error', () => resolve());
      req.end();
    });
  const loops = Array.from({ length: connections }, async () => {
    while (performance.now() < end) await one();
  });
  process.stdout.write('written\n');
  await Promise.race([Promise.all(loops), new Promise((resolve) => setTimeout(resolve, Number(msText) + 5_000))]);
  finish();
} else {
  process.stderr.write('usage: auth-flood.mjs <port> burst close|keep <count> <tag> | <port> sustained <connections> <ms> <tag>\n');
  process.exit(2);
}
