// The counters of the ports cycle from the two ibqueryerrors sweeps (ports.ts runs them beside
// the iblinkinfo scan): the error counters (and PortXmitWait) with an empty threshold file, the
// 64-bit data and packet counters with --counters, both through discovery's cache, pruned to the
// nodes to sweep. A failed query loses only its own port's counters.
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { inSlices } from '../../event-loop/time-slices.js';
import { PMA_COUNTERS, counterMaximum, type PmaCounter } from '../../model/pma-counters.js';
import { fabricPortKey, sameNodes, type FabricNode, type FabricTopology, type PortAddress } from '../../model/fabric.js';
import { type CounterRow, CounterRowBuilder, type CounterSink } from '../../model/counter-row.js';
import type { PortCounter } from '../../model/host.js';
import type { CommandResult } from '../command-runner.js';
import { exportCounter } from '../infiniband.js';
import { commandItem, type FabricCycle } from './commands.js';
import { pruneDiscoveryCacheSteps } from './discovery-cache.js';
import type { TopologyCache } from './discovery.js';
import { IbqueryerrorsParser, type SweepPort, type SweepReading, type SweepValue } from './ibqueryerrors.js';

/** What the sweeps read of the ports cycle's options (PortsOptions). */
export interface SweepOptions {
  topology: FabricTopology;
  cache: TopologyCache | undefined;
  /** Also read CA and router ports (--fabric.hca-ports). */
  hcaPorts: boolean;
  /** A directory for the pruned cache file. */
  scratch: string;
}

/** ibqueryerrors exits 1 when it printed ports with errors: that is its normal output here. */
/**
 * Output that contradicts itself or the topology: a port printed twice, a port number the node
 * does not have, a node discovery never saw. Each is a read error that makes the cycle partial;
 * of a port printed twice the first reading stands, the others are not believed.
 */
export interface Contradictions {
  /** `<node>/<port>` of each repeated reading. */
  repeated: string[];
  /** `<node>/<port>` of each reading of a port beyond the node's port count. */
  beyondPortCount: string[];
  /** GUIDs printed that are no node of the topology, once each. */
  unknownNodes: Set<string>;
}

export const noContradictions = (): Contradictions => ({ repeated: [], beyondPortCount: [], unknownNodes: new Set() });

/** Each contradiction as a read error of `item`, the first of each kind named. */
export function reportContradictions(cycle: FabricCycle, item: string, found: Contradictions, topology: FabricTopology): void {
  const kinds: [string[], (first: string) => string][] = [
    [found.repeated, (first) => `the same port printed more than once (first: ${first}); the first reading stands`],
    [
      found.beyondPortCount,
      (first) =>
        `a port number beyond the node's port count (first: port ${first.split('/')[1]} of ${first.split('/')[0]}, a node of ${topology.nodes.get(first.split('/')[0]!)?.portCount ?? '?'} ports); not believed`,
    ],
    [[...found.unknownNodes], (first) => `a node discovery never saw (first: ${first}); not believed until a new discovery`],
  ];
  for (const [list, describe] of kinds) {
    if (list.length === 0) continue;
    const message = `the output contradicts ${list.length === 1 ? 'itself or the topology once' : `itself or the topology ${list.length} times`}: ${describe(list[0]!)}`;
    for (let i = 0; i < list.length; i++) cycle.fail(item, message);
  }
}

const acceptSweep = (result: CommandResult): boolean => result.exitCode === 0 || result.exitCode === 1;

const ERROR_COUNTERS = PMA_COUNTERS.filter((counter) => !counter.tableDependent);
const TRAFFIC_COUNTERS = PMA_COUNTERS.filter((counter) => counter.tableDependent);

/** The last pruned cache written, by discovery cache: written again only for another set of nodes. */
const prunedCaches = new WeakMap<TopologyCache, { file: string; swept: ReadonlySet<string> }>();

