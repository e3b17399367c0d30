// A flood of wrong passwords against an authorised scrape (issue 22): the exporter on the demo
// host with basic auth (cost-10 bcrypt hashes, as `htpasswd -nBC 10` makes them) over plain HTTP,
// on CPU 0; the flood from another process on CPU 1 (bench/auth-flood.mjs), so that it arrives as
// an attacker's would; the scrapes from this process. Measured:
// - one password check: the exporter's CPU per wrong password, 20 in a row from one client, beside
//   bcryptjs (what earlier versions ran) and hash-wasm timed in one process under the exporter's
//   own V8 flags (src/startup/v8-flags.ts);
// - bursts of 100 wrong passwords, each connection closed at once or kept open, then at once the
//   first scrape of a credential not yet checked (a new user each round): its latency, rounds
//   repeated;
// - a sustained flood at full speed from 100 kept-open connections (each sends its next wrong
//   password when answered) while Prometheus's cached credentials scrape every 50 ms: the flood's
//   rate, scrape latency p50/p99 beside the same scrapes without a flood, and the exporter's CPU.
// Orderings are the tests' business (test/commands/serve/security.test.ts); here are the durations.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { MAIN, PROJECT, cpuSeconds, fmt, freePort, log, machineFacts, memoryKiB, sleep, startServer } from '../support.mjs';

const require = createRequire(import.meta.url);
const bcryptjs = require('bcryptjs');

const COST = 10;
const BURST = 100;
const FLOOD_CONNECTIONS = 100;
const SCRAPE_EVERY_MS = 50;

