#!/usr/bin/env node
// Where the idle exporter spends its CPU, wake-ups and memory (docs/benchmarks.md, "Where the idle
// cost is"). On a generated tree of N devices (default 8), with default settings:
//   1. a CPU profile (node --cpu-prof) of the process scraped every 15 s: self time by package;
//   2. context switches of every thread, by thread name, over the same window;
//   3. process.memoryUsage() of the exporter, through the inspector-free way: /proc/<pid>/status
//      and the nodejs_* metrics it serves;
//   4. RSS of processes that only import the dependencies, one at a time and all together.
// Usage: [PROF_INTERVAL=µs] node bench/profile-idle.mjs [devices] [seconds] [exporter flags…]
// (PROF_INTERVAL: the CPU profile's sampling interval, default 1000 µs; 100 gives finer figures.)
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  CLK_TCK,
  MAIN,
  PROJECT,
  PORTS_PER_DEVICE,
  cpuTicks,
  freePort,
  log,
  memoryKiB,
  prepare,
  run,
  scrape,
  sleep,
  startServer,
  stopAll,
} from './support.mjs';
import { NODE_FLAGS } from '../dist/startup/v8-flags.js';

const devices = Number(process.argv[2] ?? 8);
const seconds = Number(process.argv[3] ?? 60);
/** Further arguments go to the exporter, e.g. --no-collector.diag. */
const exporterArgs = process.argv.slice(4);
const SCRAPE_EVERY_MS = 15_000;

async function threads(pid) {
  const result = new Map();
  for (const task of await readdir(`/proc/${pid}/task`)) {
    try {
      const [comm, status] = await Promise.all([
        readFile(`/proc/${pid}/task/${task}/comm`, 'utf8'),
        readFile(`/proc/${pid}/task/${task}/status`, 'utf8'),
      ]);
      const count = (name) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)[1]);
      result.set(`${comm.trim()} (${task})`, count('voluntary_ctxt_switches') + count('nonvoluntary_ctxt_switches'));
    } catch {
      // ended in between
    }
  }
  return result;
}

/**
 * Self time of a .cpuprofile summed by where the code lives: a package, node internals, ours; only
 * the samples taken `skipMs` after the profile started or later (the window).
 */
function summarise(profile, skipMs) {
  const byNode = new Map(profile.nodes.map((node) => [node.id, node]));
  const self = new Map();
  const functions = new Map();
  const from = profile.startTime + skipMs * 1000;
  const total = profile.endTime - from;
  const deltas = profile.timeDeltas;
  let at = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    at += deltas[i] ?? 0;
    if (at < from) continue;
    const node = byNode.get(profile.samples[i]);
    const { url, functionName } = node.callFrame;
    let where;
    if (functionName === '(idle)' || functionName === '(program)' || functionName === '(garbage collector)') where = functionName;
    else if (url.includes('/node_modules/'))
      where = url
        .slice(url.lastIndexOf('/node_modules/') + 14)
        .split('/')
        .slice(0, url.includes('/node_modules/@') ? 2 : 1)
        .join('/');
    else if (url.startsWith('node:')) where = `node:${url.slice(5).split('/')[0]} (${functionName || 'anonymous'})`;
    else if (url.includes('/dist/')) where = `dist/${url.slice(url.lastIndexOf('/dist/') + 6)}`;
    else where = url || `(native ${functionName})`;
    self.set(where, (self.get(where) ?? 0) + (deltas[i] ?? 0));
    const fn = `${functionName || '(anonymous)'} ${url.split('/').slice(-2).join('/')}:${node.callFrame.lineNumber + 1}`;
    functions.set(fn, (functions.get(fn) ?? 0) + (deltas[i] ?? 0));
  }
  const busy = [...self].filter(([where]) => where !== '(idle)').reduce((sum, [, us]) => sum + us, 0);
  const top = (map, n) =>
    [...map]
      .filter(([where]) => !where.startsWith('(idle)'))
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([where, us]) => [where, us / 1000]);
  return { totalMs: total / 1000, busyMs: busy / 1000, top: top(self, 25), functions: top(functions, 30) };
}

async function importOnly(modules, flags = []) {
  const imports = modules.map((name) => `await import(${JSON.stringify(name)});`).join(' ');
  const report =
    "const { readFileSync } = await import('node:fs'); setTimeout(() => process.stdout.write(/VmRSS:\\s+(\\d+)/.exec(readFileSync('/proc/self/status', 'utf8'))[1]), 1500);";
  const out = await run(process.execPath, [...flags, '--input-type=module', '-e', `${imports} ${report}`], { cwd: PROJECT });
  return Number(out) / 1024;
}