/**
 * `--load-cache FILE` arguments: discovery's cache, pruned when some of its nodes are not to be
 * swept; none when its file can no longer be read for pruning (the sweeps then discover on their own).
 */
async function sweepCache(cycle: FabricCycle, options: SweepOptions, swept: ReadonlySet<string>): Promise<string[]> {
  const { cache } = options;
  if (!cache) return [];
  const types = new Set(options.hcaPorts ? ['switch', 'ca', 'router'] : ['switch']);
  const sweepable = cache.nodes.filter((node) => node.type !== undefined && types.has(node.type));
  if (sweepable.every((node) => swept.has(node.guid))) return ['--load-cache', cache.file];
  const file = path.join(options.scratch, 'sweep.cache');
  const last = prunedCaches.get(cache);
  if (last?.file !== file || !sameNodes(swept, last.swept)) {
    // Its bytes read again: they are not kept between cycles (see TopologyCache).
    try {
      const bytes = await readFile(cache.file);
      await writeFile(file, await inSlices(pruneDiscoveryCacheSteps(bytes, cache, (node) => swept.has(node.guid))));
    } catch (error) {
      cycle.note(
        `ibnetdiscover cache file ${cache.file}`,
        `not usable for the sweeps (${(error as Error).message}): they discover on their own`,
      );
      return [];
    }
    prunedCaches.set(cache, { file, swept });
  }
  return ['--load-cache', file];
}

/**
 * Counters of every port of the swept nodes from the two sweeps; undefined when a sweep could not
 * run at all (the caller then reads them with perfquery).
 */
export async function sweepCounters(
  cycle: FabricCycle,
  options: SweepOptions,
  swept: readonly FabricNode[],
  nodeOfPort: ReadonlyMap<string, string>,
): Promise<CycleCounters | undefined> {
  const sweptGuids = new Set(swept.map((node) => node.guid));
  const loadCache = await sweepCache(cycle, options, sweptGuids);
  const typeArgs = options.hcaPorts ? [] : ['--switch'];
  const errorArgs = ['--skip-sl', '--threshold-file', '/dev/null', ...loadCache, ...typeArgs];
  const trafficArgs = ['--skip-sl', '--counters', ...loadCache, ...typeArgs];
  // Each sweep's ports taken up as they are parsed: the traffic counters made at once, the error
  // counters (printed only where not 0) kept as printed until both sweeps are done.
  const errorPorts = new SweptPorts(options.topology, nodeOfPort, (values) => values);
  const trafficPorts = new SweptPorts(options.topology, nodeOfPort, trafficCounters);
  const [errors, traffic] = await Promise.all([sweep(cycle, errorArgs, errorPorts), sweep(cycle, trafficArgs, trafficPorts)]);
  if (errors === 'unusable' || traffic === 'unusable') return undefined;

  const failed = failedQueries(cycle, options.topology, [errors, traffic]);
  // Sweeps that both finished queried every swept node: a query that failed before and not now works again.
  const sweptLids = new Set(
    swept.flatMap((node) => (node.type === 'switch' ? [node.lid] : portLids(options.topology, node))).filter((lid) => lid !== undefined),
  );
  if (errors?.complete && traffic?.complete)
    cycle.covers((item) => {
      const lid = queriedLid(item);
      return lid !== undefined && sweptLids.has(lid);
    });
  // A sweep that did not finish is not believed at all (see `sweep`).
  const errorValues = errors ? errorPorts : new SweptPorts(options.topology, nodeOfPort, (values) => values);
  const trafficValues = traffic ? trafficPorts : new SweptPorts(options.topology, nodeOfPort, trafficCounters);
  reportContradictions(cycle, commandItem({ command: 'ibqueryerrors', args: errorArgs }), errorValues.contradictions, options.topology);
  reportContradictions(cycle, commandItem({ command: 'ibqueryerrors', args: trafficArgs }), trafficValues.contradictions, options.topology);
  return new SweptCounters(sweptGuids, failed, errors?.complete ?? false, errorValues.values, trafficValues.values);
}

