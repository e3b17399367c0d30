// The fabric-mode benchmark: on a generated two-level fat tree of 1 918 nodes (18 spines x 100
// leaves x 18 hosts, run by ibsim with one opensm), our discovery and our ports+counters cycle
// (states, widths, speeds and PMA counters of every switch port) beside, in the same run, one
// `ibqueryerrors --data --details` (the single C process guilbaults' exporter wraps) and
// `ibnetdiscover` followed by one `perfquery -l -x -G` per switch, one after another (treydock's
// default). Then the exporter itself in fabric mode on that fabric: RSS, series, scrape size.
//
// `fabricBenchmark()` returns the markdown section; bench/run.mjs writes it into docs/benchmarks.md
// between the bench:fabric markers (`npm run bench:fabric` runs this section alone).
import { spawn } from 'node:child_process';
import http from 'node:http';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { execa } from 'execa';
import { NODE_FLAGS } from '../dist/startup/v8-flags.js';
import { importTypeScript } from './typescript.mjs';

const PROJECT = fileURLToPath(new URL('..', import.meta.url));
const TREE = { spines: 18, leaves: 100, hostsPerLeaf: 18 };
const ROUNDS = { discovery: 3, ports: 5, sequential: 5 };
const MAX_CONCURRENT = 8;
const EXPORTER_HOST = 'H1_2';
const SM_HOST = 'H1_1';
// The exporter process is measured as the systemd unit, the image and npm start run it (with the
// Node.js flags of src/startup/v8-flags.ts) and as a plain `node dist/main.js`.
const NODE_OPTIONS = [NODE_FLAGS, []];
// From the test harness (synthetic/processes.ts), loaded by fabricBenchmark().
let freePort;
let waitFor;

function log(message) {
  process.stderr.write(`bench:fabric: ${message}\n`);
}

/** Run a command to its end (with a time limit); resolves with its stdout. */
async function run(command, args, limitMs = 600_000) {
  return (await execa(command, args, { timeout: limitMs })).stdout;
}

async function memoryMiB(pid) {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)[1]) / 1024;
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** GET /metrics with this Accept-Encoding; the body as received, decoded when it came compressed. */
function scrapeOnce(url, encoding) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const request = http.get(url, { headers: { 'accept-encoding': encoding } }, (response) => {
      const chunks = [];
      response.on('data', (chunk) => chunks.push(chunk));
      response.on('end', () => {
        const body = Buffer.concat(chunks);
        const gzipped = response.headers['content-encoding'] === 'gzip';
        resolve({ text: (gzipped ? gunzipSync(body) : body).toString(), wireBytes: body.length, gzipped, ms: performance.now() - started });
      });
      response.on('error', reject);
    });
    request.on('error', reject);
  });
}

/**
 * The exporter in fabric mode on the lab for `seconds` after its first ports cycle, started with
 * `nodeOptions` (Node.js/V8 flags, as NODE_OPTIONS would give them), its RSS read every second:
 * scraped every 5 s with `Accept-Encoding: gzip` (as Prometheus asks), without compression
 * (`identity`), or not at all (fabric mode's own footprint, without the copies serving makes).
 * RSS range and peak, series, scrape size and time.
 */
async function exporterFootprint(paths, switchPorts, seconds, scrape, nodeOptions) {
  const port = await freePort();
  const args = [
    ...nodeOptions,
    path.join(PROJECT, 'dist/main.js'),
    '--collector.fabric',
    '--no-collector.diag',
    '--path.sysfs',
    path.join(PROJECT, 'test/fixtures/sys/no-infiniband'),
    '--web.listen-address',
    `127.0.0.1:${port}`,
    '--log.level',
    'warn',
    '--diag.timeout',
    '120s',
    '--fabric.interval',
    '15s',
    '--fabric.max-concurrent',
    String(MAX_CONCURRENT),
    ...['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo', 'perfquery'].flatMap((tool) => [
      `--${tool}.path`,
      paths[tool],
    ]),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-4000)));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const url = `http://127.0.0.1:${port}/metrics`;
  try {
    await waitFor(
      "the exporter's first ports cycle",
      async () => {
        if (child.exitCode !== null) throw new Error(`exporter exited: ${stderr}`);
        const { text } = await scrapeOnce(url, 'gzip').catch(() => ({ text: '' }));
        return text.split('\n').filter((line) => line.startsWith('infiniband_fabric_port_state_id{')).length === switchPorts
          ? true
          : undefined;
      },
      180_000,
      5000,
    );
    const samples = [];
    const scrapes = [];
    for (let elapsed = 0; elapsed < seconds; elapsed += 1) {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      if (scrape !== 'none' && elapsed % 5 === 4) scrapes.push(await scrapeOnce(url, scrape));
      samples.push((await memoryMiB(child.pid)).rss);
    }
    const hwm = (await memoryMiB(child.pid)).hwm;
    const last = scrapes.at(-1) ?? (await scrapeOnce(url, 'gzip'));
    const ms = scrapes.map((one) => one.ms).sort((a, b) => a - b);
    return {
      scrape,
      nodeOptions,
      min: Math.min(...samples),
      max: Math.max(...samples),
      hwm,
      series: last.text.split('\n').filter((l) => l !== '' && !l.startsWith('#')).length,
      bytes: Buffer.byteLength(last.text),
      wireBytes: last.wireBytes,
      gzipped: last.gzipped,
      scrapeMs: ms[Math.floor(ms.length / 2)] ?? last.ms,
    };
  } finally {
    child.kill('SIGTERM');
    await exited;
  }
}

