// Outputs of the real tools recorded on the simulated fat tree (test/fixtures/ibsim-topologies/fat-tree.net,
// two opensm instances of equal priority, run from host H22): test/fixtures/fabric-recordings/<scenario>/,
// replayed by replay.ts; healthy/topology.cache is the cache ibnetdiscover wrote.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FabricCommand } from '../../src/sources/fabric/commands.js';
import { FIXTURES, ReplayRunner, recording, result } from './replay.js';

export function stdout(scenario: string, stem: string): string {
  return recording('fabric', scenario, stem).stdout;
}

/** A ports cycle's outputs: the switches' scan and the two sweeps (errors, then --counters). */
export interface SwitchPortsOutputs {
  scan: string;
  errors: string;
  counters: string;
}

/** The healthy recordings' ports cycle, each output as recorded unless `changed` gives another. */
export function switchPortsRunner(changed: Partial<SwitchPortsOutputs> = {}): ReplayRunner<FabricCommand> {
  const outputs: SwitchPortsOutputs = {
    scan: stdout('healthy', 'iblinkinfo-switches'),
    errors: stdout('healthy', 'errors-switches'),
    counters: stdout('healthy', 'counters-switches'),
    ...changed,
  };
  return new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => {
    if (command === 'iblinkinfo') return result(command, args, { stdout: outputs.scan });
    // ibqueryerrors exits 1 when it found errors, as the recorded run did.
    if (command === 'ibqueryerrors')
      return result(command, args, { stdout: args.includes('--counters') ? outputs.counters : outputs.errors, exitCode: 1 });
    return undefined;
  });
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
