#!/usr/bin/env node
// Where fabric mode's memory goes: node bench/fabric-heap.mjs [--shard=1/4] [--hosts=24576]
// [--jobs=N] [--snapshot] [--keep=DIR] [--watch=SECONDS] [--node-flag=FLAG…] [--stdout=FILE] [--no-launcher-env] [--launcher-flags] [-- exporter flags…], or --summarise=FILE of a snapshot taken before (with --retainers=TYPE: what holds that type's objects; with --dominators[=MiB]: what each object keeps alive). Generates the scale bench's fabric (same shape and faults, same seed),
// starts the exporter on it through the fake tools, waits for the first ports cycle and one gzip
// scrape, then records RSS (now and peak), V8's heap, and with --snapshot a heap snapshot summed
// by constructor (count and self size, largest first). --keep writes the plain /metrics there
// (metrics.txt) to diff two builds series by series; the scenario is kept beside it and reused.
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, open, readdir, readFile, readlink, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { MAIN, PROJECT, blockWhere, cpuSeconds, freePort, log, memoryKiB, scrape, sleep, toolRuns } from './support.mjs';
import { aiClusterSpec, fabricExporterArgs, launcherEnv, launcherFlags, toolsNice } from './ai-cluster.mjs';
import { importTypeScript } from './typescript.mjs';

const option = (name) => process.argv.find((arg) => arg.startsWith(`--${name}=`))?.split('=')[1];
const shard = option('shard');
const hosts = Number(option('hosts') ?? 24_576);
// Running jobs, as fabric-scale's shard has them (--jobs=2000: its count and seed), run by a fake squeue.
const jobs = Number(option('jobs') ?? 0);
const keep = option('keep');
const snapshot = process.argv.includes('--snapshot');
const watch = Number(option('watch') ?? 0);
// Node.js or V8 flags for the exporter, to measure one: --node-flag=--heap-growing-percent=20 (repeatable).
const nodeFlags = process.argv.filter((arg) => arg.startsWith('--node-flag=')).map((arg) => arg.slice('--node-flag='.length));
// The exporter's standard output into a file (with --node-flag=--trace-gc: V8's collections, to set beside the event loop's blocks).
const stdoutFile = option('stdout');
const exporterFlags = process.argv.includes('--') ? process.argv.slice(process.argv.indexOf('--') + 1) : [];

async function scenarioDir(g, dir) {
  // Named by what it is: an older bench's scenario (other host names) is not taken for this one.
  const scenario = path.join(dir, `ai-cluster-${hosts}${jobs > 0 ? `-jobs-${jobs}` : ''}`);
  if (await stat(path.join(scenario, 'ibnetdiscover.stdout')).catch(() => undefined)) return scenario;
  log(`generating ${hosts} hosts${jobs > 0 ? ` and ${jobs} jobs` : ''}`);
  const fabric = g.generateFabric(aiClusterSpec(g, hosts));
  return g.writeScenario(fabric, scenario, jobs > 0 ? { jobs: g.generateJobs(fabric, { count: jobs, seed: 34 }) } : {}).dir;
}

/**
 * A heap snapshot's JSON, read without making one string of it (at 122 880 ports it passes V8's
 * 512 MiB string limit): its numbers arrays scanned from the bytes, the rest parsed.
 */
async function readSnapshot(file) {
  const bytes = await readFile(file);
  const section = (name) => bytes.indexOf(`"${name}":[`) + name.length + 4;
  const numbers = (from) => {
    const values = [];
    let value = 0;
    let inNumber = false;
    for (let i = from; ; i++) {
      const c = bytes[i];
      if (c >= 48 && c <= 57) {
        value = value * 10 + (c - 48);
        inNumber = true;
      } else {
        if (inNumber) values.push(value);
        value = 0;
        inNumber = false;
        if (c === 93) return values;
      }
    }
  };
  const head = JSON.parse(`${bytes.toString('utf8', 0, bytes.indexOf('"nodes":['))}"nodes":[]}`);
  const stringsAt = section('strings');
  const strings = JSON.parse(`[${bytes.toString('utf8', stringsAt, bytes.lastIndexOf(']'))}]`);
  return { snapshot: head.snapshot, nodes: numbers(section('nodes')), edges: numbers(section('edges')), strings };
}

