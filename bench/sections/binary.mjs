// The single executable (npm run release) beside the way npm start runs the exporter
// (`node <NODE_FLAGS of src/startup/v8-flags.ts> dist/main.js`, after its build), on the generated 8-device tree:
// 1. start-up: time from spawn to the first 200 of /metrics (which waits for the first reading),
//    and CPU seconds and RSS at that moment, over `STARTS` starts of each, alternating: node as
//    npm start runs it, the binary as its systemd unit and image run it (NODE_OPTIONS with the same
//    Node.js flags), the binary with an empty environment, and the first two in fabric mode, whose
//    V8 flags differ (the binary holds a code cache for them; dist/ writes one at its first exit);
// 2. the idle section's window (15 s scrapes, start-up outside it) for node as npm start runs it,
//    the binary as the unit runs it, and node_exporter, all at once: the economy goals of
//    DESIGN.md for the binary.
import { spawn } from 'node:child_process';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { get } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { NODE_FLAGS } from '../../dist/startup/v8-flags.js';
import { buildBinary } from '../../scripts/release/binary.mjs';
import { metadata } from '../../scripts/release/release.mjs';
import {
  CLK_TCK,
  MAIN,
  PROJECT,
  PORTS_PER_DEVICE,
  cpuTicks,
  fmt,
  freePort,
  log,
  machineFacts,
  mark,
  memoryKiB,
  sleep,
  startNodeExporter,
  startServer,
} from '../support.mjs';
import { window } from './idle.mjs';

const DEVICES = 8;
const STARTS = 10;
const POLL_MS = 5;

const status = (url) =>
  new Promise((resolve) => {
    get(url, { agent: false }, (response) => {
      response.resume();
      response.on('end', () => resolve(response.statusCode));
    }).on('error', () => resolve(undefined));
  });

/** One start: spawn to the first 200 of /metrics; CPU and RSS then. Stopped by PID afterwards. */
async function firstAnswer(command, args, env) {
  const port = await freePort();
  const started = process.hrtime.bigint();
  const child = spawn(command, [...args, `--web.listen-address=127.0.0.1:${port}`], { env, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${command} exited with ${child.exitCode}`);
      if ((await status(`http://127.0.0.1:${port}/metrics`)) === 200) break;
      await sleep(POLL_MS);
    }
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const [ticks, memory] = [await cpuTicks(child.pid), await memoryKiB(child.pid)];
    return { ms, cpu: ticks.own / CLK_TCK, rssMiB: memory.rss / 1024 };
  } finally {
    process.kill(child.pid, 'SIGTERM');
    await exited;
  }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length % 2 ? sorted[(sorted.length - 1) / 2] : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
};
const range = (values) => `${fmt(Math.min(...values), 2)}–${fmt(Math.max(...values), 2)}`;

export async function binary({ generateTree, quick, seconds: requested }) {
  const seconds = requested ?? (quick ? 30 : 120);
  const starts = quick ? 3 : STARTS;
  const loadBefore = os.loadavg()[0];
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-binary-'));
  const scratch = path.join(PROJECT, 'node_modules/.cache/infiniband-exporter-bench-binary');
  try {
    log('building the single executable (scripts/release/binary.mjs)');
    await rm(scratch, { recursive: true, force: true });
    await mkdir(scratch, { recursive: true });
    const { binary: exe } = await buildBinary({ work: scratch, out: dir, meta: await metadata() });
    const root = path.join(dir, 'sys');
    await generateTree(root, DEVICES, PORTS_PER_DEVICE);

    const nodeOptions = NODE_FLAGS.join(' ');
    const ways = [
      { name: `node ${nodeOptions} dist/main.js (npm start)`, command: process.execPath, args: [...NODE_FLAGS, MAIN], env: process.env },
      { name: `binary, NODE_OPTIONS=${nodeOptions} (unit, image)`, command: exe, args: [], env: { NODE_OPTIONS: nodeOptions } },
      { name: 'binary, empty environment', command: exe, args: [], env: {} },
      {
        name: `node ${nodeOptions} dist/main.js --collector.fabric`,
        command: process.execPath,
        args: [...NODE_FLAGS, MAIN, '--collector.fabric'],
        env: process.env,
      },
      {
        name: `binary --collector.fabric, NODE_OPTIONS=${nodeOptions}`,
        command: exe,
        args: ['--collector.fabric'],
        env: { NODE_OPTIONS: nodeOptions },
      },
    ];
    const samples = ways.map(() => []);
    log(`start-up: ${starts} starts of each, alternating`);
    for (let round = 0; round < starts; round++) {
      for (const [i, way] of ways.entries()) samples[i].push(await firstAnswer(way.command, [...way.args, '--path.sysfs', root], way.env));
    }

    log(`idle, ${DEVICES} devices: ${seconds} s window`);
    const servers = [];
    let measured;
    try {
      const [nodePort, binaryPort, exporterPort] = [await freePort(), await freePort(), await freePort()];
      servers.push(
        await startServer(
          'npm start',
          process.execPath,
          [...NODE_FLAGS, MAIN, '--path.sysfs', root, `--web.listen-address=127.0.0.1:${nodePort}`],
          nodePort,
          '/ready',
        ),
      );
      servers.push(
        await startServer('binary', exe, ['--path.sysfs', root, `--web.listen-address=127.0.0.1:${binaryPort}`], binaryPort, '/ready', {
          env: { NODE_OPTIONS: nodeOptions },
        }),
      );
      servers.push(await startNodeExporter(root, exporterPort));
      measured = await window(servers, seconds);
    } finally {
      for (const server of servers) await server.stop();
    }
    return markdown({ ways, samples, measured, seconds, starts, machine: machineFacts(loadBefore, os.loadavg()[0]) });
  } finally {
    await rm(dir, { recursive: true, force: true });
    await rm(scratch, { recursive: true, force: true });
  }
}

