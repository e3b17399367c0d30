// The fabric map (GET /fabric) and the cabling judgement at 1 918 nodes: bench/fabric-map-render.mjs
// in a process of its own (the exporter's V8 flags), beside the render of the same fabric's
// /metrics text as the peer. No simulator needed: the fat tree is generated as fabric mode reads it.
import os from 'node:os';
import path from 'node:path';
import { PROJECT, log, run } from '../support.mjs';

const TREE = { spines: 18, leaves: 100, hostsPerLeaf: 18 };
const ROUNDS = 15;

export async function fabricMap({ quick } = {}) {
  const loadBefore = os.loadavg()[0];
  log('fabric map: rendering the 1 918-node fat tree');
  const r = JSON.parse(
    await run(process.execPath, [
      path.join(PROJECT, 'bench/fabric-map-render.mjs'),
      JSON.stringify({ tree: TREE, rounds: quick ? 5 : ROUNDS }),
    ]),
  );
  const loadAfter = os.loadavg()[0];
  const ms = (value) => `${value.toFixed(value < 10 ? 1 : 0)} ms`;
  const n = (value) => value.toLocaleString('en').replace(/,/g, ' ');
  const kib = (bytes) => `${n(Math.round(bytes / 1024))} KiB`;
  const ratio = r.map.medianMs / r.metrics.medianMs;
  return [
    `The ${n(r.nodes)}-node fat tree (18 spines, 100 leaves x 18 hosts, two spare ports a leaf) against the plan saved from it, ${n(r.plannedCables)} planned cables, miswired: two host cables swapped, one moved to a spare port, one inter-switch cable pulled (${r.findings} cabling findings; actions: ${r.actions.join(', ')}). Median of ${quick ? 5 : ROUNDS} runs in one process with the exporter's V8 flags (\`bench/fabric-map-render.mjs\`):`,
    '',
    '| work | when | median | slowest | output |',
    '|---|---|---|---|---|',
    `| cabling judgement (conformance, rails, findings) | each ports cycle | ${ms(r.judge.medianMs)} | ${ms(r.judge.maxMs)} | |`,
    `| **fabric map page** (\`GET /fabric\`) | each request | **${ms(r.map.medianMs)}** | ${ms(r.map.maxMs)} | ${kib(r.map.bytes)} (${kib(r.map.gzipBytes)} gzip) |`,
    `| peer: the same fabric's \`infiniband_fabric_*\` text | each ports cycle | ${ms(r.metrics.medianMs)} | ${ms(r.metrics.maxMs)} | ${kib(r.metrics.bytes)} |`,
    '',
    '| goal | measured | |',
    '|---|---|---|',
    `| map page well under 1 s | ${ms(r.map.medianMs)}, ${ratio.toFixed(2)} × the /metrics render | ${r.map.maxMs < 500 ? 'met' : '**missed**'} |`,
    `| map page under 2 MB | ${kib(r.map.bytes)} | ${r.map.bytes < 2e6 ? 'met' : '**missed**'} |`,
    '',
    `Machine: ${os.cpus()[0]?.model ?? 'unknown'}, ${os.cpus().length} cores, shared with other work; Node.js ${process.version}; load average (1 min) before / after: ${loadBefore.toFixed(2)} / ${loadAfter.toFixed(2)}; ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC.`,
  ].join('\n');
}
