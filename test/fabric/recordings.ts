// Outputs of the real tools recorded on the simulated fat tree (test/fixtures/fabrics/fat-tree.net,
// two opensm instances of equal priority, run from host H22): test/fixtures/fabric/<scenario>/
// holds <stem>.stdout/.stderr/.exit and commands.tsv (stem → command line, with the discovery
// cache path written `<cache>`); healthy/topology.cache is the cache ibnetdiscover wrote.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readRecording, type Recording } from '../support/recordings.js';

export const FABRIC_FIXTURES = fileURLToPath(new URL('../fixtures/fabric/', import.meta.url));

export function recording(scenario: string, stem: string): Recording {
  return readRecording(path.join(FABRIC_FIXTURES, scenario, stem));
}

export function stdout(scenario: string, stem: string): string {
  return recording(scenario, stem).stdout;
}

export function recordedCache(scenario = 'healthy'): Uint8Array {
  return new Uint8Array(readFileSync(path.join(FABRIC_FIXTURES, scenario, 'topology.cache')));
}

/** The recorded command lines of a scenario: line (cache path as `<cache>`) → stem. */
export function recordedCommands(scenario: string): Map<string, string> {
  const table = readFileSync(path.join(FABRIC_FIXTURES, scenario, 'commands.tsv'), 'utf8');
  return new Map(table.split('\n').filter(Boolean).map((line) => {
    const [stem, command] = line.split('\t');
    return [command!, stem!];
  }));
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
