// Counters node by node, when the ibqueryerrors sweep cannot run (not installed, or not usable
// where perfquery is): per switch `perfquery -l <lid> 1-<N>` (PortCounters: error counters and
// 32-bit traffic, one block per port) and `perfquery -x -l <lid> 1-<N>` (PortCountersExtended,
// 64-bit traffic), at most --fabric.max-concurrent at once. Slower than the sweep (two processes
// per switch), the same values.
import { fabricPortKey, type DiscoveredPort, type FabricNode } from '../../snapshot/fabric.js';
import type { PortCounter } from '../../snapshot/types.js';
import type { CommandResult } from '../command-runner.js';
import { countersFromPerfquery, parsePerfquery, type PerfqueryReading } from '../diag/perfquery.js';
import { commandItem, type FabricCycle } from './commands.js';

/** One `# Port … counters:` block per port of a `perfquery -l` run, by port number. */
export function parsePerfqueryLoop(stdout: string): { readings: Map<number, PerfqueryReading>; unparsed: string[] } {
  const readings = new Map<number, PerfqueryReading>();
  const unparsed: string[] = [];
  for (const block of stdout.split(/^(?=# Port )/m)) {
    if (block.trim() === '' || /^\S+: iberror: /.test(block.trim())) continue;
    const reading = parsePerfquery(block);
    if (reading) readings.set(reading.port, reading);
    else unparsed.push(block.trim().split('\n')[0]!);
  }
  return { readings, unparsed };
}

/** perfquery stops at the first port that fails: what it printed before still stands. */
const acceptPartial = (result: CommandResult): boolean => result.exitCode === 0 || /^# Port /m.test(result.stdout);

/** One perfquery run; undefined when it failed (a first try's failure does not fail the cycle). */
async function loop(cycle: FabricCycle, args: string[], firstTry: boolean): Promise<Map<number, PerfqueryReading> | undefined> {
  const { result, ok } = await cycle.attempt('perfquery', args, acceptPartial, firstTry);
  if (!ok) return undefined;
  if (result.exitCode !== 0) cycle.note(commandItem(result), `stopped early: ${result.stdout.trim().split('\n').at(-1) ?? ''}`);
  const { readings, unparsed } = parsePerfqueryLoop(result.stdout);
  cycle.unparsed(result, unparsed);
  return readings;
}

/**
 * Counters of every port of `nodes`, by port key. A switch answers at its node's LID for all its
 * ports; a CA or router port at its own LID (from `ports`).
 */
export async function readCountersByNode(cycle: FabricCycle, nodes: readonly FabricNode[], ports: ReadonlyMap<string, DiscoveredPort>): Promise<Map<string, PortCounter[]>> {
  const targets: { nodeGuid: string; lid: number; ports: string }[] = [];
  for (const node of nodes) {
    if (node.type === 'switch') {
      if (node.lid !== undefined && node.portCount > 0) targets.push({ nodeGuid: node.guid, lid: node.lid, ports: `1-${node.portCount}` });
      continue;
    }
    for (let port = 1; port <= node.portCount; port++) {
      const lid = ports.get(fabricPortKey(node.guid, port))?.lid;
      if (lid !== undefined && lid > 0) targets.push({ nodeGuid: node.guid, lid, ports: String(port) });
    }
  }
  const counters = new Map<string, PortCounter[]>();
  const read = async (target: (typeof targets)[number], firstTry: boolean): Promise<boolean> => {
    const [basic, extended] = await Promise.all([
      loop(cycle, ['-l', String(target.lid), target.ports], firstTry),
      loop(cycle, ['-x', '-l', String(target.lid), target.ports], firstTry),
    ]);
    if (firstTry && (!basic || !extended)) return false;
    for (const port of new Set([...(basic?.keys() ?? []), ...(extended?.keys() ?? [])])) {
      counters.set(fabricPortKey(target.nodeGuid, port), countersFromPerfquery(basic?.get(port), extended?.get(port)));
    }
    return true;
  };
  const done = await Promise.all(targets.map((target) => read(target, true)));
  // A failed node gets one more try, alone, once the others are done (a process that could not
  // start or attach while many ran at once usually can then); only that try's failure counts.
  for (const [index, target] of targets.entries()) if (!done[index]) await read(target, false);
  return counters;
}