/** Start the exporter with `nodeArgs`, scrape it every 15 s for the window, read /proc around it. */
async function observe(root, nodeArgs) {
  const port = await freePort();
  const spawnedAt = Date.now();
  const server = await startServer(
    'ours',
    process.execPath,
    [...nodeArgs, MAIN, '--path.sysfs', root, `--web.listen-address=127.0.0.1:${port}`, ...exporterArgs],
    port,
    '/ready',
  );
  try {
    await sleep(10_000);
    const windowAfterMs = Date.now() - spawnedAt;
    const ticksBefore = await cpuTicks(server.pid);
    const before = await threads(server.pid);
    for (let at = 0; at < seconds * 1000; at += SCRAPE_EVERY_MS) {
      await scrape(server.url);
      await sleep(Math.min(SCRAPE_EVERY_MS, seconds * 1000 - at));
    }
    const after = await threads(server.pid);
    const ticksAfter = await cpuTicks(server.pid);
    const memory = await memoryKiB(server.pid);
    const own = (await scrape(server.url, { plain: true })).text;
    return { ticksBefore, ticksAfter, before, after, memory, own, windowAfterMs };
  } finally {
    await server.stop();
  }
}

async function main() {
  const generateTree = await prepare();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ibx-profile-'));
  try {
    const root = path.join(dir, 'sys');
    await generateTree(root, devices, PORTS_PER_DEVICE);
    // Two runs: the sampling profiler interrupts the main thread every millisecond, so context
    // switches are counted in a run without it.
    const plain = await observe(root, []);
    const profiles = path.join(dir, 'profiles');
    const profiled = await observe(root, [
      '--cpu-prof',
      '--cpu-prof-interval',
      process.env.PROF_INTERVAL ?? '1000',
      '--cpu-prof-dir',
      profiles,
    ]);
    const [file] = await readdir(profiles);
    // The profile starts a little after the process; the window is taken as starting that much
    // later, which counts a few milliseconds of start-up at most.
    const profile = summarise(JSON.parse(await readFile(path.join(profiles, file), 'utf8')), profiled.windowAfterMs);
    const { ticksBefore, ticksAfter, before, after, memory, own } = plain;
    const lines = [
      `# ${devices} devices, ${seconds} s window after 10 s, scraped every ${SCRAPE_EVERY_MS / 1000} s; exporter flags: ${exporterArgs.join(' ') || 'none'}`,
      '',
    ];
    lines.push(
      `CPU in the window (/proc): ${((ticksAfter.own - ticksBefore.own) / CLK_TCK).toFixed(2)} s own, ${((ticksAfter.children - ticksBefore.children) / CLK_TCK).toFixed(2)} s children`,
    );
    lines.push('', 'Context switches by thread in the window:');
    for (const [name, count] of after) lines.push(`  ${name}: ${count - (before.get(name) ?? 0)}`);
    lines.push(
      '',
      `CPU profile of the window (second run): ${profile.busyMs.toFixed(0)} ms busy of ${profile.totalMs.toFixed(0)} ms; self time by place:`,
    );
    for (const [where, ms] of profile.top) lines.push(`  ${ms.toFixed(1).padStart(8)} ms  ${where}`);
    lines.push('', 'Self time by function:');
    for (const [where, ms] of profile.functions) lines.push(`  ${ms.toFixed(1).padStart(8)} ms  ${where}`);
    lines.push('', `RSS ${(memory.rss / 1024).toFixed(1)} MiB, peak ${(memory.hwm / 1024).toFixed(1)} MiB`);
    for (const name of ['nodejs_heap_size_total_bytes', 'nodejs_heap_size_used_bytes', 'nodejs_external_memory_bytes']) {
      const value = new RegExp(`^${name} (\\S+)`, 'm').exec(own)?.[1];
      if (value) lines.push(`  ${name}: ${(Number(value) / 2 ** 20).toFixed(1)} MiB`);
    }
    lines.push('', "RSS of a process that only imports (MiB, default flags / with the project's flags):");
    const sets = [
      [],
      ['fastify'],
      ['pino'],
      ['prom-client'],
      ['execa'],
      ['yaml'],
      ['bcryptjs'],
      ['fastify', 'pino', 'prom-client'],
      ['fastify', 'pino', 'prom-client', 'execa', 'yaml', 'bcryptjs'],
    ];
    for (const set of sets) {
      const plain = await importOnly(set);
      const flagged = await importOnly(set, NODE_FLAGS);
      lines.push(`  ${(set.join(' + ') || 'nothing').padEnd(56)} ${plain.toFixed(1)} / ${flagged.toFixed(1)}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

process.on('SIGINT', () => {
  stopAll();
  process.exit(130);
});
main().catch((error) => {
  stopAll();
  log(error.stack ?? String(error));
  process.exit(1);
});
