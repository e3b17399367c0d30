// One process that measures fabric-mode work on a running simulated fabric and prints JSON: our
// discovery and ports+counters cycle (the exporter's own modules from dist/, the real tools through
// the lab's wrappers), and in the same process the peers they are compared with (one
// `ibqueryerrors --data --details`; `ibnetdiscover` then one `perfquery -l -x -G` per switch, one
// after another). For each: wall time, this process's CPU, its children's CPU (the tools: the
// wrappers exec them, and Node reaps them), ibsim's CPU, and the MADs the exporter host's port
// sent (its PortXmitPkts, read locally, which does not move the counter). Run by bench/fabric.mjs.
// First, the V8 flags the exporter sets for itself (dist/main.js imports them first too): our
// cycles are measured as the exporter runs them.
import '../dist/startup/runtime-flags.js';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import pino from 'pino';
import { Collection } from '../dist/collection/collection.js';
import { FabricMode } from '../dist/collection/fabric.js';
import { RecurringErrors } from '../dist/log/recurring-errors.js';
import { renderFabric } from '../dist/metrics/fabric.js';
import { ExecaRunner } from '../dist/sources/command-runner.js';
import { NO_DEVICE_FILTER } from '../dist/sources/device-filter.js';
import { parseIbnetdiscover } from '../dist/sources/fabric/ibnetdiscover.js';
import { SysfsFiles } from '../dist/sources/sysfs-files.js';

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
const collection = new Collection({
  files: new SysfsFiles('/nonexistent'), devices: NO_DEVICE_FILTER, expectations: [], logger, errors: new RecurringErrors(logger),
  collectors: ['fabric_discovery', 'fabric_ports', 'fabric_sa'], commands: [],
});
const runner = new ExecaRunner({ paths, timeoutMs: 120_000, maxConcurrent, maxOutputBytes: 64 * 1024 * 1024 });
const settings = {
  enabled: true, intervalMs: 60_000, discoveryIntervalMs: 600_000, maxConcurrent, nodeNameMap: undefined, hcaPorts: false,
  shard: { index: 1, count: 1 }, paths: {}, expectations: [],
};
const mode = new FabricMode({ settings, timeoutMs: 120_000, runner, collection, logger });
const failures = () => collection.snapshot?.reports.filter((report) => !report.success).map((report) => `${report.collector}: ${report.errors.map((e) => e.message).join('; ')}`) ?? [];

global.gc?.();
// The heap of this process before fabric mode holds anything: what the model adds is measured against it.
const baseHeap = process.memoryUsage().heapUsed / 2 ** 20;
const results = {};
results.discovery = await repeat(rounds.discovery, () => mode.discovery.runNow());
results.ports = await repeat(rounds.ports, () => mode.portsLoop.runNow());
const snapshot = mode.snapshot();
global.gc?.();
results.heapLiveMiB = process.memoryUsage().heapUsed / 2 ** 20 - baseHeap;
const renderStarted = performance.now();
const text = await renderFabric(snapshot);
results.render = { seconds: (performance.now() - renderStarted) / 1000, bytes: Buffer.byteLength(text), series: text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length };
results.fabric = {
  nodes: snapshot.topology.nodes.size,
  switches: [...snapshot.topology.nodes.values()].filter((node) => node.type === 'switch').length,
  switchPorts: snapshot.ports.size,
  portsWithCounters: [...snapshot.ports.values()].filter((port) => port.counters.length === 21).length,
};
results.failures = failures();

await mode.stop();

// The peers, in the same process and the same way.
results.ibqueryerrors = await repeat(rounds.ports, () => run(paths.ibqueryerrors, ['--data', '--details'], { maxBuffer: 256 * 1024 * 1024 }).catch((error) => {
  if (error.code !== 1) throw error; // exit 1: it found ports with errors
}));
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
