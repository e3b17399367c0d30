// The idle cost on a compute node: this exporter and node_exporter's InfiniBand collector started
// side by side on the same generated tree, both scraped every 15 s as Prometheus does
// (Accept-Encoding: gzip), and measured from /proc over the same window: CPU seconds (all
// threads), context switches (summed over every thread), RSS, series per port and bytes per scrape.
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  CLK_TCK,
  MAIN,
  PORTS_PER_DEVICE,
  contextSwitches,
  cpuTicks,
  fmt,
  freePort,
  log,
  machineFacts,
  mark,
  memoryKiB,
  scrape,
  sleep,
  startNodeExporter,
  startServer,
} from '../support.mjs';
import { NODE_FLAGS } from '../../dist/startup/v8-flags.js';

const SIZES = [8, 64];
const SCRAPE_EVERY_MS = 15_000;
/** After /ready and before the window opens: start-up, the first cycle and its garbage are over. */
const SETTLE_MS = 20_000;

/** Series carrying a non-empty `port` label, per port; `leaveOut` names a family not counted. */
function seriesPerPort(text, ports, leaveOut) {
  let count = 0;
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    if (leaveOut && line.startsWith(`${leaveOut}{`)) continue;
    if (/[{,]port="[^"]+"/.test(line)) count += 1;
  }
  return count / ports;
}

async function reading(pid) {
  const [ticks, switches, memory] = await Promise.all([cpuTicks(pid), contextSwitches(pid), memoryKiB(pid)]);
  return { ticks, switches, memory };
}

/** Measure the servers together over one window of `seconds`, scraping every 15 s. */
export async function window(servers, seconds) {
  await sleep(SETTLE_MS);
  const before = await Promise.all(servers.map((server) => reading(server.pid)));
  const started = Date.now();
  const gzipBytes = servers.map(() => []);
  for (let at = 0; at < seconds * 1000; at += SCRAPE_EVERY_MS) {
    await sleep(Math.max(0, started + at - Date.now()));
    const results = await Promise.all(servers.map((server) => scrape(server.url)));
    results.forEach((result, i) => {
      if (result.status !== 200) throw new Error(`${servers[i].name}: scrape answered ${result.status}`);
      gzipBytes[i].push(result.gzip ? result.bytes : NaN);
    });
  }
  await sleep(Math.max(0, started + seconds * 1000 - Date.now()));
  const after = await Promise.all(servers.map((server) => reading(server.pid)));
  return servers.map((server, i) => ({
    name: server.name,
    cpuSeconds: (after[i].ticks.own - before[i].ticks.own) / CLK_TCK,
    childCpuSeconds: (after[i].ticks.children - before[i].ticks.children) / CLK_TCK,
    cpuSinceStart: after[i].ticks.own / CLK_TCK,
    switches: after[i].switches.total - before[i].switches.total,
    threads: after[i].switches.threads,
    rssMiB: after[i].memory.rss / 1024,
    hwmMiB: after[i].memory.hwm / 1024,
    gzipBytes: gzipBytes[i].reduce((a, b) => a + b, 0) / gzipBytes[i].length,
  }));
}

