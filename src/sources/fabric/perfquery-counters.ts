// Counters node by node, when the ibqueryerrors sweep cannot run (not installed, or not usable
// where perfquery is): per switch `perfquery -l <lid> 1-<N>` (PortCounters: error counters and
// 32-bit traffic, one block per port) and `perfquery -x -l <lid> 1-<N>` (PortCountersExtended,
// 64-bit traffic), at most --fabric.max-concurrent at once. Slower than the sweep (two processes
// per switch), the same values.
import { fabricPortKey, type DiscoveredPort, type FabricNode } from '../../model/fabric.js';
import { CounterRow } from '../../model/counter-row.js';
import type { CommandResult } from '../command-runner.js';
import { UnparsedLines } from '../unparsed-lines.js';
import { countersFromPerfquery, parsePerfquery, type PerfqueryReading } from '../diag/perfquery.js';
import { commandItem, type FabricCycle } from './commands.js';

/**
 * One `# Port … counters:` block per port of a `perfquery -l` run, by port number. The ports of
 * one run share one PMA and print the same fields: a block with fewer than the others was cut
 * short, and is not understood; a port printed twice contradicts the output (its first block stands).
 */
export function parsePerfqueryLoop(stdout: string): { readings: Map<number, PerfqueryReading>; unparsed: UnparsedLines } {
  const readings = new Map<number, PerfqueryReading>();
  const unparsed = new UnparsedLines();
  for (const block of stdout.split(/^(?=# Port )/m)) {
    if (block.trim() === '' || /^\S+: iberror: /.test(block.trim())) continue;
    const reading = parsePerfquery(block);
    if (reading && readings.has(reading.port)) unparsed.add(`# Port ${reading.port}: printed more than once`);
    else if (reading) readings.set(reading.port, reading);
    else unparsed.add(block.trim().split('\n')[0]!);
  }
  const fields = Math.max(0, ...[...readings.values()].map((reading) => reading.values.size));
  for (const [port, reading] of readings) {
    if (reading.values.size === fields) continue;
    readings.delete(port);
    unparsed.add(`# Port ${port}: ${reading.values.size} of ${fields} counters`);
  }
  return { readings, unparsed };
}

/** perfquery stops at the first port that fails: what it printed before still stands. */
const acceptPartial = (result: CommandResult): boolean => result.exitCode === 0 || /^# Port /m.test(result.stdout);

/**
 * One perfquery run over `ports`; undefined when it failed (a first try's failure does not fail
 * the cycle). A run that stopped at a port it could not query says so (a read error); one that
 * exited 0 without a block for every port asked for was cut short on its way (the cycle fails).
 */
async function loop(
  cycle: FabricCycle,
  args: string[],
  ports: readonly number[],
  firstTry: boolean,
): Promise<Map<number, PerfqueryReading> | undefined> {
  const { result, ok } = await cycle.attempt('perfquery', args, acceptPartial, firstTry);
  if (!ok) return undefined;
  if (result.exitCode !== 0) cycle.note(commandItem(result), `stopped early: ${result.stdout.trim().split('\n').at(-1) ?? ''}`);
  const { readings, unparsed } = parsePerfqueryLoop(result.stdout);
  cycle.unparsed(result, unparsed);
  const missing = ports.filter((port) => !readings.has(port));
  // A port the run was not asked for (beyond the node's port count) is not believed.
  const unasked = [...readings.keys()].filter((port) => !ports.includes(port));
  for (const port of unasked) readings.delete(port);
  if (unasked.length > 0)
    cycle.fail(
      commandItem(result),
      `the output contradicts the topology: counters of port${unasked.length === 1 ? '' : 's'} ${unasked.join(', ')}, which the run was not asked for`,
    );
  if (result.exitCode === 0 && missing.length > 0 && unparsed.count === 0) {
    cycle.fail(
      commandItem(result),
      `the output is incomplete, cut short on its way: no counters of port${missing.length === 1 ? '' : 's'} ${missing.join(', ')}`,
    );
  }
  return readings;
}

/**
 * Counters of every port of `nodes`, by port key. A switch answers at its node's LID for all its
 * ports; a CA or router port at its own LID (from `ports`).
 */
export async function readCountersByNode(
  cycle: FabricCycle,
  nodes: readonly FabricNode[],
  ports: ReadonlyMap<string, DiscoveredPort>,
): Promise<Map<string, CounterRow>> {
  const targets: { nodeGuid: string; lid: number; ports: number[] }[] = [];
  for (const node of nodes) {
    if (node.type === 'switch') {
      if (node.lid !== undefined && node.portCount > 0)
        targets.push({ nodeGuid: node.guid, lid: node.lid, ports: Array.from({ length: node.portCount }, (_, i) => i + 1) });
      continue;
    }
    for (let port = 1; port <= node.portCount; port++) {
      const lid = ports.get(fabricPortKey(node.guid, port))?.lid;
      if (lid !== undefined && lid > 0) targets.push({ nodeGuid: node.guid, lid, ports: [port] });
    }
  }
  const counters = new Map<string, CounterRow>();
  const read = async (target: (typeof targets)[number], firstTry: boolean): Promise<boolean> => {
    // A switch's ports in one run (`1-<N>`), a CA's port alone.
    const portArg = target.ports.length === 1 ? String(target.ports[0]) : `1-${target.ports.length}`;
    const [basic, extended] = await Promise.all([
      loop(cycle, ['-l', String(target.lid), portArg], target.ports, firstTry),
      loop(cycle, ['-x', '-l', String(target.lid), portArg], target.ports, firstTry),
    ]);
    if (firstTry && (!basic || !extended)) return false;
    for (const port of new Set([...(basic?.keys() ?? []), ...(extended?.keys() ?? [])])) {
      counters.set(fabricPortKey(target.nodeGuid, port), CounterRow.of(countersFromPerfquery(basic?.get(port), extended?.get(port))));
    }
    return true;
  };
  const done = await Promise.all(targets.map((target) => read(target, true)));
  // A failed node gets one more try, alone, once the others are done (a process that could not
  // start or attach while many ran at once usually can then); only that try's failure counts.
  for (const [index, target] of targets.entries()) if (!done[index]) await read(target, false);
  return counters;
}