/** Run the benchmark; returns its markdown section. */
export async function fabricBenchmark() {
  const loadBefore = os.loadavg()[0];
  if (loadBefore > 1) log(`load average is ${loadBefore.toFixed(2)}: results will be noisy (the doc says so)`);
  // dist/ is built by bench/run.mjs.
  const { generateFabric, shapeSize } = await importTypeScript('synthetic/fabric-generator/topology.ts');
  const { ibsimNet } = await importTypeScript('synthetic/fabric-generator/net.ts');
  const { FABRIC_TOOLS, Lab } = await importTypeScript('synthetic/ibsim-lab.ts');
  ({ freePort, waitFor } = await importTypeScript('synthetic/processes.ts'));

  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-bench-fabric-'));
  const net = path.join(dir, 'fat-tree.net');
  const shape = { tiers: 2, ...TREE };
  // ibsim's own counters (from 0), as before the generator preset them.
  await writeFile(net, ibsimNet(generateFabric({ shape }), { counters: false }));
  const { switches, hosts } = shapeSize(shape);
  log(`starting ibsim with ${switches + hosts} nodes and opensm`);
  const lab = await Lab.start(net);
  try {
    await lab.startSm('sm', SM_HOST, 0);
    await lab.waitSmState('sm', 'MASTER', 120_000);
    // The SM configures ports in discovery order: the last host's port comes last.
    await waitFor(
      'every port to be configured',
      () =>
        lab.waitActive(`H${TREE.leaves}_${TREE.hostsPerLeaf}`).then(
          () => true,
          () => undefined,
        ),
      120_000,
      200,
    );
    const paths = await lab.wrappers(EXPORTER_HOST, EXPORTER_HOST, FABRIC_TOOLS);
    const ibsimPid = lab.ibsimPid;

    log('measuring our cycles and the peers');
    const out = await run(process.execPath, [
      '--expose-gc',
      path.join(PROJECT, 'bench/fabric-cycle.mjs'),
      JSON.stringify({ paths, ibsimPid, rounds: ROUNDS, maxConcurrent: MAX_CONCURRENT }),
    ]);
    const result = JSON.parse(out.trim().split('\n').at(-1));
    if (result.failures.length > 0) throw new Error(`our cycles failed: ${result.failures.join(' | ')}`);
    if (result.fabric.portsWithCounters !== result.fabric.switchPorts)
      throw new Error(`counters for ${result.fabric.portsWithCounters} of ${result.fabric.switchPorts} switch ports`);

    log('measuring the exporter process in fabric mode, scraped and not scraped');
    const footprints = [];
    for (const nodeOptions of NODE_OPTIONS) {
      for (const scrape of ['gzip', 'identity', 'none'])
        footprints.push(await exporterFootprint(paths, result.fabric.switchPorts, 60, scrape, nodeOptions));
    }
    const loadAfter = os.loadavg()[0];
    return section(result, footprints, loadBefore, loadAfter);
  } finally {
    await lab.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const s = (seconds) => `${seconds.toFixed(2)} s`;
const n = (value) => Math.round(value).toLocaleString('en-US').replace(/,/g, ' ');
const mark = (ok) => (ok ? 'met' : '**missed**');
const flagsOf = (footprint) =>
  footprint.nodeOptions.length === 0 ? 'none (`node dist/main.js`)' : footprint.nodeOptions.map((flag) => `\`${flag}\``).join(' ');

function section(r, footprints, loadBefore, loadAfter) {
  const row = (name, m) =>
    `| ${name}${m.crashes ? ` (crashed with SIGSEGV in ${m.crashes} more run${m.crashes > 1 ? 's' : ''}, run again)` : ''} | ${s(m.seconds)} | ${m.cpuSelf.toFixed(2)} | ${m.cpuTools.toFixed(2)} | ${m.cpuIbsim.toFixed(2)} | ${n(m.mads)} |`;
  const vsQuery = r.ports.seconds / r.ibqueryerrors.seconds;
  const vsLoop = r.sequentialPerfquery.seconds / r.ports.seconds;
  const mib = (value) => `${value.toFixed(0)} MiB`;
  return [
    `### Fabric mode: ${n(r.fabric.nodes)} nodes (${TREE.spines} spines, ${TREE.leaves} leaves x ${TREE.hostsPerLeaf} hosts), ${n(r.fabric.switchPorts)} switch ports`,
    '',
    `Medians of ${ROUNDS.ports} runs (discovery and \`ibnetdiscover\`: ${ROUNDS.discovery}, the sequential loop: ${ROUNDS.sequential}), in one process, one after another. CPU in seconds:`,
    "the measuring process itself (for our runs: the exporter's own parsing and bookkeeping), the tools it ran, and the simulator.",
    "MADs: packets the exporter host's port sent (its PortXmitPkts, read locally before and after).",
    '',
    '| run | wall | CPU (process) | CPU (tools) | CPU (ibsim) | MADs sent |',
    '|---|---|---|---|---|---|',
    row('**ours: discovery** (`ibnetdiscover --cache`)', r.discovery),
    row('**ours: ports + counters cycle** (`iblinkinfo --line --switches-only` beside 2 × `ibqueryerrors --load-cache`)', r.ports),
    row('`ibqueryerrors --data --details` (guilbaults: counters only, a discovery of its own inside)', r.ibqueryerrors),
    row('`ibnetdiscover` alone', r.ibnetdiscover),
    row(`\`ibnetdiscover\` + ${r.fabric.switches} × \`perfquery -l -x -G\`, one after another (treydock's default)`, r.sequentialPerfquery),
    '',
    '| goal | measured | |',
    '|---|---|---|',
    `| ports+counters cycle ≤ 2 × one \`ibqueryerrors --data --details\` | ${vsQuery.toFixed(2)} × (${s(r.ports.seconds)} vs ${s(r.ibqueryerrors.seconds)}) | ${mark(vsQuery <= 2)} |`,
    `| ≥ 5 × faster than the sequential perfquery loop | ${vsLoop.toFixed(1)} × (${s(r.sequentialPerfquery.seconds)} vs ${s(r.ports.seconds)}) | ${mark(vsLoop >= 5)} |`,
    ...footprints
      .filter((f) => f.scrape === 'gzip')
      .map(
        (f) =>
          `| exporter RSS < 150 MiB (${flagsOf(f)}, scraped with gzip every 5 s) | ${mib(f.min)}–${mib(f.max)}, peak ${mib(f.hwm)} | ${mark(f.hwm < 150)} |`,
      ),
    '',
    `Memory: the fabric model of this fabric (topology, 5 400 port readings, expectations) is ${mib(r.heapLiveMiB)} of live heap after a garbage collection in the measuring process;`,
    `rendering its ${n(r.render.series)} series takes ${s(r.render.seconds)} and gives ${(r.render.bytes / 2 ** 20).toFixed(1)} MiB of text, rendered once per ports cycle.`,
    '',
    `The exporter process (\`node [flags] dist/main.js --collector.fabric --fabric.interval 15s\`), RSS read every second for 60 s after its first ports cycle, the peak from the kernel (VmHWM):`,
    '',
    '| Node.js flags | scraped every 5 s | RSS | peak RSS | bytes per scrape | ms per scrape |',
    '|---|---|---|---|---|---|',
    ...footprints.map(
      (f) =>
        `| ${flagsOf(f)} | ${f.scrape === 'none' ? 'not scraped' : `\`Accept-Encoding: ${f.scrape}\``} | ${mib(f.min)}–${mib(f.max)} | ${mib(f.hwm)} | ${f.scrape === 'none' ? '' : `${(f.wireBytes / 2 ** 20).toFixed(1)} MiB${f.gzipped ? ' gzip' : ''}`} | ${f.scrape === 'none' ? '' : f.scrapeMs.toFixed(0)} |`,
    ),
    '',
    `Every scrape: ${n(footprints[0].series)} series, ${(footprints[0].bytes / 2 ** 20).toFixed(1)} MiB of text. Where the RSS goes: "Fabric mode: memory" above.`,
    '',
    `Machine: ${os.cpus()[0]?.model ?? 'unknown'}, ${os.cpus().length} cores, shared with other work; Node.js ${process.version}; load average (1 min) before / after: ${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
  ].join('\n');
}