const basic = (user, password) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** One GET over its own connection; resolves with status and milliseconds. */
function get(port, authorization) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = request(
      { host: '127.0.0.1', port, path: '/metrics', agent: false, headers: { authorization, 'accept-encoding': 'gzip' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode, ms: performance.now() - started }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

function percentile(values, p) {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

/** The flood process on CPU 1: `written` once its first requests are out, `done` with its report. */
function floodProcess(args) {
  const child = spawn('taskset', ['-c', '1', process.execPath, path.join(PROJECT, 'bench/auth-flood.mjs'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let signalWritten;
  const written = new Promise((resolve) => (signalWritten = resolve));
  child.stdout.on('data', (chunk) => {
    out += chunk;
    if (out.includes('written\n')) signalWritten();
  });
  const done = new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      const report = out.split('\n').find((line) => line.startsWith('{'));
      if (code === 0 && report) resolve(JSON.parse(report));
      else reject(new Error(`bench/auth-flood.mjs ${args.join(' ')} ended with ${code}`));
    });
  });
  return { written, done, stop: () => child.exitCode === null && process.kill(child.pid, 'SIGTERM') };
}

/** bcryptjs and hash-wasm, one wrong password each, timed in one process under the exporter's V8 flags. */
function checkTimes() {
  const script = `
    import { createRequire } from 'node:module';
    import { chooseV8Flags } from './dist/startup/v8-flags.js';
    import { setFlagsFromString } from 'node:v8';
    for (const flag of chooseV8Flags([])) setFlagsFromString(flag);
    const require = createRequire(import.meta.url);
    const bcryptjs = require('bcryptjs');
    const { bcryptVerify } = require('hash-wasm/dist/bcrypt.umd.min.js');
    const hash = ${JSON.stringify(bcryptjs.hashSync('secret', COST))};
    const cpu = async (check, rounds) => {
      await check('warm-up');
      const before = process.cpuUsage();
      for (let i = 0; i < rounds; i++) await check('wrong-' + i);
      const used = process.cpuUsage(before);
      return (used.user + used.system) / 1000 / rounds;
    };
    console.log(JSON.stringify({
      bcryptjs: await cpu((password) => bcryptjs.compare(password, hash), 3),
      hashWasm: await cpu((password) => bcryptVerify({ password, hash }), 20),
    }));
  `;
  return JSON.parse(
    execFileSync('taskset', ['-c', '0', process.execPath, '--input-type=module', '-e', script], { cwd: PROJECT, encoding: 'utf8' }),
  );
}

export async function auth({ quick }) {
  const loadBefore = os.loadavg()[0];
  const rounds = quick ? 3 : 10;
  const seconds = quick ? 3 : 10;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-bench-auth-'));
  let server;
  try {
    log('auth: password checks timed in one process');
    const times = checkTimes();

    // alice is Prometheus; the fresh users are credentials seen for the first time, one per round.
    const fresh = Array.from({ length: 2 * rounds }, (_, i) => `fresh${i}`);
    const users = ['alice', ...fresh].map((user) => `  ${user}: ${bcryptjs.hashSync('secret', COST).replace(/^\$2b\$/, '$2y$')}`);
    const webConfig = path.join(dir, 'web.yml');
    await writeFile(webConfig, `basic_auth_users:\n${users.join('\n')}\n`);
    const port = await freePort();
    // Up when it answers 401: asking with credentials would check a password before the RSS below.
    server = await startServer(
      'infiniband-exporter',
      process.execPath,
      [MAIN, '--demo', `--web.config.file=${webConfig}`, `--web.listen-address=127.0.0.1:${port}`, '--log.level=warn'],
      port,
      '/healthz',
      {
        cpu: 0,
        ready: (response) => response.status === 401,
      },
    );
    await sleep(2000);
    const rssBefore = (await memoryKiB(server.pid)).rss / 1024;
    const alice = basic('alice', 'secret');
    if ((await get(port, alice)).status !== 200) throw new Error('alice is not let in');

    log('auth: 20 wrong passwords in a row');
    const cpuBefore = await cpuSeconds(server.pid);
    const wrongLatency = [];
    for (let i = 0; i < 20; i++) wrongLatency.push((await get(port, basic('alice', `wrong-${i}`))).ms);
    const serverCheckMs = (((await cpuSeconds(server.pid)) - cpuBefore) * 1000) / 20;

    const bursts = {};
    let next = 0;
    for (const mode of ['close', 'keep']) {
      log(`auth: ${rounds} bursts of ${BURST} wrong passwords, connections ${mode === 'close' ? 'closed at once' : 'kept open'}`);
      const latencies = [];
      for (let round = 0; round < rounds; round++) {
        const flood = floodProcess([String(port), 'burst', mode, String(BURST), `r${mode}${round}`]);
        await flood.written;
        const scrape = await get(port, basic(fresh[next++], 'secret'));
        if (scrape.status !== 200) throw new Error(`the scrape after a burst got ${scrape.status}`);
        latencies.push(scrape.ms);
        flood.stop();
        await flood.done;
        // Let what the burst left (kept-open connections are closed by now: skipped) drain.
        await sleep(200);
      }
      bursts[mode] = latencies;
    }

    log(`auth: ${seconds} s of scrapes every ${SCRAPE_EVERY_MS} ms, without and with a sustained flood`);
    const scrapeFor = async (ms) => {
      const latencies = [];
      const end = performance.now() + ms;
      while (performance.now() < end) {
        const started = performance.now();
        const scrape = await get(port, alice);
        if (scrape.status !== 200) throw new Error(`a scrape got ${scrape.status}`);
        latencies.push(scrape.ms);
        await sleep(Math.max(0, SCRAPE_EVERY_MS - (performance.now() - started)));
      }
      return latencies;
    };
    const quiet = await scrapeFor(seconds * 1000);
    const flood = floodProcess([String(port), 'sustained', String(FLOOD_CONNECTIONS), String(seconds * 1000 + 1000), 'sustained']);
    await flood.written;
    const cpuFloodBefore = await cpuSeconds(server.pid);
    const during = await scrapeFor(seconds * 1000);
    const floodCpu = (await cpuSeconds(server.pid)) - cpuFloodBefore;
    const report = await flood.done;

    await sleep(2000);
    const rss = { before: rssBefore, after: (await memoryKiB(server.pid)).rss / 1024 };
    const loadAfter = os.loadavg()[0];
    return writeResults(
      { times, serverCheckMs, wrongLatency, bursts, quiet, during, report, floodCpu, seconds, rounds, rss },
      machineFacts(loadBefore, loadAfter),
    );
  } finally {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function writeResults({ times, serverCheckMs, wrongLatency, bursts, quiet, during, report, floodCpu, seconds, rounds, rss }, machine) {
  const ms = (value) => fmt(value, 1);
  const stats = (values) => `${ms(percentile(values, 50))} / ${ms(percentile(values, 99))} / ${ms(Math.max(...values))}`;
  return [
    '| one password check (cost 10) | ms |',
    '|---|---|',
    `| bcryptjs under the exporter's V8 flags (before) | ${ms(times.bcryptjs)} CPU |`,
    `| hash-wasm under the exporter's V8 flags (now) | ${ms(times.hashWasm)} CPU (**${fmt(times.bcryptjs / times.hashWasm)}×** less) |`,
    `| the exporter, per wrong password, 20 in a row | ${ms(serverCheckMs)} CPU; ${ms(percentile(wrongLatency, 50))} answered (p50) |`,
    '',
    `The exporter's RSS before its first password check: ${fmt(rss.before)} MiB; after all of this section's checks: ${fmt(rss.after)} MiB.`,
    '',
    `| scrape with credentials not yet checked, right after a burst of ${BURST} wrong passwords (${rounds} rounds) | p50 / p99 / max ms |`,
    '|---|---|',
    `| each flood connection closed at once | ${stats(bursts.close)} |`,
    `| flood connections kept open | ${stats(bursts.keep)} |`,
    '',
    `| Prometheus's scrape (credentials cached), every ${SCRAPE_EVERY_MS} ms for ${seconds} s | scrapes | p50 / p99 / max ms |`,
    '|---|---|---|',
    `| no flood | ${quiet.length} | ${stats(quiet)} |`,
    `| flood of ${FLOOD_CONNECTIONS} kept-open connections at full speed: ${fmt(report.answered / report.seconds)} wrong passwords answered/s (${report.answered} in ${fmt(report.seconds)} s, all 401: ${report.answered === report.unauthorized ? 'yes' : `**no**, ${JSON.stringify(report.statuses)}`}), the exporter at ${fmt((floodCpu / seconds) * 100, 0)} % of a core | ${during.length} | ${stats(during)} |`,
    '',
    machine,
  ].join('\n');
}