/** A cycle's counters, written a port at a time into the row its reading is made of. */
export interface CycleCounters {
  /** The counters read of a node's port, by its key (none when none were). */
  write(node: FabricNode, key: string, row: CounterSink): void;
}

/** Counters read as rows by port key (perfquery's, node by node). */
export function countersOfRows(rows: ReadonlyMap<string, CounterRow>): CycleCounters {
  return { write: (_node, key, row) => rows.get(key)?.writeTo(row) };
}

/**
 * The counters of each port of the swept nodes from the two sweeps' values: a port's error
 * counters (every threshold is 0: a counter the sweep did not print is 0), then its traffic
 * counters, merged as its reading is made (not kept as rows of their own beside the readings).
 */
class SweptCounters implements CycleCounters {
  constructor(
    private readonly swept: ReadonlySet<string>,
    private readonly failed: ReadonlySet<string>,
    private readonly errorsComplete: boolean,
    private readonly errorValues: ReadonlyMap<string, ReadonlyMap<string, SweepValue>>,
    private readonly trafficValues: ReadonlyMap<string, CounterRow>,
  ) {}

  write(node: FabricNode, key: string, row: CounterSink): void {
    if (!this.swept.has(node.guid)) return;
    const failed = this.failed.size > 0 && (this.failed.has(fabricPortKey(node.guid, 0)) || this.failed.has(key));
    if (this.errorsComplete && !failed) {
      const values = this.errorValues.get(key);
      for (const counter of ERROR_COUNTERS) {
        const { name, value, saturated } = errorCounter(counter, values?.get(counter.perfqueryField));
        row.add(name, value, saturated);
      }
    }
    this.trafficValues.get(key)?.writeTo(row);
  }
}

/**
 * One sweep, its output parsed as it arrives. 'unusable': it failed outright (not installed, or
 * exited at once with an error other than "ports with errors found"); undefined: it ran but was
 * killed or cut short (recorded).
 */
async function sweep(cycle: FabricCycle, args: string[], ports: SweptPorts<unknown>): Promise<SweepReading | 'unusable' | undefined> {
  const parser = new IbqueryerrorsParser((port) => ports.add(port));
  const { result, ok } = await cycle.attempt('ibqueryerrors', args, acceptSweep, true, parser);
  if (!ok) {
    if (result.outcome === 'exited' || result.outcome === 'spawn-error') return 'unusable';
    cycle.fail(commandItem(result), 'the sweep did not finish');
    return undefined;
  }
  const parsed = parser.failures(result.stderr).end();
  cycle.unparsed(result, parsed.unparsed);
  if (!parsed.complete) cycle.fail(commandItem(result), 'output ends before its summary: the sweep did not finish');
  return parsed;
}

/**
 * Queries that failed, as port keys: `<node>/0` for a whole node (ClassPortInfo or the all-ports
 * query), `<node>/<port>` for one port. Each is a read error; the others' values stand.
 */
function failedQueries(cycle: FabricCycle, topology: FabricTopology, sweeps: readonly (SweepReading | undefined)[]): Set<string> {
  const failed = new Set<string>();
  // Every LID of the fabric: looked up only when a query failed.
  if (sweeps.every((reading) => !reading?.failures.length)) return failed;
  const byLid = new Map<number, PortAddress>();
  for (const node of topology.nodes.values())
    if (node.type === 'switch' && node.lid !== undefined) byLid.set(node.lid, { nodeGuid: node.guid, port: 0 });
  for (const port of topology.ports.values()) if (port.lid !== undefined && port.lid > 0) byLid.set(port.lid, port);
  for (const reading of sweeps) {
    for (const failure of reading?.failures ?? []) {
      cycle.note(queryItem(failure.lid, failure.port), failure.message);
      const target = byLid.get(failure.lid);
      if (!target) continue;
      const whole = target.port === 0 && (failure.port === 0 || failure.port === 255);
      failed.add(fabricPortKey(target.nodeGuid, whole ? 0 : target.port === 0 ? failure.port : target.port));
    }
  }
  return failed;
}

