#!/usr/bin/env node
// node bench/job-placement.mjs [jobs]: what placing the running jobs costs, in this process, on
// the fabric-scale section's 24 576-host tree with its generated jobs (same generator, shape,
// faults, host names and seeds): squeue's output parsed, every footprint computed, the next
// reading (nothing changed), and a new discovery of the same fabric. Each is run step by step as
// the exporter runs it in time slices; printed: its CPU time in all, and the CPU and wall time of
// its longest step (wall time includes the machine's other work: on a loaded machine the two differ).
// Then the jobs' series of shard 1 of 4 rendered once, every port of the shard up at full width
// and speed (each link judged: the work a render does whatever the links' state).
import { performance } from 'node:perf_hooks';
import { aiClusterSpec } from './ai-cluster.mjs';
import { importTypeScript } from './typescript.mjs';

const count = Number(process.argv[2] ?? 2000);
const [
  g,
  { parseIbnetdiscover },
  { buildTopology },
  { parseSqueueSteps },
  { JobPlacement },
  { inShard },
  jobMetrics,
  { ExpositionBuffer },
  { switchPortsUp },
] = await Promise.all([
  importTypeScript('synthetic/fabric-generator/index.ts'),
  importTypeScript('src/sources/fabric/ibnetdiscover.ts'),
  importTypeScript('src/sources/fabric/discovery.ts'),
  importTypeScript('src/sources/jobs/squeue.ts'),
  importTypeScript('src/model/job-footprint.ts'),
  importTypeScript('src/model/fabric.ts'),
  importTypeScript('src/collectors/fabric/jobs/metrics.ts'),
  importTypeScript('src/exposition/buffer.ts'),
  importTypeScript('synthetic/fat-tree.ts'),
]);

const fabric = g.generateFabric(aiClusterSpec(g));
const discover = () => {
  const chunks = [];
  g.ibnetdiscover(fabric, (text) => chunks.push(text));
  return buildTopology(parseIbnetdiscover(chunks.join('')), undefined, new Map(), 0);
};
const squeue = g.squeueOutput(g.generateJobs(fabric, { count, seed: 34 }));

/** Run work step by step; its CPU in all and its longest step. */
function measure(name, work) {
  let cpu = 0;
  let longest = { cpu: 0, wall: 0 };
  for (;;) {
    const wallStart = performance.now();
    const cpuStart = process.cpuUsage();
    const step = work.next();
    const used = process.cpuUsage(cpuStart);
    const stepCpu = (used.user + used.system) / 1000;
    const wall = performance.now() - wallStart;
    cpu += stepCpu;
    if (stepCpu > longest.cpu) longest = { cpu: stepCpu, wall };
    if (step.done) {
      console.log(`${name}: ${cpu.toFixed(0)} ms CPU; longest step ${longest.cpu.toFixed(1)} ms CPU (${longest.wall.toFixed(1)} ms wall)`);
      return step.value;
    }
  }
}

const topology = discover();
const { jobs, unparsed } = measure(`squeue's output parsed (${(squeue.length / 2 ** 20).toFixed(2)} MiB)`, parseSqueueSteps(squeue));
const running = jobs.filter((job) => job.hosts.length >= 2);
const placement = new JobPlacement(undefined);
const placed = measure(`${running.length} jobs placed, every footprint computed`, placement.placeSteps(topology, running));
measure('the next reading, nothing changed', placement.placeSteps(topology, running));
measure('a new discovery of the same fabric', placement.placeSteps(discover(), running));

// The jobs' series as shard 1 of 4 writes them: its switch ports, all up.
const shard = { index: 1, count: 4 };
const ports = switchPortsUp(topology, 'NDR', (guid) => inShard(guid, shard));
const parts = new Map([
  ['jobs', { source: 'squeue', jobs: placed, shard, linkIds: placement.linkIds }],
  [
    'fabric_ports',
    { ports, expectations: new Map(), trend: { risingErrors: new Set(), berOverThreshold: new Set() }, congestion: { ratios: new Map() } },
  ],
]);
const out = new ExpositionBuffer();
measure(
  `the jobs' series of shard 1 of 4 (${ports.size} switch ports) rendered after a ports cycle`,
  jobMetrics.writeMetrics({ devices: [], parts, reports: [], totals: {} }, out),
);
// A jobs reading between two ports cycles: the same ports part, the jobs placed again (nothing changed).
parts.set('jobs', {
  source: 'squeue',
  jobs: measure('placed again', placement.placeSteps(topology, running)),
  shard,
  linkIds: placement.linkIds,
});
measure(
  "the jobs' series rendered after a jobs reading (the same ports cycle)",
  jobMetrics.writeMetrics({ devices: [], parts, reports: [], totals: {} }, new ExpositionBuffer()),
);

const links = placed.reduce((sum, job) => sum + job.links.length, 0);
console.log(
  `${jobs.length} jobs (${unparsed.count} lines not understood), ${placement.computed} footprints computed, ${links} links held, the largest ${Math.max(...placed.map((job) => job.links.length))}; heap used ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MiB; load ${(await import('node:os')).loadavg()[0].toFixed(2)}`,
);