/** Sums of a heap snapshot by constructor (node name for objects, type for the others). */
async function summarise(file) {
  const snap = await readSnapshot(file);
  const meta = snap.snapshot.meta;
  const fields = meta.node_fields.length;
  const types = meta.node_types[0];
  const at = (name) => meta.node_fields.indexOf(name);
  const [typeAt, nameAt, sizeAt] = [at('type'), at('name'), at('self_size')];
  const edgeFields = meta.edge_fields.length;
  const [edgeTypeAt, edgeNameAt] = [meta.edge_fields.indexOf('type'), meta.edge_fields.indexOf('name_or_index')];
  const edgeTypes = meta.edge_types[0];
  const edgeCountAt = at('edge_count');
  const sums = new Map();
  let edge = 0;
  for (let i = 0; i < snap.nodes.length; i += fields) {
    const type = types[snap.nodes[i + typeAt]];
    const edges = snap.nodes[i + edgeCountAt];
    // A plain object by its property names: which of the model's interfaces it is.
    if (type === 'object' && snap.strings[snap.nodes[i + nameAt]] === 'Object') {
      const names = [];
      for (let e = edge; e < edge + edges * edgeFields; e += edgeFields)
        if (edgeTypes[snap.edges[e + edgeTypeAt]] === 'property') names.push(snap.strings[snap.edges[e + edgeNameAt]]);
      const key = `{${names
        .filter((name) => name !== '__proto__')
        .slice(0, 8)
        .join(',')}}`;
      const sum = sums.get(key) ?? { count: 0, bytes: 0 };
      sum.count++;
      sum.bytes += snap.nodes[i + sizeAt];
      sums.set(key, sum);
    }
    edge += edges * edgeFields;
    const key = type === 'object' || type === 'native' || type === 'closure' ? `${type} ${snap.strings[snap.nodes[i + nameAt]]}` : type;
    const sum = sums.get(key) ?? { count: 0, bytes: 0 };
    sum.count++;
    sum.bytes += snap.nodes[i + sizeAt];
    sums.set(key, sum);
  }
  return [...sums].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 45);
}

/** What holds the nodes of one type (e.g. `concatenated string`): their parents' kinds and the edges' names, counted, and the held nodes' size (each once). */
async function retainers(file, wanted) {
  const snap = await readSnapshot(file);
  const meta = snap.snapshot.meta;
  const fields = meta.node_fields.length;
  const edgeFields = meta.edge_fields.length;
  const types = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const [typeAt, nameAt, edgeCountAt, sizeAt] = ['type', 'name', 'edge_count', 'self_size'].map((name) => meta.node_fields.indexOf(name));
  const [edgeTypeAt, edgeNameAt, toAt] = ['type', 'name_or_index', 'to_node'].map((name) => meta.edge_fields.indexOf(name));
  const kind = (i) =>
    `${types[snap.nodes[i + typeAt]]} ${types[snap.nodes[i + typeAt]] === 'object' || types[snap.nodes[i + typeAt]] === 'closure' ? snap.strings[snap.nodes[i + nameAt]] : ''}`.trim();
  const counts = new Map();
  let edge = 0;
  for (let i = 0; i < snap.nodes.length; i += fields) {
    const edges = snap.nodes[i + edgeCountAt];
    for (let e = edge; e < edge + edges * edgeFields; e += edgeFields) {
      const to = snap.edges[e + toAt];
      if (kind(to) !== wanted) continue;
      const edgeType = edgeTypes[snap.edges[e + edgeTypeAt]];
      const edgeName = edgeType === 'element' || edgeType === 'hidden' ? `[${edgeType}]` : snap.strings[snap.edges[e + edgeNameAt]];
      // A node of a plain object by its first property names, as summarise shows it.
      const key = `${kind(i) === 'object Object' ? objectShape(snap, edge, edges) : kind(i)} .${edgeName}`;
      // Each node once per key: a string shared by 200 000 objects is one string.
      const sum = counts.get(key) ?? { count: 0, bytes: 0, seen: new Set() };
      sum.count++;
      if (!sum.seen.has(to)) sum.bytes += snap.nodes[to + sizeAt];
      sum.seen.add(to);
      counts.set(key, sum);
    }
    edge += edges * edgeFields;
  }
  return [...counts].sort((a, b) => b[1].bytes - a[1].bytes).slice(0, 25);
}

