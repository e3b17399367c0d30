// The counter sweeps' cache: discovery's cache file, pruned to the nodes this instance sweeps. Its
// bytes are not kept with the topology (21 MiB at 122 880 switch ports, issue 36): they are read
// back from the file when a pruned copy is written; a file that can no longer be read leaves the
// sweeps to discover on their own, noted, and the counters are still read.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fabricPortKey } from '../../src/model/fabric.js';
import { FabricCycle } from '../../src/sources/fabric/commands.js';
import { parseDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { buildTopology } from '../../src/sources/fabric/discovery.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { readFabricPorts } from '../../src/sources/fabric/ports.js';
import { LEAF1, LEAF3, recordedCache, stdout, switchPortsRunner } from '../support/fabric-recordings.js';

const parsedCache = parseDiscoveryCache(recordedCache());
const topology = buildTopology(parseIbnetdiscover(stdout('healthy', 'ibnetdiscover')), parsedCache, new Map(), 0);

let scratch: string;
beforeEach(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'sweep-cache-'));
});
afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** One ports cycle of every switch but LEAF1, with discovery's cache file at `file`. */
async function portsCycle(file: string) {
  const pruned: Uint8Array[] = [];
  const runner = switchPortsRunner();
  const cycle = new FabricCycle({ runner, timeoutMs: 10_000 });
  const reading = await readFabricPorts(cycle, {
    counterSource: 'sweep',
    unreachable: new Set(),
    topology,
    cache: { file, nodes: parsedCache.nodes },
    covers: (node) => node.guid !== LEAF1,
    hcaPorts: false,
    scratch,
  });
  const sweeps = runner.rawCalls.filter(([command]) => command === 'ibqueryerrors');
  for (const call of sweeps) {
    const at = call.indexOf('--load-cache');
    if (at >= 0) pruned.push(await readFile(call[at + 1]!));
  }
  return { reading, report: cycle.report(), sweeps, pruned };
}

describe('the sweeps’ pruned cache', () => {
  it('is written from the file discovery left, with the swept switches only', async () => {
    const file = path.join(scratch, 'topology-1.cache');
    await writeFile(file, recordedCache());
    const { reading, report, sweeps, pruned } = await portsCycle(file);
    expect(report.errors).toEqual([]);
    expect(sweeps.every((call) => call.includes(path.join(scratch, 'sweep.cache')))).toBe(true);
    expect(pruned).toHaveLength(2);
    const kept = parseDiscoveryCache(pruned[0]!).nodes.map((node) => node.guid);
    expect(kept).not.toContain(LEAF1);
    expect(kept).toContain(LEAF3);
    expect(reading.ports.get(fabricPortKey(LEAF3, 1))?.counters.length).toBeGreaterThan(0);
  });

  it('a file gone: the sweeps run without it, noted, and the counters are still read', async () => {
    const file = path.join(scratch, 'removed.cache');
    const { reading, report, sweeps } = await portsCycle(file);
    expect(sweeps.some((call) => call.includes('--load-cache'))).toBe(false);
    expect(report.failed).toBe(false);
    expect(report.errors).toEqual([
      {
        item: `ibnetdiscover cache file ${file}`,
        message: expect.stringMatching(/^not usable for the sweeps \(ENOENT.*\): they discover on their own$/),
      },
    ]);
    expect(reading.ports.get(fabricPortKey(LEAF3, 1))?.counters.length).toBeGreaterThan(0);
    expect(reading.ports.has(fabricPortKey(LEAF1, 1))).toBe(false);
  });
});