function markdown({ ways, samples, measured, seconds, starts, machine }) {
  const startRows = ways.map((way, i) => {
    const ms = samples[i].map((s) => s.ms);
    const cpu = samples[i].map((s) => s.cpu);
    const rss = samples[i].map((s) => s.rssMiB);
    return `| ${way.name} | ${fmt(median(ms), 0)} (${fmt(Math.min(...ms), 0)}–${fmt(Math.max(...ms), 0)}) | ${fmt(median(cpu), 2)} (${range(cpu)}) | ${fmt(median(rss))} (${fmt(Math.min(...rss))}–${fmt(Math.max(...rss))}) |`;
  });
  const [npm, exe, node] = measured;
  const ratio = (a, b) => (b > 0 ? `${(a / b).toFixed(2)}×` : 'n/a');
  const idleRows = [
    `| CPU seconds in the window | ${fmt(npm.cpuSeconds, 2)} | ${fmt(exe.cpuSeconds, 2)} | ${fmt(node.cpuSeconds, 2)} |`,
    `| CPU seconds since start | ${fmt(npm.cpuSinceStart, 2)} | ${fmt(exe.cpuSinceStart, 2)} | ${fmt(node.cpuSinceStart, 2)} |`,
    `| context switches in the window, all threads | ${npm.switches} | ${exe.switches} | ${node.switches} |`,
    `| threads | ${npm.threads} | ${exe.threads} | ${node.threads} |`,
    `| RSS at the end / peak, MiB | ${fmt(npm.rssMiB)} / ${fmt(npm.hwmMiB)} | ${fmt(exe.rssMiB)} / ${fmt(exe.hwmMiB)} | ${fmt(node.rssMiB)} / ${fmt(node.hwmMiB)} |`,
  ];
  const targets = [
    `| binary's CPU ≤ 2× node_exporter's | ${fmt(exe.cpuSeconds, 2)} vs ${fmt(node.cpuSeconds, 2)}: ${ratio(exe.cpuSeconds, node.cpuSeconds)} (npm start ${ratio(npm.cpuSeconds, node.cpuSeconds)}) | ${mark(exe.cpuSeconds <= 2 * node.cpuSeconds)} |`,
    `| binary's context switches ≤ node_exporter's | ${exe.switches} vs ${node.switches}: ${ratio(exe.switches, node.switches)} (npm start ${ratio(npm.switches, node.switches)}) | ${mark(exe.switches <= node.switches)} |`,
    `| binary's RSS ≤ 60 MiB at 8 devices | ${fmt(exe.rssMiB)} MiB (npm start ${fmt(npm.rssMiB)} MiB) | ${mark(exe.rssMiB <= 60)} |`,
  ];
  return [
    `Start-up: ${starts} starts of each, alternating, on the ${DEVICES}-device tree at default settings; median (range).`,
    '',
    '| started as | time to the first answer of /metrics, ms | CPU seconds then | RSS then, MiB |',
    '|---|---|---|---|',
    ...startRows,
    '',
    `Idle: ${seconds} s window, opened 20 s after each answered, scraped every 15 s at the same moments, all three at once.`,
    '',
    '| measure | npm start | binary (unit) | node_exporter |',
    '|---|---|---|---|',
    ...idleRows,
    '',
    '| goal (DESIGN.md, "Economy") | measured | |',
    '|---|---|---|',
    ...targets,
    '',
    machine,
  ].join('\n');
}
