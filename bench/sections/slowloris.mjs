// Slowloris beside an authorised scrape (issue 31): the exporter on the demo host with basic auth
// (a cost-10 bcrypt hash) over plain HTTP, on CPU 0; 1 000 half-sent connections from 127.0.0.1,
// the scraper's own address, from another process on CPU 1 (bench/slowloris.mjs), each opened
// again a second after the server closed it; Prometheus's scrape from this process every 100 ms,
// each over a new connection. Measured with the default limits (the per-client limit, 64, is what
// acts), with --web.max-connections-per-client=1000 (the global cap, 512, is what acts), and with
// the default limits against an attacker that reopens after 10 ms (a flood of connections more
// than a slowloris), each beside the same scrapes without an attack: scrape latency p50 and max,
// scrapes that failed, and what the attacker saw.
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { MAIN, PROJECT, cpuSeconds, fmt, freePort, log, machineFacts, sleep, startServer } from '../support.mjs';

const require = createRequire(import.meta.url);
const bcryptjs = require('bcryptjs');

const ATTACK_CONNECTIONS = 1000;
const SCRAPE_EVERY_MS = 100;
const authorization = `Basic ${Buffer.from('alice:secret').toString('base64')}`;

/** One authorised GET over its own connection: status (or the error's code) and milliseconds. */
function scrape(port) {
  return new Promise((resolve) => {
    const started = performance.now();
    const req = request(
      { host: '127.0.0.1', port, path: '/metrics', agent: false, headers: { authorization, 'accept-encoding': 'gzip' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
      },
    );
    req.setTimeout(5000, () => req.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })));
    req.on('error', (error) => resolve({ status: error.code ?? 'error', ms: performance.now() - started }));
    req.end();
  });
}

async function scrapeFor(port, ms) {
  const results = [];
  const end = performance.now() + ms;
  while (performance.now() < end) {
    const started = performance.now();
    results.push(await scrape(port));
    await sleep(Math.max(0, SCRAPE_EVERY_MS - (performance.now() - started)));
  }
  return results;
}

/** The attacker on CPU 1: `open` once its connections are connected, `done` with its report. */
function attacker(port, ms, reopenMs) {
  const child = spawn(
    'taskset',
    [
      '-c',
      '1',
      process.execPath,
      path.join(PROJECT, 'bench/slowloris.mjs'),
      String(port),
      String(ATTACK_CONNECTIONS),
      String(ms),
      String(reopenMs),
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  let signalOpen;
  const open = new Promise((resolve) => (signalOpen = resolve));
  child.stdout.on('data', (chunk) => {
    out += chunk;
    if (out.includes('open\n')) signalOpen();
  });
  const done = new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      signalOpen();
      const report = out.split('\n').find((line) => line.startsWith('{'));
      if (code === 0 && report) resolve(JSON.parse(report));
      else reject(new Error(`bench/slowloris.mjs ended with ${code}`));
    });
  });
  return { open, done };
}

const percentile = (values, p) => [...values].sort((a, b) => a - b)[Math.min(values.length - 1, Math.floor((p / 100) * values.length))];

export async function slowloris({ quick }) {
  const loadBefore = os.loadavg()[0];
  const seconds = quick ? 3 : 10;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-bench-slowloris-'));
  const webConfig = path.join(dir, 'web.yml');
  await writeFile(webConfig, `basic_auth_users:\n  alice: ${bcryptjs.hashSync('secret', 10).replace(/^\$2b\$/, '$2y$')}\n`);
  const runs = [];
  try {
    const configurations = [
      ['default limits (512 in all, 64 per client)', [], 1000],
      ['--web.max-connections-per-client=1000 (512 in all)', ['--web.max-connections-per-client=1000'], 1000],
      ['default limits, the attacker reopening after 10 ms', [], 10],
    ];
    for (const [name, extra, reopenMs] of configurations) {
      const port = await freePort();
      const server = await startServer(
        'infiniband-exporter',
        process.execPath,
        [MAIN, '--demo', `--web.config.file=${webConfig}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=error', ...extra],
        port,
        '/healthz',
        {
          cpu: 0,
          ready: (response) => response.status === 401,
        },
      );
      try {
        await sleep(1000);
        // The first check of alice's password (about 50 ms) is paid here, not in the figures.
        if ((await scrape(port)).status !== 200) throw new Error('alice is not let in');
        log(`slowloris: ${name}: ${seconds} s of scrapes without, then with ${ATTACK_CONNECTIONS} half-sent connections`);
        const quiet = await scrapeFor(port, seconds * 1000);
        const attack = attacker(port, seconds * 1000 + 3000, reopenMs);
        await attack.open;
        const cpuBefore = await cpuSeconds(server.pid);
        const during = await scrapeFor(port, seconds * 1000);
        const cpu = (await cpuSeconds(server.pid)) - cpuBefore;
        const seen = await attack.done;
        runs.push({ name, quiet, during, seen, cpuShare: cpu / seconds });
      } finally {
        await server.stop();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return writeResults(runs, seconds, machineFacts(loadBefore, os.loadavg()[0], [], { nodeExporter: false }));
}

function writeResults(runs, seconds, machine) {
  const ms = (value) => fmt(value, 1);
  const row = (label, results) => {
    const answered = results.filter((result) => result.status === 200).map((result) => result.ms);
    const failed = results.filter((result) => result.status !== 200);
    const failures = failed.length === 0 ? '0' : `**${failed.length}** (${[...new Set(failed.map((result) => result.status))].join(', ')})`;
    return `| ${label} | ${results.length} | ${answered.length ? `${ms(percentile(answered, 50))} / ${ms(Math.max(...answered))}` : '–'} | ${failures} |`;
  };
  const lines = [
    `| authorised scrape every ${SCRAPE_EVERY_MS} ms for ${seconds} s, each on a new connection | scrapes | p50 / max ms | failed |`,
    '|---|---|---|---|',
  ];
  for (const run of runs) {
    lines.push(row(`${run.name}: no attack`, run.quiet));
    lines.push(
      row(
        `${run.name}: ${ATTACK_CONNECTIONS} half-sent connections from the same address (the attacker opened ${run.seen.opened}, the server closed ${run.seen.closedByServer}, at most ${run.seen.mostOpen} open at once; the exporter at ${fmt(run.cpuShare * 100, 0)} % of a core)`,
        run.during,
      ),
    );
  }
  return [
    ...lines,
    '',
    `Scrapes that took more than 1 s: ${runs.map((run) => `${run.during.filter((result) => result.status === 200 && result.ms > 1000).length} of ${run.during.length} (${run.name})`).join('; ')}.`,
    '',
    machine,
  ].join('\n');
}