/** `{a,b,…}`: the property names of a plain object, from its `edges` edges starting at `edge`. */
function objectShape(snap, edge, edges) {
  const meta = snap.snapshot.meta;
  const edgeFields = meta.edge_fields.length;
  const [edgeTypeAt, edgeNameAt] = [meta.edge_fields.indexOf('type'), meta.edge_fields.indexOf('name_or_index')];
  const names = [];
  for (let e = edge; e < edge + edges * edgeFields; e += edgeFields)
    if (meta.edge_types[0][snap.edges[e + edgeTypeAt]] === 'property') names.push(snap.strings[snap.edges[e + edgeNameAt]]);
  return `{${names
    .filter((name) => name !== '__proto__')
    .slice(0, 8)
    .join(',')}}`;
}

/**
 * RSS by mapping (/proc/PID/smaps): the node executable's pages, malloc's main heap, its thread
 * arenas (each a 64 MiB-aligned reservation, partly mapped), and the other anonymous memory (V8's
 * heap pages among it).
 */
async function mappings(pid) {
  const text = await readFile(`/proc/${pid}/smaps`, 'utf8');
  const sums = { executable: 0, 'other files': 0, '[heap]': 0, 'thread arenas': 0, 'other anonymous': 0 };
  const exe = await readlink(`/proc/${pid}/exe`);
  let kind;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const [start, name] = [BigInt(`0x${head[1]}`), head[3]];
      if (name === exe) kind = 'executable';
      else if (name === '[heap]') kind = '[heap]';
      else if (name.startsWith('/')) kind = 'other files';
      // glibc's thread arenas start at a multiple of their 64 MiB size.
      else if (name === '' && start % (64n << 20n) === 0n) kind = 'thread arenas';
      else kind = 'other anonymous';
      continue;
    }
    const rss = /^Rss:\s+(\d+) kB/.exec(line);
    if (rss && kind) sums[kind] += Number(rss[1]);
  }
  return `by mapping: ${Object.entries(sums)
    .map(([name, kib]) => `${name} ${(kib / 1024).toFixed(0)} MiB`)
    .join(', ')}`;
}

