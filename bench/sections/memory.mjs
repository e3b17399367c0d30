// Memory over time at Prometheus's pace: the idle section's window is two minutes, but a compute
// node runs the exporter for months, and what a snapshot leaves behind only shows after many
// readings. This exporter as started by default, the same with V8's --no-optimize-for-size (the
// heap growth V8 chooses on its own; src/startup/v8-flags.ts says why the exporter sets the flag), and
// node_exporter, on the 8-device tree, all scraped every 15 s at the same moments for
// `--memory-minutes` (30 by default): RSS of each every five minutes, our V8 heap and external
// memory from our own /metrics, and CPU seconds over the whole run. Not run by default (it takes
// half an hour): `npm run bench -- memory`.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  CLK_TCK,
  MAIN,
  PORTS_PER_DEVICE,
  cpuTicks,
  fmt,
  freePort,
  log,
  machineFacts,
  mark,
  memoryKiB,
  sampleValue,
  scrape,
  sleep,
  startNodeExporter,
  startServer,
} from '../support.mjs';

const DEVICES = 8;
const SCRAPE_EVERY_MS = 15_000;
const REPORT_EVERY_MS = 5 * 60_000;

const MiB = (bytes) => bytes / 2 ** 20;

export async function memory({ generateTree, quick, minutes: requested }) {
  const minutes = requested ?? (quick ? 5 : 30);
  const loadBefore = os.loadavg()[0];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-memory-'));
  const servers = [];
  const rows = [];
  try {
    const root = path.join(dir, 'sys');
    await generateTree(root, DEVICES, PORTS_PER_DEVICE);
    const ours = (port, flags) => [...flags, MAIN, '--path.sysfs', root, `--web.listen-address=127.0.0.1:${port}`];
    const [defaultPort, growPort, nodePort] = [await freePort(), await freePort(), await freePort()];
    servers.push(await startServer('ours', process.execPath, ours(defaultPort, []), defaultPort, '/ready'));
    servers.push(
      await startServer('ours, --no-optimize-for-size', process.execPath, ours(growPort, ['--no-optimize-for-size']), growPort, '/ready'),
    );
    servers.push(await startNodeExporter(root, nodePort));
    log(`memory, ${DEVICES} devices: ${minutes} min, scraped every ${SCRAPE_EVERY_MS / 1000} s`);
    const before = await Promise.all(servers.map((server) => cpuTicks(server.pid)));
    const started = Date.now();
    let nextReport = 0;
    for (let at = 0; at <= minutes * 60_000; at += SCRAPE_EVERY_MS) {
      await sleep(Math.max(0, started + at - Date.now()));
      const results = await Promise.all(servers.map((server) => scrape(server.url)));
      if (at < nextReport) continue;
      nextReport += REPORT_EVERY_MS;
      const rss = await Promise.all(servers.map(async (server) => (await memoryKiB(server.pid)).rss / 1024));
      rows.push({
        minute: at / 60_000,
        rss,
        heap: results.slice(0, 2).map(({ text }) => ({
          used: MiB(sampleValue(text, 'nodejs_heap_size_used_bytes')),
          total: MiB(sampleValue(text, 'nodejs_heap_size_total_bytes')),
          external: MiB(sampleValue(text, 'nodejs_external_memory_bytes')),
        })),
      });
    }
    const after = await Promise.all(servers.map((server) => cpuTicks(server.pid)));
    const cpu = after.map((ticks, i) => (ticks.own - before[i].own) / CLK_TCK);
    return markdown(rows, cpu, minutes, machineFacts(loadBefore, os.loadavg()[0]));
  } finally {
    for (const server of servers) await server.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

function markdown(rows, cpu, minutes, machine) {
  const heap = ({ used, total, external }) => `${fmt(used)} / ${fmt(total)} / ${fmt(external)}`;
  const table = rows.map(
    ({ minute, rss, heap: [ours, grow] }) =>
      `| ${minute} | ${fmt(rss[0])} | ${heap(ours)} | ${fmt(rss[1])} | ${heap(grow)} | ${fmt(rss[2])} |`,
  );
  const settled = rows.filter(({ minute }) => minute >= 5);
  const peak = (i) => Math.max(...settled.map(({ rss }) => rss[i]));
  const lowest = (i) => Math.min(...settled.map(({ rss }) => rss[i]));
  return [
    `${DEVICES} devices (${DEVICES * PORTS_PER_DEVICE} ports), ${minutes} minutes, all three scraped every ${SCRAPE_EVERY_MS / 1000} s at the same moments (\`Accept-Encoding: gzip\`). RSS in MiB; heap used / heap total / external in MiB, from our own /metrics.`,
    '',
    '| minute | ours: RSS | ours: heap | `--no-optimize-for-size`: RSS | `--no-optimize-for-size`: heap | node_exporter: RSS |',
    '|---|---|---|---|---|---|',
    ...table,
    '',
    `CPU seconds over the ${minutes} minutes: ours ${fmt(cpu[0], 2)}, with \`--no-optimize-for-size\` ${fmt(cpu[1], 2)}, node_exporter ${fmt(cpu[2], 2)}.`,
    '',
    '| target | measured | |',
    '|---|---|---|',
    `| RSS ≤ 60 MiB at 8 devices, from minute 5 on | ${fmt(lowest(0))}–${fmt(peak(0))} MiB (\`--no-optimize-for-size\`: ${fmt(lowest(1))}–${fmt(peak(1))}) | ${mark(peak(0) <= 60)} |`,
    '',
    machine,
  ].join('\n');
}
