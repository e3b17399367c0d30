// One process that measures fabric-mode work on a running simulated fabric and prints JSON: our
// discovery and ports+counters cycle (the exporter's own modules from dist/, the real tools through
// the lab's wrappers), and in the same process the peers they are compared with (one
// `ibqueryerrors --data --details`; `ibnetdiscover` then one `perfquery -l -x -G` per switch, one
// after another). For each: wall time, this process's CPU, its children's CPU (the tools: the
// wrappers exec them, and Node reaps them), ibsim's CPU, and the MADs the exporter host's port
// sent (its PortXmitPkts, read locally, which does not move the counter). Run by bench/fabric.mjs.
// First, the V8 flags the exporter sets for itself (dist/main.js imports them first too): our
// cycles are measured as the exporter runs them.
import { setFlagsFromString } from 'node:v8';
import { chooseV8Flags } from '../dist/startup/v8-flags.js';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pino from 'pino';
import { Collectors } from '../dist/collection/scheduler.js';
import { FABRIC_DISCOVERY } from '../dist/collectors/fabric/discovery.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../dist/collectors/fabric/fabric-mode.js';
import { FABRIC_PORTS } from '../dist/collectors/fabric/ports/index.js';
import { FABRIC_SA } from '../dist/collectors/fabric/sa.js';
import { parseServeCommandLine } from '../dist/commands/serve/command-line.js';
import { ExpositionBuffer } from '../dist/exposition/buffer.js';
import { ExecaRunner } from '../dist/sources/command-runner.js';
import { parseIbnetdiscover } from '../dist/sources/fabric/ibnetdiscover.js';

// The V8 flags the exporter sets for itself in fabric mode (src/startup/v8-flags.ts).
for (const flag of chooseV8Flags(process.execArgv, { fabric: true })) setFlagsFromString(flag);

const run = promisify(execFile);
const { paths, ibsimPid, rounds, maxConcurrent } = JSON.parse(process.argv[2]);
const CLK_TCK = Number((await run('getconf', ['CLK_TCK'])).stdout.trim());

function stat(pid) {
  const text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // utime, stime, cutime, cstime (fields 14-17 of proc(5), counted from 3 here)
  return { self: (Number(fields[11]) + Number(fields[12])) / CLK_TCK, children: (Number(fields[13]) + Number(fields[14])) / CLK_TCK };
}

async function madsSent() {
  const { stdout } = await run(paths.perfquery, ['-x']);
  return Number(/^PortXmitPkts:\.*(\d+)$/m.exec(stdout)[1]);
}

/** Wall time, CPU (ours, the tools', ibsim's) and MADs of one run of `task`. */
async function measure(task) {
  const mads = await madsSent();
  const before = stat('self');
  const sim = stat(ibsimPid).self;
  const started = performance.now();
  await task();
  const seconds = (performance.now() - started) / 1000;
  const after = stat('self');
  return {
    seconds,
    cpuSelf: after.self - before.self,
    cpuTools: after.children - before.children,
    cpuIbsim: stat(ibsimPid).self - sim,
    mads: (await madsSent()) - mads,
  };
}

const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
function summary(samples) {
  return Object.fromEntries(Object.keys(samples[0]).map((key) => [key, median(samples.map((sample) => sample[key]))]));
}

/** `count` measured runs; a run that crashes (a peer tool killed by a signal) is counted and run again, up to `count` times. */
async function repeat(count, task) {
  const samples = [];
  let crashes = 0;
  while (samples.length < count) {
    try {
      samples.push(await measure(task));
    } catch (error) {
      if (!error.signal || crashes >= count) throw error;
      crashes += 1;
      process.stderr.write(`bench:fabric: ${error.cmd} killed by ${error.signal}; running it again\n`);
    }
  }
  return { ...summary(samples), crashes };
}

const logger = pino({ level: 'silent' });
const runner = new ExecaRunner({ paths, timeoutMs: 120_000, maxConcurrent, maxOutputBytes: 64 * 1024 * 1024 });
const { settings } = parseServeCommandLine([
  '--collector.fabric',
  '--path.sysfs',
  '/nonexistent',
  '--diag.timeout',
  '120s',
  '--fabric.max-concurrent',
  String(maxConcurrent),
]);
const registry = [FABRIC_DISCOVERY, FABRIC_PORTS, FABRIC_SA];
const collection = new Collectors(registry, { settings, logger, mode: 'serve', runners: { fabric: runner } });
const failures = () =>
  collection.snapshot?.reports
    .filter((report) => !report.success)
    .map((report) => `${report.collector}: ${report.errors.map((e) => e.message).join('; ')}`) ?? [];

global.gc?.();
// The heap of this process before fabric mode holds anything: what the model adds is measured against it.
const baseHeap = process.memoryUsage().heapUsed / 2 ** 20;
const results = {};
results.discovery = await repeat(rounds.discovery, () => collection.runCycle(DISCOVERY_CYCLE));
results.ports = await repeat(rounds.ports, () => collection.runCycle(FABRIC_PORTS_CYCLE));
const snapshot = collection.snapshot;
global.gc?.();
results.heapLiveMiB = process.memoryUsage().heapUsed / 2 ** 20 - baseHeap;
const renderStarted = performance.now();
const text = registry
  .map((collector) => {
    const out = new ExpositionBuffer();
    collector.metrics.write(snapshot, out, settings);
    return out.finish().toString('utf8');
  })
  .join('\n');
results.render = {
  seconds: (performance.now() - renderStarted) / 1000,
  bytes: Buffer.byteLength(text),
  series: text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length,
};
const { topology } = FABRIC_DISCOVERY.of(snapshot);
const { ports } = FABRIC_PORTS.of(snapshot);
results.fabric = {
  nodes: topology.nodes.size,
  switches: [...topology.nodes.values()].filter((node) => node.type === 'switch').length,
  switchPorts: ports.size,
  portsWithCounters: [...ports.values()].filter((port) => port.counters.length === 21).length,
};
results.failures = failures();

await collection.stop();

// The peers, in the same process and the same way.
results.ibqueryerrors = await repeat(rounds.ports, () =>
  run(paths.ibqueryerrors, ['--data', '--details'], { maxBuffer: 256 * 1024 * 1024 }).catch((error) => {
    if (error.code !== 1) throw error; // exit 1: it found ports with errors
  }),
);
results.ibnetdiscover = await repeat(rounds.discovery, () => run(paths.ibnetdiscover, [], { maxBuffer: 256 * 1024 * 1024 }));
results.sequentialPerfquery = await repeat(rounds.sequential, async () => {
  const { stdout } = await run(paths.ibnetdiscover, [], { maxBuffer: 256 * 1024 * 1024 });
  const topology = parseIbnetdiscover(stdout);
  for (const node of topology.nodes.filter((n) => n.type === 'switch')) {
    const ports = topology.ports.filter((port) => port.nodeGuid === node.guid).map((port) => port.port);
    await run(paths.perfquery, ['-l', '-x', '-G', node.guid, ports.join(',')], { maxBuffer: 64 * 1024 * 1024 });
  }
});
process.stdout.write(`${JSON.stringify(results)}\n`);