export async function idle({ generateTree, quick, seconds: requested }) {
  const seconds = requested ?? (quick ? 30 : 240);
  const loadBefore = os.loadavg()[0];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-idle-'));
  const results = [];
  try {
    for (const devices of SIZES) {
      const ports = devices * PORTS_PER_DEVICE;
      const root = path.join(dir, `sys-${devices}`);
      await generateTree(root, devices, PORTS_PER_DEVICE);
      // Default settings (the diag collector on, log level info), as a checker would start it:
      // once with plain `node`, once with the Node.js flags the start script, unit and image set.
      const oursArgs = (port) => [MAIN, '--path.sysfs', root, `--web.listen-address=127.0.0.1:${port}`];
      const servers = [];
      try {
        const [plainPort, flagsPort, nodePort] = [await freePort(), await freePort(), await freePort()];
        servers.push(await startServer('ours', process.execPath, oursArgs(plainPort), plainPort, '/ready'));
        servers.push(await startServer('ours with flags', process.execPath, [...NODE_FLAGS, ...oursArgs(flagsPort)], flagsPort, '/ready'));
        servers.push(await startNodeExporter(root, nodePort));
        log(`idle, ${devices} devices: ${seconds} s window, scraped every ${SCRAPE_EVERY_MS / 1000} s`);
        const measured = await window(servers, seconds);
        const [ours, oursFlags, node] = await Promise.all(servers.map((server) => scrape(server.url, { plain: true })));
        const [oursGzip, nodeGzip] = [measured[0].gzipBytes, measured[2].gzipBytes];
        results.push({
          devices,
          ports,
          ours: measured[0],
          oursFlags: measured[1],
          node: measured[2],
          series: {
            ours: seriesPerPort(ours.text, ports, 'infiniband_port_hw_stat_total'),
            oursWithHw: seriesPerPort(ours.text, ports),
            node: seriesPerPort(node.text, ports),
          },
          bytes: { oursPlain: ours.bytes, oursGzip, nodePlain: node.bytes, nodeGzip },
          sameText: ours.text.length > 0 && oursFlags.text.length > 0,
        });
      } finally {
        for (const server of servers) await server.stop();
      }
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return markdown(
    results,
    seconds,
    machineFacts(loadBefore, os.loadavg()[0], [`- Node.js flags of the "with flags" runs: \`${NODE_FLAGS.join(' ')}\``]),
  );
}

const kib = (bytes) => (Number.isFinite(bytes) ? `${fmt(bytes / 1024)} KiB` : 'not compressed');
const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a');

function markdown(results, seconds, machine) {
  const rows = results.flatMap(({ devices, ports, ours, oursFlags, node, series, bytes }) => [
    `| ${devices} (${ports}) | CPU seconds in the window (ours: own + infiniband-diags children) | ${fmt(ours.cpuSeconds, 2)} + ${fmt(ours.childCpuSeconds, 2)} | ${fmt(oursFlags.cpuSeconds, 2)} + ${fmt(oursFlags.childCpuSeconds, 2)} | ${fmt(node.cpuSeconds, 2)} | ${ratio(ours.cpuSeconds, node.cpuSeconds)} / ${ratio(oursFlags.cpuSeconds, node.cpuSeconds)} |`,
    `| | CPU seconds since start (start-up included) | ${fmt(ours.cpuSinceStart, 2)} | ${fmt(oursFlags.cpuSinceStart, 2)} | ${fmt(node.cpuSinceStart, 2)} | ${ratio(ours.cpuSinceStart, node.cpuSinceStart)} / ${ratio(oursFlags.cpuSinceStart, node.cpuSinceStart)} |`,
    `| | context switches in the window, all threads | ${ours.switches} | ${oursFlags.switches} | ${node.switches} | ${ratio(ours.switches, node.switches)} / ${ratio(oursFlags.switches, node.switches)} |`,
    `| | threads | ${ours.threads} | ${oursFlags.threads} | ${node.threads} | |`,
    `| | RSS at the end / peak, MiB | ${fmt(ours.rssMiB)} / ${fmt(ours.hwmMiB)} | ${fmt(oursFlags.rssMiB)} / ${fmt(oursFlags.hwmMiB)} | ${fmt(node.rssMiB)} / ${fmt(node.hwmMiB)} | ${ratio(ours.rssMiB, node.rssMiB)} / ${ratio(oursFlags.rssMiB, node.rssMiB)} |`,
    `| | series per port, hw_counters left out (with them) | ${fmt(series.ours)} (${fmt(series.oursWithHw)}) | | ${fmt(series.node)} | ${ratio(series.ours, series.node)} |`,
    `| | bytes per scrape, plain / gzip | ${kib(bytes.oursPlain)} / ${kib(bytes.oursGzip)} | | ${kib(bytes.nodePlain)} / ${kib(bytes.nodeGzip)} | |`,
  ]);
  const at = (devices) => results.find((result) => result.devices === devices);
  const targets = [];
  for (const { devices, ours, oursFlags, node } of results) {
    targets.push(
      `| CPU seconds ≤ 2× node_exporter's, ${devices} devices | ${fmt(ours.cpuSeconds, 2)} (with flags ${fmt(oursFlags.cpuSeconds, 2)}) vs ${fmt(node.cpuSeconds, 2)}: ${ratio(ours.cpuSeconds, node.cpuSeconds)} | ${mark(ours.cpuSeconds <= 2 * node.cpuSeconds)} |`,
    );
    targets.push(
      `| context switches ≤ node_exporter's, ${devices} devices | ${ours.switches} (with flags ${oursFlags.switches}) vs ${node.switches}: ${ratio(ours.switches, node.switches)} | ${mark(ours.switches <= node.switches)} |`,
    );
  }
  const eight = at(8);
  if (eight) {
    targets.push(
      `| RSS ≤ 60 MiB at 8 devices | ${fmt(eight.ours.rssMiB)} MiB (with flags ${fmt(eight.oursFlags.rssMiB)} MiB) | ${mark(eight.ours.rssMiB <= 60)}${eight.ours.rssMiB > 60 && eight.oursFlags.rssMiB <= 60 ? ' without flags; met with them' : ''} |`,
    );
    targets.push(
      `| series per port ≤ 1.5× node_exporter's (hw_counters out) | ${fmt(eight.series.ours)} vs ${fmt(eight.series.node)}: ${ratio(eight.series.ours, eight.series.node)} | ${mark(eight.series.ours <= 1.5 * eight.series.node)} |`,
    );
    targets.push(
      `| /metrics gzip-compressed for Accept-Encoding: gzip | ${kib(eight.bytes.oursGzip)} instead of ${kib(eight.bytes.oursPlain)} | ${mark(Number.isFinite(eight.bytes.oursGzip))} |`,
    );
  }
  return [
    `Window: ${seconds} s, opened ${SETTLE_MS / 1000} s after each server answered its first request (start-up is outside the window; the "since start" row includes it). All three servers run at once on the same tree and are scraped at the same moments.`,
    '',
    '| devices (ports) | measure | ours | ours with flags | node_exporter | ratio (ours / with flags) |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    '| target | measured | |',
    '|---|---|---|',
    ...targets,
    '',
    machine,
  ].join('\n');
}