/** V8's heap as the exporter's own nodejs_* series gave it at the plain scrape. */
function heapFigures(metrics) {
  const value = (name) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(metrics)?.[1] ?? Number.NaN) / 2 ** 20;
  const space = (which, name) =>
    Number(new RegExp(`^nodejs_heap_space_size_${which}_bytes\\{space="${name}"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? 0) / 2 ** 20;
  return `at the plain scrape: V8 heap ${value('nodejs_heap_size_used_bytes').toFixed(0)} MiB used of ${value('nodejs_heap_size_total_bytes').toFixed(0)} (new space ${space('total', 'new').toFixed(0)}, large objects ${space('used', 'large_object').toFixed(0)}), external ${value('nodejs_external_memory_bytes').toFixed(0)} MiB`;
}

/**
 * What each object keeps alive: its retained size, the bytes that would be freed with it (the
 * objects it dominates: every path from the roots to them goes through it; Cooper, Harvey and
 * Kennedy's iterative algorithm over a depth-first order, weak and shortcut edges left out). The
 * objects retaining `minMiB` or more, largest first, each with its dominators' path (up to four
 * steps: what holds it, by which property).
 */
async function dominators(file, minMiB) {
  const snap = await readSnapshot(file);
  const meta = snap.snapshot.meta;
  const [fields, edgeFields] = [meta.node_fields.length, meta.edge_fields.length];
  const [types, edgeTypes] = [meta.node_types[0], meta.edge_types[0]];
  const [typeAt, nameAt, sizeAt, edgeCountAt] = ['type', 'name', 'self_size', 'edge_count'].map((name) => meta.node_fields.indexOf(name));
  const [edgeTypeAt, edgeNameAt, toAt] = ['type', 'name_or_index', 'to_node'].map((name) => meta.edge_fields.indexOf(name));
  const count = snap.nodes.length / fields;
  const firstEdge = new Uint32Array(count + 1);
  for (let i = 0, e = 0; i < count; i++) {
    firstEdge[i] = e;
    e += snap.nodes[i * fields + edgeCountAt] * edgeFields;
    firstEdge[i + 1] = e;
  }
  const skipped = new Set([edgeTypes.indexOf('weak'), edgeTypes.indexOf('shortcut')]);
  const followed = (e) => !skipped.has(snap.edges[e + edgeTypeAt]);
  // Depth-first from the root (node 0): each node's place in post order.
  const order = new Int32Array(count).fill(-1);
  const postOrder = new Uint32Array(count);
  let reached = 0;
  const next = new Uint32Array(count);
  const seen = new Uint8Array(count);
  const stack = [0];
  seen[0] = 1;
  next[0] = firstEdge[0];
  while (stack.length > 0) {
    const v = stack[stack.length - 1];
    let pushed = false;
    while (next[v] < firstEdge[v + 1]) {
      const e = next[v];
      next[v] += edgeFields;
      const w = snap.edges[e + toAt] / fields;
      if (!followed(e) || seen[w]) continue;
      seen[w] = 1;
      next[w] = firstEdge[w];
      stack.push(w);
      pushed = true;
      break;
    }
    if (!pushed) {
      stack.pop();
      order[v] = reached;
      postOrder[reached++] = v;
    }
  }
  // Each reached node's predecessors.
  const predStart = new Uint32Array(count + 1);
  for (let v = 0; v < count; v++)
    if (seen[v])
      for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += edgeFields) if (followed(e)) predStart[snap.edges[e + toAt] / fields + 1]++;
  for (let i = 0; i < count; i++) predStart[i + 1] += predStart[i];
  const preds = new Uint32Array(predStart[count]);
  const fill = predStart.slice();
  for (let v = 0; v < count; v++)
    if (seen[v])
      for (let e = firstEdge[v]; e < firstEdge[v + 1]; e += edgeFields) if (followed(e)) preds[fill[snap.edges[e + toAt] / fields]++] = v;
  const idom = new Int32Array(count).fill(-1);
  idom[0] = 0;
  const intersect = (a, b) => {
    while (a !== b) {
      while (order[a] < order[b]) a = idom[a];
      while (order[b] < order[a]) b = idom[b];
    }
    return a;
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (let k = reached - 1; k >= 0; k--) {
      const v = postOrder[k];
      if (v === 0) continue;
      let dominator = -1;
      for (let p = predStart[v]; p < predStart[v + 1]; p++)
        if (idom[preds[p]] !== -1) dominator = dominator === -1 ? preds[p] : intersect(preds[p], dominator);
      if (dominator !== idom[v]) {
        idom[v] = dominator;
        changed = true;
      }
    }
  }
  const retained = new Float64Array(count);
  for (let k = 0; k < reached; k++) {
    const v = postOrder[k];
    retained[v] += snap.nodes[v * fields + sizeAt];
    if (v !== 0) retained[idom[v]] += retained[v];
  }
  const kind = (v) => {
    const type = types[snap.nodes[v * fields + typeAt]];
    return ['object', 'closure', 'native', 'hidden', 'array', 'synthetic'].includes(type)
      ? `${type} ${snap.strings[snap.nodes[v * fields + nameAt]]}`
      : type;
  };
  const edgeName = (u, v) => {
    for (let e = firstEdge[u]; e < firstEdge[u + 1]; e += edgeFields) {
      if (snap.edges[e + toAt] / fields !== v) continue;
      const type = edgeTypes[snap.edges[e + edgeTypeAt]];
      return type === 'element' || type === 'hidden' ? `[${snap.edges[e + edgeNameAt]}]` : snap.strings[snap.edges[e + edgeNameAt]];
    }
    return '?';
  };
  const via = (v) => {
    const steps = [];
    for (let at = v, hop = 0; hop < 4 && at !== 0; hop++, at = idom[at]) steps.unshift(`${kind(idom[at])}.${edgeName(idom[at], at)}`);
    return steps.join(' > ');
  };
  const rows = [];
  for (let v = 1; v < count; v++) if (seen[v] && retained[v] >= minMiB * 2 ** 20) rows.push(v);
  rows.sort((a, b) => retained[b] - retained[a]);
  return {
    total: retained[0],
    objects: reached,
    rows: rows.map((v) => ({ bytes: retained[v], kind: kind(v), via: via(v) })),
  };
}

async function main() {
  const held = option('retainers');
  if (held) {
    for (const [key, sum] of await retainers(option('summarise'), held.replace(/_/g, ' ')))
      process.stdout.write(`${String(sum.count).padStart(9)} ${(sum.bytes / 2 ** 20).toFixed(1).padStart(8)} MiB  ${key}\n`);
    return;
  }
  const given = option('summarise');
  // --dominators[=MiB]: what each object keeps alive, those retaining 1 MiB (or the given size) or more.
  const dominatorsFrom = process.argv.find((arg) => arg === '--dominators' || arg.startsWith('--dominators='));
  if (given && dominatorsFrom) {
    const { total, objects, rows } = await dominators(given, Number(dominatorsFrom.split('=')[1] ?? 1));
    process.stdout.write(`${objects} objects reachable, ${(total / 2 ** 20).toFixed(1)} MiB\n`);
    for (const row of rows) process.stdout.write(`${(row.bytes / 2 ** 20).toFixed(1).padStart(8)} MiB  ${row.kind}  (${row.via})\n`);
    return;
  }
  if (given) {
    for (const [key, sum] of await summarise(given))
      process.stdout.write(`${String(sum.count).padStart(9)} ${(sum.bytes / 2 ** 20).toFixed(1).padStart(8)} MiB  ${key}\n`);
    return;
  }
  const g = await importTypeScript('synthetic/fabric-generator/index.ts');
  const dir = keep ? path.resolve(keep) : await mkdtemp(path.join(os.tmpdir(), 'ibx-fabric-heap-'));
  await mkdir(dir, { recursive: true });
  const scenario = await scenarioDir(g, keep ? path.dirname(dir) : dir);
  const work = await mkdtemp(path.join(os.tmpdir(), 'ibx-fabric-heap-run-'));
  const tools = await g.fakeFabricTools(scenario, path.join(work, 'bin'), { log: path.join(work, 'tools.log'), nice: toolsNice() });
  const eventLoopReport = path.join(work, 'event-loop.json');
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const stdoutHandle = stdoutFile ? await open(stdoutFile, 'w') : undefined;
  const started = Date.now();
  const child = spawn(
    process.execPath,
    [
      ...(await launcherFlags(path.dirname(MAIN))),
      ...nodeFlags,
      '--require',
      path.join(PROJECT, 'bench', 'event-loop-monitor.cjs'),
      '--heapsnapshot-signal=SIGUSR2',
      `--diagnostic-dir=${work}`,
      ...(await fabricExporterArgs(g, { main: MAIN, work, tools, port, interval: '60s', shard })),
      ...(jobs > 0 ? ['--squeue.path', tools.squeue] : []),
      ...exporterFlags,
    ],
    {
      stdio: ['ignore', stdoutHandle?.fd ?? 'ignore', 'inherit'],
      env: { ...process.env, ...(await launcherEnv(path.dirname(MAIN))), IBX_EVENT_LOOP_REPORT: eventLoopReport },
    },
  );
  try {
    for (;;) {
      if (child.exitCode !== null) throw new Error('exporter exited');
      const page = await fetch(`${url}/`).then(
        (response) => response.text(),
        () => '',
      );
      if (Number(/<dt>ports read<\/dt><dd>(\d+)/.exec(page)?.[1] ?? 0) > 0) break;
      await sleep(1000);
    }
    const gzip = await scrape(`${url}/metrics`, { plain: false });
    const plain = await scrape(`${url}/metrics`, { plain: true });
    await sleep(2000);
    const memory = await memoryKiB(child.pid);
    const lines = [
      `hosts ${hosts}${shard ? `, shard ${shard}` : ''}: RSS ${(memory.rss / 1024).toFixed(0)} MiB, peak ${(memory.hwm / 1024).toFixed(0)} MiB; /metrics ${(plain.bytes / 2 ** 20).toFixed(1)} MiB plain, ${(gzip.bytes / 2 ** 20).toFixed(1)} MiB gzip; Node.js ${process.version}`,
      `  ${await mappings(child.pid)}`,
      `  ${heapFigures(plain.text)}`,
    ];
    if (keep) await writeFile(path.join(dir, 'metrics.txt'), plain.text);
    if (snapshot) {
      child.kill('SIGUSR2');
      let file;
      for (let waited = 0; !file && waited < 600; waited++) {
        await sleep(1000);
        const found = (await readdir(work)).find((name) => name.endsWith('.heapsnapshot'));
        // Written when its size stops growing.
        if (found) {
          const a = (await stat(path.join(work, found))).size;
          await sleep(2000);
          if ((await stat(path.join(work, found))).size === a && a > 0) file = path.join(work, found);
        }
      }
      // Kept for --summarise and --retainers.
      if (keep) await copyFile(file, path.join(dir, 'exporter.heapsnapshot'));
      for (const [key, sum] of await summarise(file))
        lines.push(`${String(sum.count).padStart(9)} ${(sum.bytes / 2 ** 20).toFixed(1).padStart(8)} MiB  ${key}`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    // RSS over the next cycles: what a cycle's peak leaves mapped, and whether it comes back; the
    // exporter's CPU over each 10 s, and its event loop's blocks over 100 ms (a GC setting's cost).
    let cpu = await cpuSeconds(child.pid);
    for (let at = 10; at <= watch; at += 10) {
      await sleep(10_000);
      const now = await memoryKiB(child.pid);
      const metrics = await scrape(`${url}/metrics`, { plain: false });
      const used = await cpuSeconds(child.pid);
      process.stdout.write(
        `+${at} s: RSS ${(now.rss / 1024).toFixed(0)} MiB, peak ${(now.hwm / 1024).toFixed(0)} MiB, CPU ${(used - cpu).toFixed(1)} s; ${await mappings(child.pid)}; ${heapFigures(metrics.text).replace('at the plain scrape: ', '')}\n`,
      );
      cpu = used;
    }
    if (watch > 0) {
      await sleep(5500);
      const loop = JSON.parse(await readFile(eventLoopReport, 'utf8'));
      // Kept for a CPU profile's samples within each block (`end`, µs on the profile's clock).
      if (keep) await writeFile(path.join(dir, 'event-loop.json'), JSON.stringify(loop));
      process.stdout.write(
        `event loop: start-up to its first turn ${loop.startMs} ms (not counted); largest delay ${loop.maxMs.toFixed(0)} ms; blocks over 100 ms: ${loop.blocks.map((block) => `${block.ms} ms${blockWhere(block)}`).join(', ') || 'none'}\n`,
      );
      // The fake tools that ran during each block (a process that competed for the two cores).
      const runs = await toolRuns(path.join(work, 'tools.log'));
      for (const block of loop.blocks) {
        const during = runs.filter((run) => run.start < block.at + block.ms && run.end > block.at);
        process.stdout.write(
          `  block at +${((block.at - started) / 1000).toFixed(1)} s: fake tools running: ${during.map((run) => `${run.command.replace(/ \/\S+/g, ' …')} (${((run.end - run.start) / 1000).toFixed(1)} s, ${run.bytes} bytes)`).join('; ') || 'none'}\n`,
        );
      }
    }
  } finally {
    child.kill('SIGTERM');
    await new Promise((resolve) => (child.exitCode !== null ? resolve() : child.once('exit', resolve)));
    await stdoutHandle?.close();
    await rm(work, { recursive: true, force: true });
    if (!keep) await rm(dir, { recursive: true, force: true });
  }
}

main().catch((error) => {
  process.stderr.write(`fabric-heap: ${error.stack ?? error}\n`);
  process.exit(1);
});
