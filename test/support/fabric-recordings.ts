// Outputs of the real tools recorded on the simulated fat tree (test/fixtures/ibsim-topologies/fat-tree.net,
// two opensm instances of equal priority, run from host H22): test/fixtures/fabric-recordings/<scenario>/,
// replayed by replay.ts; healthy/topology.cache is the cache ibnetdiscover wrote.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FIXTURES, recording } from './replay.js';

export function stdout(scenario: string, stem: string): string {
  return recording('fabric', scenario, stem).stdout;
}

export function recordedCache(scenario = 'healthy'): Uint8Array {
  return new Uint8Array(readFileSync(path.join(FIXTURES, 'fabric-recordings', scenario, 'topology.cache')));
}

// The recorded fabric, by node GUID.
export const SPINE1 = '0x0002c90200410000';
export const SPINE2 = '0x0002c90200420000';
export const LEAF1 = '0x0002c90200510000';
export const LEAF2 = '0x0002c90200520000';
export const LEAF3 = '0x0002c90200530000';
export const HOST11 = '0x0002c90300a10010';
export const HOST12 = '0x0002c90300a10020';
export const HOST13 = '0x0002c90300a10030';
export const HOST22 = '0x0002c90300a20020';
