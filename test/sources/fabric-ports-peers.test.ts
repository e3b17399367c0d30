// A port's peer as the ports cycle reads it: the last cycle's address object where the cable is
// the same (one object per port for as long as its cable stays), a new one where it is not.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PortReadings } from '../../src/model/port-readings.js';
import { FabricCycle } from '../../src/sources/fabric/commands.js';
import { parseDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { buildTopology } from '../../src/sources/fabric/discovery.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { readFabricPorts } from '../../src/sources/fabric/ports.js';
import { recordedCache, stdout, switchPortsRunner } from '../support/fabric-recordings.js';

const topology = buildTopology(parseIbnetdiscover(stdout('healthy', 'ibnetdiscover')), parseDiscoveryCache(recordedCache()), new Map(), 0);

let scratch: string;
beforeEach(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), 'ports-peers-'));
});
afterEach(async () => {
  await rm(scratch, { recursive: true, force: true });
});

/** One ports cycle on the healthy recordings, after the readings `previous`. */
async function portsCycle(previous?: PortReadings) {
  const runner = switchPortsRunner();
  const cycle = new FabricCycle({ runner, timeoutMs: 10_000 });
  const options = { counterSource: 'sweep' as const, unreachable: new Set<string>(), topology, cache: undefined, covers: () => true };
  return (await readFabricPorts(cycle, { ...options, hcaPorts: false, scratch, previous })).ports;
}

describe('the peers of a ports cycle', () => {
  it('are the last cycle’s objects where the cable is the same', async () => {
    const first = await portsCycle();
    const second = await portsCycle(first);
    const cabled = [...second].filter(([, reading]) => reading.peer !== undefined);
    expect(cabled.length).toBeGreaterThan(10);
    for (const [key, reading] of cabled) expect(reading.peer).toBe(first.get(key)!.peer);
  });

  it('are new where the last cycle saw another cable, and equal to what this one saw', async () => {
    const first = await portsCycle();
    const [key, reading] = [...first].find(([, candidate]) => candidate.peer !== undefined)!;
    const elsewhere = PortReadings.from(
      new Map(first).set(key, { ...reading, peer: { nodeGuid: reading.peer!.nodeGuid, port: reading.peer!.port + 1 } }).values(),
    );
    const second = await portsCycle(elsewhere);
    expect(second.get(key)!.peer).not.toBe(elsewhere.get(key)!.peer);
    expect(second.get(key)!.peer).toEqual(reading.peer);
  });
});