/**
 * A sweep's values by port key, taken up a port at a time (the sweeps print port GUIDs or node
 * GUIDs; both map to the node), each port's as `convert` makes them, and what in them contradicts
 * itself or the topology (the first reading of a port stands).
 */
class SweptPorts<Values> {
  readonly values = new Map<string, Values>();
  readonly contradictions = noContradictions();

  constructor(
    private readonly topology: FabricTopology,
    private readonly nodeOfPort: ReadonlyMap<string, string>,
    private readonly convert: (values: ReadonlyMap<string, SweepValue>) => Values,
  ) {}

  add(port: SweepPort): void {
    const nodeGuid = this.nodeOfPort.get(port.guid);
    const node = nodeGuid === undefined ? undefined : this.topology.nodes.get(nodeGuid);
    if (!node) {
      this.contradictions.unknownNodes.add(port.guid);
      return;
    }
    // Port 0 of a switch (its management port) carries no link.
    if (port.port === 0) return;
    const key = fabricPortKey(node.guid, port.port);
    if (port.port > node.portCount) this.contradictions.beyondPortCount.push(key);
    else if (this.values.has(key)) this.contradictions.repeated.push(key);
    else this.values.set(key, this.convert(port.values));
  }
}

/**
 * A zero error counter, one object per counter: the sweep prints a port's error counters only where
 * they are not 0, so on a sane fabric nearly every port's come from here (into its CounterRow).
 */
const ZERO_ERROR_COUNTERS = new Map(ERROR_COUNTERS.map((counter) => [counter.name, exportCounter(counter, 0n, counter.bits)]));

function errorCounter(counter: PmaCounter, printed: SweepValue | undefined): PortCounter {
  if (printed === undefined || printed.value === 0n) return ZERO_ERROR_COUNTERS.get(counter.name)!;
  // Without a suffix the value came from PortCounters, whose fields have the IBA widths.
  return exportCounter(counter, printed.value, printed.suffixed ? 64 : counter.bits);
}

/**
 * Data and packet counters of one port. With the unicast/multicast counters the sweep read
 * PortCountersExtended (64-bit); with the four basic ones only, either the 32-bit PortCounters or
 * the extended set of a PMA without the IETF counters, which the output does not tell apart: a
 * value above 32 bits settles it, else they are taken as 32-bit (saturation is then flagged at
 * 2^32-1).
 */
function trafficCounters(values: ReadonlyMap<string, SweepValue>): CounterRow {
  const extended = values.has('PortUnicastXmitPkts') || [...values.values()].some((v) => v.value > counterMaximum(32));
  const row = new CounterRowBuilder();
  for (const counter of TRAFFIC_COUNTERS) {
    const printed = values.get(counter.perfqueryField);
    if (printed === undefined) continue;
    const { name, value, saturated } = exportCounter(counter, printed.value, extended ? 64 : counter.bits);
    row.add(name, value, saturated);
  }
  return row.build();
}

/** The item of one failed query of a sweep (the sweep names it by LID and port on its stderr). */
function queryItem(lid: number, port: number): string {
  return `ibqueryerrors Lid ${lid} port ${port}`;
}

/** The LID of a `queryItem`, else undefined. */
function queriedLid(item: string): number | undefined {
  const match = /^ibqueryerrors Lid (\d+) port \d+$/.exec(item);
  return match ? Number(match[1]) : undefined;
}

/** The LIDs of a CA's or router's ports (each port has its own). */
function portLids(topology: FabricTopology, node: FabricNode): (number | undefined)[] {
  const lids: (number | undefined)[] = [];
  for (let port = 1; port <= node.portCount; port++) lids.push(topology.ports.get(fabricPortKey(node.guid, port))?.lid);
  return lids;
}
