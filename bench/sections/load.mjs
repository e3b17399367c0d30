// Scrapes under load: this exporter beside node_exporter's InfiniBand collector on the same
// generated sysfs trees (1, 8, 64, 256 devices): scrape latency and throughput at a fixed
// concurrency, CPU per 1000 scrapes, peak RSS, our collection cycle against a read-only baseline,
// and a 100 000-scrape soak. Servers on CPU 0, the load generator on CPU 1, 127.0.0.1 only. Also
// draws docs/benchmarks.png.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { chartSvg } from '../chart.mjs';
import {
  MAIN,
  PORTS_PER_DEVICE,
  PROJECT,
  cpuSeconds,
  fmt,
  freePort,
  log,
  machineFacts,
  mark,
  memoryKiB,
  run,
  sampleValue,
  startNodeExporter,
  startServer,
} from '../support.mjs';

const PNG = path.join(PROJECT, 'docs/benchmarks.png');
const SIZES = [1, 8, 64, 256];
const CONNECTIONS = 8;
// Seconds of load per measurement (autocannon stops an --amount run only on a whole-second tick,
// which skews throughput, so runs are timed); the slow side gets longer for enough samples. Every
// run is also capped in scrapes.
const SECONDS = { ours: { 1: 5, 8: 5, 64: 5, 256: 5 }, node: { 1: 5, 8: 5, 64: 10, 256: 15 } };
const MAX_SCRAPES_PER_RUN = 1_000_000;
const CYCLE_ROUNDS = { 1: 41, 8: 21, 64: 11, 256: 5 };
// The memory goal is set at 8 devices: RSS at most 60 MiB, flat over 100 000 scrapes.
const SOAK = { devices: 8, chunks: 10, perChunk: 10000 };
// autocannon measures latency in whole milliseconds.
const ms = (v) => (v < 1 ? '<1' : v.toFixed(0));

const AUTOCANNON = path.join(PROJECT, 'node_modules/autocannon/autocannon.js');

/** autocannon on CPU 1 over CONNECTIONS connections: `{ seconds }` of load, or `{ amount }` scrapes. */
async function autocannon(url, { seconds, amount }) {
  const bound = seconds !== undefined ? ['-d', String(seconds), '-O', String(MAX_SCRAPES_PER_RUN)] : ['-a', String(amount)];
  const out = await run('taskset', ['-c', '1', process.execPath, AUTOCANNON, '-c', String(CONNECTIONS), ...bound, '-t', '30', '-j', url]);
  const result = JSON.parse(out);
  if (result.errors || result.timeouts || result.non2xx)
    throw new Error(`${url}: ${result.errors} errors, ${result.timeouts} timeouts, ${result.non2xx} non-2xx`);
  return {
    p50: result.latency.p50,
    p99: result.latency.p99,
    throughput: result.requests.total / result.duration,
    requests: result.requests.total,
    bytesPerScrape: result.throughput.total / result.requests.total,
  };
}

/** One server under load: latency, throughput, CPU per 1000 scrapes, peak RSS. */
async function measure(server, seconds) {
  const idleMiB = (await memoryKiB(server.pid)).rss / 1024;
  await autocannon(server.url, { amount: 100 });
  const cpuBefore = await cpuSeconds(server.pid);
  const result = await autocannon(server.url, { seconds });
  const cpu = (await cpuSeconds(server.pid)) - cpuBefore;
  const memory = await memoryKiB(server.pid);
  return { ...result, cpuPer1000: (cpu / result.requests) * 1000, idleMiB, hwmMiB: memory.hwm / 1024 };
}

/** The tree really is read by both: one state series per port. */
async function checkSeries(ours, node, ports) {
  const count = async (url, prefix) => (await (await fetch(url)).text()).split('\n').filter((line) => line.startsWith(prefix)).length;
  const [a, b] = [await count(ours.url, 'infiniband_port_state_id{'), await count(node.url, 'node_infiniband_state_id{')];
  if (a !== ports || b !== ports) throw new Error(`expected ${ports} ports from both, got ${a} (ours) and ${b} (node_exporter)`);
}

