// One process that measures, on the 1 918-node fat tree of synthetic/fat-tree.ts (18 spines, 100
// leaves x 18 hosts) miswired against the plan saved from it (two host cables swapped, one moved to
// a spare port, one inter-switch cable pulled), with the exporter's own modules from dist/ under the
// V8 flags it sets for itself: judging the cabling (conformance, rails, findings: once per ports
// cycle), rendering the fabric map (GET /fabric), and as the peer in the same process, rendering the
// same fabric's infiniband_fabric_* text (/metrics, once per ports cycle). Prints JSON; run by
// bench/sections/fabric-map.mjs.
import '../dist/startup/set-v8-flags.js';
import { performance } from 'node:perf_hooks';
import { gzipSync } from 'node:zlib';
import { cablingFindings } from '../dist/collectors/fabric/cabling/findings.js';
import { FABRIC_DISCOVERY } from '../dist/collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../dist/collectors/fabric/ports/index.js';
import { parseServeCommandLine } from '../dist/commands/serve/command-line.js';
import { renderFabricMap } from '../dist/commands/serve/fabric-map.js';
import { buildInfo } from '../dist/metrics/build-info.js';
import { exposition } from '../dist/metrics/snapshot-metrics.js';
import { currentCabling } from '../dist/model/cabling.js';
import { judgeConformance } from '../dist/model/cabling-conformance.js';
import { judgeRails } from '../dist/model/rails.js';
import { parsePlan } from '../dist/sources/fabric/cabling-plan.js';
import { resolvePlan } from '../dist/sources/fabric/cabling-plan-resolution.js';
import { formatPlan } from '../dist/sources/fabric/cabling-plan-writer.js';
import { importTypeScript } from './typescript.mjs';

const { rounds, tree } = JSON.parse(process.argv[2]);
const { fatTreeFabric, leafGuid, spineGuid, hostGuid } = await importTypeScript('synthetic/fat-tree.ts');

const fabric = fatTreeFabric({ ...tree, spareLeafPorts: 2 });
const plan = parsePlan(formatPlan(fabric.topology, fabric.readings), 'plan.txt').plan;
const resolved = resolvePlan(plan, fabric.topology, new Map());

// Miswire it, as a ports cycle reads it (switch ports) and a discovery sees it (CA ports).
const key = (guid, port) => `${guid}/${port}`;
function cable(a, b) {
  for (const [self, peer] of [
    [a, b],
    [b, a],
  ]) {
    const k = key(self.nodeGuid, self.port);
    const reading = fabric.readings.get(k);
    if (reading)
      fabric.readings.set(k, {
        ...reading,
        state: { id: 4, name: 'ACTIVE' },
        physicalState: { id: 5, name: 'LinkUp' },
        width: 4,
        speed: 'HDR',
        peer,
      });
    fabric.topology.ports.set(k, { ...self, portGuid: undefined, lid: undefined, peer, enabled: undefined });
  }
}
function pull(address) {
  const k = key(address.nodeGuid, address.port);
  const reading = fabric.readings.get(k);
  fabric.readings.set(k, {
    ...reading,
    state: { id: 1, name: 'DOWN' },
    physicalState: { id: 2, name: 'Polling' },
    width: undefined,
    speed: undefined,
    peer: undefined,
  });
}
const hosts = tree.hostsPerLeaf;
cable({ nodeGuid: leafGuid(10), port: 1 }, { nodeGuid: hostGuid(10, 2, hosts), port: 1 });
cable({ nodeGuid: leafGuid(10), port: 2 }, { nodeGuid: hostGuid(10, 1, hosts), port: 1 });
pull({ nodeGuid: leafGuid(20), port: 3 });
cable({ nodeGuid: leafGuid(20), port: hosts + tree.spines + 1 }, { nodeGuid: hostGuid(20, 3, hosts), port: 1 });
pull({ nodeGuid: leafGuid(30), port: hosts + 5 });
pull({ nodeGuid: spineGuid(5), port: 30 });

function time(task) {
  const samples = [];
  let result;
  for (let i = 0; i < rounds; i++) {
    const started = performance.now();
    result = task();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return {
    result,
    medianMs: samples[Math.floor(samples.length / 2)],
    firstMs: samples[0] === undefined ? 0 : samples[0],
    maxMs: samples.at(-1),
  };
}

const judged = time(() => {
  const cabling = currentCabling(fabric.topology, fabric.readings);
  const report = {
    conformance: judgeConformance(resolved, fabric.topology, fabric.readings, cabling),
    rails: judgeRails(fabric.topology, cabling, undefined),
  };
  return { report, findings: cablingFindings(report, fabric.topology) };
});
const { report, findings } = judged.result;
const map = time(() =>
  renderFabricMap({ topology: fabric.topology, readings: fabric.readings, expectations: new Map(), cabling: report, findings }),
);
// The peer: the fabric collectors' parts of /metrics for the same fabric, as a ports cycle renders them.
const command = parseServeCommandLine(['--collector.fabric']);
const snapshot = {
  devices: [],
  parts: new Map([
    [
      FABRIC_DISCOVERY.name,
      { topology: fabric.topology, cache: undefined, shard: { index: 1, count: 1 }, provisional: false, names: new Map() },
    ],
    [
      FABRIC_PORTS.name,
      { ports: fabric.readings, expectations: new Map(), trend: { risingErrors: new Set(), berOverThreshold: new Set() } },
    ],
  ]),
  reports: [],
  totals: { readErrors: new Map(), commandTimeouts: new Map() },
};
const metrics = time(() => exposition([FABRIC_DISCOVERY, FABRIC_PORTS], command.settings, buildInfo(), snapshot));
const page = Buffer.from(map.result);
process.stdout.write(
  JSON.stringify({
    nodes: fabric.topology.nodes.size,
    plannedCables: resolved.cables.length,
    actions: report.conformance.actions.map((action) => action.kind),
    findings: findings.length,
    judge: { medianMs: judged.medianMs, maxMs: judged.maxMs },
    map: { medianMs: map.medianMs, maxMs: map.maxMs, bytes: page.length, gzipBytes: gzipSync(page).length },
    metrics: { medianMs: metrics.medianMs, maxMs: metrics.maxMs, bytes: Buffer.byteLength(metrics.result) },
  }),
);