export async function load({ generateTree, quick }) {
  const loadBefore = os.loadavg()[0];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-bench-'));
  const rows = [];
  let memoryVariant;
  let soak;
  let emptyMiB;
  try {
    // What the process costs before any device: Node.js, fastify, prom-client, pino, execa, yaml
    // (on a sysfs root with class/ and no class/infiniband: a host without InfiniBand).
    await mkdir(path.join(dir, 'class'));
    const emptyPort = await freePort();
    const empty = await startServer(
      'infiniband-exporter',
      process.execPath,
      [MAIN, '--no-collector.diag', '--path.sysfs', dir, '--log.level', 'warn', `--web.listen-address=127.0.0.1:${emptyPort}`],
      emptyPort,
      '/ready',
      { cpu: 0 },
    );
    emptyMiB = (await memoryKiB(empty.pid)).rss / 1024;
    await empty.stop();
    for (const devices of quick ? [1, 8] : SIZES) {
      const root = path.join(dir, `sys-${devices}`);
      await generateTree(root, devices, PORTS_PER_DEVICE);
      log(`${devices} devices: collection cycle against the read-only baseline`);
      const cycle = JSON.parse(
        await run('taskset', ['-c', '0', process.execPath, path.join(PROJECT, 'bench/cycle.mjs'), root, String(CYCLE_ROUNDS[devices])]),
      );

      const oursArgs = [MAIN, '--no-collector.diag', '--path.sysfs', root, '--log.level', 'warn'];
      const oursPort = await freePort();
      const ours = await startServer(
        'infiniband-exporter',
        process.execPath,
        [...oursArgs, `--web.listen-address=127.0.0.1:${oursPort}`],
        oursPort,
        '/ready',
        { cpu: 0 },
      );
      const nodePort = await freePort();
      const node = await startNodeExporter(root, nodePort, { cpu: 0 });
      try {
        await checkSeries(ours, node, devices * PORTS_PER_DEVICE);
        log(`${devices} devices: load on infiniband-exporter`);
        const oursResult = await measure(ours, quick ? 2 : SECONDS.ours[devices]);
        log(`${devices} devices: load on node_exporter`);
        const nodeResult = await measure(node, quick ? 2 : SECONDS.node[devices]);
        rows.push({ devices, ports: devices * PORTS_PER_DEVICE, ours: oursResult, node: nodeResult, cycle });
      } finally {
        await ours.stop();
        await node.stop();
      }

      if (devices === 256 && !quick) {
        log('256 devices: memory with a 2 MiB young generation');
        const port = await freePort();
        const small = await startServer(
          'infiniband-exporter',
          process.execPath,
          [...oursArgs, `--web.listen-address=127.0.0.1:${port}`],
          port,
          '/ready',
          { cpu: 0, env: { NODE_OPTIONS: '--max-semi-space-size=2' } },
        );
        try {
          memoryVariant = await measure(small, SECONDS.ours[256]);
        } finally {
          await small.stop();
        }
      }
      if (devices === SOAK.devices && !quick) {
        log(`${devices} devices: soak of ${SOAK.chunks * SOAK.perChunk} scrapes`);
        const port = await freePort();
        const server = await startServer(
          'infiniband-exporter',
          process.execPath,
          [...oursArgs, `--web.listen-address=127.0.0.1:${port}`],
          port,
          '/ready',
          { cpu: 0 },
        );
        try {
          const samples = [];
          for (let chunk = 1; chunk <= SOAK.chunks; chunk++) {
            await autocannon(server.url, { amount: SOAK.perChunk });
            const heap = sampleValue(await (await fetch(server.url)).text(), 'nodejs_heap_size_used_bytes');
            samples.push({ scrapes: chunk * SOAK.perChunk, rssMiB: (await memoryKiB(server.pid)).rss / 1024, heapMiB: heap / 2 ** 20 });
          }
          soak = { devices, samples, hwmMiB: (await memoryKiB(server.pid)).hwm / 1024 };
        } finally {
          await server.stop();
        }
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const loadAfter = os.loadavg()[0];
  return writeResults(rows, memoryVariant, soak, emptyMiB, machineFacts(loadBefore, loadAfter, [autocannonFacts()]));
}

async function writeResults(rows, memoryVariant, soak, emptyMiB, machine) {
  const table = [
    '| devices (ports) | exposition ours / node_exporter | p50 ms ours / ne | p99 ms ours / ne | scrapes/s ours / ne | throughput ratio | CPU s per 1000 scrapes ours / ne | RSS before load, MiB ours / ne | peak RSS MiB ours / ne | cycle ms (+ render ms) | read-only baseline ms (sync / async loop) | cycle ÷ baseline (sync / async) |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      ({ devices, ports, ours, node, cycle }) =>
        `| ${devices} (${ports}) | ${fmt(ours.bytesPerScrape / 1024)} / ${fmt(node.bytesPerScrape / 1024)} KiB | ${ms(ours.p50)} / ${ms(node.p50)} | ${ms(ours.p99)} / ${ms(node.p99)} | ${fmt(ours.throughput)} / ${fmt(node.throughput)} | **${fmt(ours.throughput / node.throughput)}×** | ${fmt(ours.cpuPer1000, 2)} / ${fmt(node.cpuPer1000, 2)} | ${fmt(ours.idleMiB)} / ${fmt(node.idleMiB)} | ${fmt(ours.hwmMiB)} / ${fmt(node.hwmMiB)} | ${fmt(cycle.cycleMs)} (+ ${fmt(cycle.renderMs)}) | ${fmt(cycle.baselineSyncMs)} / ${fmt(cycle.baselineAsyncMs)} | ${(cycle.cycleMs / cycle.baselineSyncMs).toFixed(2)} / ${(cycle.cycleMs / cycle.baselineAsyncMs).toFixed(2)} |`,
    ),
  ].join('\n');
  const at = (devices) => rows.find((row) => row.devices === devices);
  const latencyOk = rows.every((row) => row.ours.p99 <= row.node.p50);
  const r64 = at(64);
  const r256 = at(256);
  const cycleOk = rows.every((row) => row.cycle.cycleMs <= 2 * row.cycle.baselineSyncMs);
  const cycleAsyncOk = rows.every((row) => row.cycle.cycleMs <= 2 * row.cycle.baselineAsyncMs);
  // RSS swings by several MiB with the garbage collector's phase: growth is the mean of the second
  // half of the samples against the mean of the first half, not last against first.
  const mean = (samples) => samples.reduce((sum, sample) => sum + sample.rssMiB, 0) / samples.length;
  const half = soak ? Math.floor(soak.samples.length / 2) : 0;
  const soakFirst = soak ? mean(soak.samples.slice(0, half)) : undefined;
  const soakGrowth = soak ? mean(soak.samples.slice(half)) - soakFirst : undefined;
  const targets = [
    `| our p99 ≤ node_exporter's p50 at every size | ${rows.map((row) => `${row.devices} devices: ${ms(row.ours.p99)} vs ${ms(row.node.p50)} ms`).join('; ')} | ${mark(latencyOk)} |`,
    r64 &&
      `| throughput ≥ 10× node_exporter's at 64 devices | ${fmt(r64.ours.throughput / r64.node.throughput)}× | ${mark(r64.ours.throughput >= 10 * r64.node.throughput)} |`,
    `| cycle ≤ 2× the read-only baseline | sync loop: ${rows.map((row) => (row.cycle.cycleMs / row.cycle.baselineSyncMs).toFixed(1)).join(', ')}×; sequential async loop: ${rows.map((row) => (row.cycle.cycleMs / row.cycle.baselineAsyncMs).toFixed(2)).join(', ')}× | ${mark(cycleOk)} against the sync loop; ${mark(cycleAsyncOk)} against the async loop |`,
    r256 &&
      `| peak RSS ≤ 80 MiB at 256 devices | ${fmt(r256.ours.hwmMiB)} MiB (default Node.js flags; the same process on a host without devices: ${fmt(emptyMiB)} MiB)${memoryVariant ? `; ${fmt(memoryVariant.hwmMiB)} MiB with \`NODE_OPTIONS=--max-semi-space-size=2\` (${fmt(memoryVariant.throughput)} scrapes/s, p99 ${ms(memoryVariant.p99)} ms)` : ''} | ${mark(r256.ours.hwmMiB <= 80)} |`,
    soak &&
      `| no RSS growth over a 100 000-scrape soak (${soak.devices} devices) | RSS after each 10 000: ${soak.samples.map((s) => fmt(s.rssMiB)).join(', ')} MiB; heap used: ${soak.samples.map((s) => fmt(s.heapMiB)).join(', ')} MiB; mean RSS of the second 50 000 against the first: ${soakGrowth >= 0 ? '+' : ''}${fmt(soakGrowth)} MiB (met when within 5 %) | ${mark(soakGrowth <= 0.05 * soakFirst)} |`,
  ].filter(Boolean);
  const block = [
    '### Results',
    '',
    table,
    '',
    '### Targets',
    '',
    '| target | measured | |',
    '|---|---|---|',
    ...targets,
    '',
    '### Machine',
    '',
    machine,
    '',
    '![Scrapes per second and p99 latency, infiniband-exporter and node_exporter, by host size](benchmarks.png)',
  ].join('\n');
  const svg = chartSvg(
    rows.map(({ devices, ours, node }) => ({ devices, ours, node })),
    `${CONNECTIONS} connections, ${PORTS_PER_DEVICE} ports per device, same sysfs tree for both; ${new Date().toISOString().slice(0, 10)}`,
  );
  const svgFile = path.join(os.tmpdir(), `ibx-bench-${process.pid}.svg`);
  await writeFile(svgFile, svg);
  try {
    await run('rsvg-convert', ['-o', PNG, svgFile]);
  } catch (error) {
    throw new Error(`rsvg-convert failed (apt-get install -y librsvg2-bin): ${error.message}`);
  } finally {
    await rm(svgFile, { force: true });
  }
  log(`wrote ${path.relative(PROJECT, PNG)}`);
  return block;
}

function autocannonFacts() {
  const version = JSON.parse(
    execFileSync(
      process.execPath,
      ['-e', 'process.stdout.write(JSON.stringify(require("./node_modules/autocannon/package.json").version))'],
      { cwd: PROJECT, encoding: 'utf8' },
    ),
  );
  return `- Servers pinned to CPU 0, the load generator to CPU 1 (\`taskset\`); autocannon ${version}, ${CONNECTIONS} connections`;
}
