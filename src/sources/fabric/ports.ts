// The ports cycle: state, width, speed and peer of every switch port (connected or not), then the
// PMA counters of every one of them, in three commands whatever the fabric's size:
//   iblinkinfo --line [--switches-only]     fresh PortInfo of every port (one scan of the fabric)
//   ibqueryerrors … --threshold-file /dev/null --load-cache C   error counters (and PortXmitWait)
//   ibqueryerrors … --counters --load-cache C                   64-bit data and packet counters
// The three run side by side. The sweeps read the topology from discovery's cache instead of
// discovering again; that cache is pruned to this instance's shard, and to the switches the last
// scan saw at the same LID (a switch that vanished or was renumbered would only make the sweeps
// wait on timeouts; such a change also asks for a new discovery). A failed command loses only its own part of the cycle;
// a switch that does not answer loses only its own counters. Where ibqueryerrors cannot run at all
// (missing, or failing at once), the counters are read switch by switch with perfquery instead.
// Ports never vanish: every port of the topology is reported each cycle, its state unknown (absent)
// where the scan did not reach it, its cable as discovery last saw it.
//
// Neither iblinkinfo nor ibqueryerrors' data lines end with a marker of their own (only the sweep's
// `## Summary:` does), so a scan cut short or garbled is told by what it must hold: every switch of
// the topology, every port of each switch it prints, and every switch at the far end of a cable it
// prints. A scan that lacks any of them fails the cycle.
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { atOnce, inSlices, pacer, type Work } from '../../event-loop/time-slices.js';
import { PMA_COUNTERS, counterMaximum, type PmaCounter } from '../../model/pma-counters.js';
import { fabricPortKey, sameNodes, type FabricNode, type FabricPortReading, type FabricTopology, type PortAddress } from '../../model/fabric.js';
import type { PortCounter } from '../../model/host.js';
import type { CommandResult } from '../command-runner.js';
import { exportCounter } from '../infiniband.js';
import { commandItem, type FabricCycle } from './commands.js';
import { pruneDiscoveryCacheSteps } from './discovery-cache.js';
import { readCountersByNode } from './perfquery-counters.js';
import { nodesByPortGuid, nodesByPortGuidSteps, type TopologyCache } from './discovery.js';
import { IblinkinfoParser, type LinkinfoPort } from './iblinkinfo.js';
import { IbqueryerrorsParser, type SweepReading, type SweepValue } from './ibqueryerrors.js';

/** Where counters come from: the two ibqueryerrors sweeps, or perfquery node by node. */
export type CounterSource = 'sweep' | 'perfquery';

export interface PortsOptions {
  /** The source to try first; perfquery is used when the sweeps cannot run. */
  counterSource: CounterSource;
  /** Nodes the previous cycle's scan did not see (at their discovered LID): the sweeps skip them. */
  unreachable: ReadonlySet<string>;
  topology: FabricTopology;
  cache: TopologyCache | undefined;
  /** The nodes this instance reports (its --fabric.shard); the others are neither queried nor reported. */
  covers: (node: FabricNode) => boolean;
  /** Also read CA and router ports (--fabric.hca-ports). */
  hcaPorts: boolean;
  /** A directory for the pruned cache file. */
  scratch: string;
}

export interface PortsReading {
  ports: Map<string, FabricPortReading>;
  /** The source that delivered this cycle's counters. */
  counterSource: CounterSource;
  /** Nodes this cycle's scan did not see at their discovered LID (for the next cycle). */
  unreachable: Set<string>;
  /** The scan saw nodes, GUIDs, LIDs or cables that discovery did not: the topology is out of date. */
  stale: boolean;
}

/** ibqueryerrors exits 1 when it printed ports with errors: that is its normal output here. */
const acceptSweep = (result: CommandResult): boolean => result.exitCode === 0 || result.exitCode === 1;

const ERROR_COUNTERS = PMA_COUNTERS.filter((counter) => !counter.tableDependent);
const TRAFFIC_COUNTERS = PMA_COUNTERS.filter((counter) => counter.tableDependent);

export async function readFabricPorts(cycle: FabricCycle, options: PortsOptions): Promise<PortsReading> {
  const { topology } = options;
  const nodeOfPort = await inSlices(nodesByPortGuidSteps(topology));
  const wanted = (node: FabricNode | undefined): node is FabricNode => node !== undefined && (options.hcaPorts || node.type === 'switch') && options.covers(node);

  // The scan and the counter sweeps run side by side; the sweeps leave out the nodes the previous
  // scan no longer saw at the LID discovery recorded (they would only wait on timeouts).
  const swept = [...topology.nodes.values()].filter(wanted).filter((node) => !options.unreachable.has(node.guid));
  let counterSource = options.counterSource;
  const [scan, fromSweeps] = await Promise.all([
    scanPorts(cycle, options, nodeOfPort),
    counterSource === 'sweep' ? sweepCounters(cycle, options, swept, nodeOfPort) : Promise.resolve(undefined),
  ]);
  // Seen by this scan at the LID discovery recorded (a switch answers at its own; a CA port at its own).
  const seen = (node: FabricNode): boolean => !scan || (node.type === 'switch' ? scan.switchLids.get(node.guid) === node.lid : scan.nodes.has(node.guid));
  let counters = fromSweeps;
  if (!counters) {
    counterSource = 'perfquery';
    counters = await readCountersByNode(cycle, swept.filter(seen), topology.ports);
  }
  const unreachable = scan ? new Set([...topology.nodes.values()].filter(wanted).filter((node) => !seen(node)).map((node) => node.guid)) : new Set(options.unreachable);
  const ports = await inSlices(portReadings(topology, wanted, scan, counters));
  return { ports, counterSource, unreachable, stale: scan?.stale ?? false };
}

/** Every port of the nodes this instance reports, from the scan and the counters. */
function* portReadings(topology: FabricTopology, wanted: (node: FabricNode) => boolean, scan: Scan | undefined, counters: ReadonlyMap<string, PortCounter[]>): Work<Map<string, FabricPortReading>> {
  const pace = pacer(64);
  const ports = new Map<string, FabricPortReading>();
  for (const node of topology.nodes.values()) {
    if (!wanted(node)) continue;
    for (let port = 1; port <= node.portCount; port++) {
      const key = fabricPortKey(node.guid, port);
      const portCounters = counters.get(key) ?? [];
      const state = scan?.ports.get(key);
      const discovered = topology.ports.get(key);
      // A CA's ports that discovery did not reach (no cable) are not ports of the fabric.
      if (!state && portCounters.length === 0 && !discovered) continue;
      ports.set(key, {
        nodeGuid: node.guid,
        port,
        state: state?.state,
        physicalState: state?.physicalState,
        width: state?.width,
        speed: state?.speed,
        // Not scanned this cycle: the cable as discovery last saw it.
        peer: state ? state.peer : discovered?.peer,
        counters: portCounters,
      });
    }
    if (pace()) yield;
  }
  return ports;
}

interface Scan {
  ports: Map<string, Pick<FabricPortReading, 'state' | 'physicalState' | 'width' | 'speed' | 'peer'>>;
  /** Every node the scan reached. */
  nodes: Set<string>;
  switchLids: Map<string, number>;
  stale: boolean;
  /** Lines that contradict the topology or each other (see Contradictions). */
  contradictions: Contradictions;
}

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

const noContradictions = (): Contradictions => ({ repeated: [], beyondPortCount: [], unknownNodes: new Set() });

/** Each contradiction as a read error of `item`, the first of each kind named. */
function reportContradictions(cycle: FabricCycle, item: string, found: Contradictions, topology: FabricTopology): void {
  const kinds: [string[], (first: string) => string][] = [
    [found.repeated, (first) => `the same port printed more than once (first: ${first}); the first reading stands`],
    [found.beyondPortCount, (first) => `a port number beyond the node's port count (first: port ${first.split('/')[1]} of ${first.split('/')[0]}, a node of ${topology.nodes.get(first.split('/')[0]!)?.portCount ?? '?'} ports); not believed`],
    [[...found.unknownNodes], (first) => `a node discovery never saw (first: ${first}); not believed until a new discovery`],
  ];
  for (const [list, describe] of kinds) {
    if (list.length === 0) continue;
    const message = `the output contradicts ${list.length === 1 ? 'itself or the topology once' : `itself or the topology ${list.length} times`}: ${describe(list[0]!)}`;
    for (let i = 0; i < list.length; i++) cycle.fail(item, message);
  }
}

async function scanPorts(cycle: FabricCycle, options: PortsOptions, nodeOfPort: ReadonlyMap<string, string>): Promise<Scan | undefined> {
  const parser = new IblinkinfoParser();
  const result = await cycle.run('iblinkinfo', ['--line', ...(options.hcaPorts ? [] : ['--switches-only'])], undefined, parser);
  if (!result) return undefined;
  const parsed = parser.end();
  cycle.unparsed(result, parsed.unparsed);
  if (parsed.ports.length === 0) {
    cycle.fail(commandItem(result), 'no port in the output');
    return undefined;
  }
  const scan = await inSlices(scanOf(parsed.ports, options, nodeOfPort));
  reportContradictions(cycle, commandItem(result), scan.contradictions, options.topology);
  const gaps = await inSlices(scanGapsSteps(parsed.ports, options, nodeOfPort));
  if (gaps.cutShort.length > 0) {
    cycle.fail(commandItem(result), `the output is incomplete, cut short or garbled on its way: ${gaps.cutShort.join('; ')}; the ports it left out are reported without a state this cycle`);
  } else if (gaps.missingSwitches.length > 0) {
    // Consistent but without some switches: they left the fabric (their cables are down at the
    // other ends) or were renumbered; a new discovery says which. Their ports' states are unknown meanwhile.
    scan.stale = true;
    const [first] = gaps.missingSwitches;
    cycle.fail(commandItem(result), `the scan did not reach ${gaps.missingSwitches.length === 1 ? 'a switch' : `${gaps.missingSwitches.length} switches`} of the topology (first: ${first!.guid} "${first!.description}"): their ports are reported without a state until a new discovery`);
  }
  return scan;
}

/** The scanned ports of the topology's nodes, by port key, and what they say of the topology. */
function* scanOf(printed: readonly LinkinfoPort[], options: PortsOptions, nodeOfPort: ReadonlyMap<string, string>): Work<Scan> {
  const pace = pacer();
  const scan: Scan = { ports: new Map(), nodes: new Set(), switchLids: new Map(), stale: false, contradictions: noContradictions() };
  const peerOf = (peer: LinkinfoPort['peer']): PortAddress | undefined => {
    if (!peer) return undefined;
    const nodeGuid = nodeOfPort.get(peer.portGuid);
    if (nodeGuid === undefined) scan.stale = true;
    return nodeGuid === undefined ? undefined : { nodeGuid, port: peer.port };
  };
  for (const port of printed) {
    if (pace()) yield;
    const nodeGuid = nodeOfPort.get(port.portGuid);
    const node = nodeGuid === undefined ? undefined : options.topology.nodes.get(nodeGuid);
    if (!node) {
      scan.stale = true;
      scan.contradictions.unknownNodes.add(port.portGuid);
      continue;
    }
    const key = fabricPortKey(node.guid, port.port);
    if (port.port < 1 || port.port > node.portCount) {
      scan.contradictions.beyondPortCount.push(key);
      continue;
    }
    if (scan.ports.has(key)) {
      scan.contradictions.repeated.push(key);
      continue;
    }
    scan.nodes.add(node.guid);
    if (node.type === 'switch') {
      if (port.lid !== node.lid) scan.stale = true;
      scan.switchLids.set(node.guid, port.lid);
    }
    // PortInfo's width and speed mean nothing on a port that is down (IBA C14-24.2.1).
    const down = port.state.id <= 1;
    const scanned = peerOf(port.peer);
    // A cable pulled, plugged or moved since discovery: the topology (CAs, links) is out of date.
    const discovered = options.topology.ports.get(key)?.peer;
    const moved = discovered?.nodeGuid !== scanned?.nodeGuid || discovered?.port !== scanned?.port;
    if (moved) scan.stale = true;
    // The same cable as discovered (nearly always): its address object is shared, not made anew per cycle.
    const peer = moved ? scanned : discovered;
    scan.ports.set(key, {
      state: port.state,
      physicalState: port.physicalState,
      width: down ? undefined : port.width,
      speed: down ? undefined : port.speed,
      peer,
    });
  }
  return scan;
}

export interface ScanGaps {
  /** Why the output cannot be the whole scan (empty when it can). */
  cutShort: string[];
  /** Switches this instance reports that the scan did not print. */
  missingSwitches: FabricNode[];
}

/**
 * What a scan's output lacks, against the topology. libibnetdisc queries every port of each switch
 * it reaches, so a printed switch lists all its ports, and every switch at the far end of a printed
 * cable (every node, with CA ports) is printed too; a scan that breaks either was cut short or
 * garbled on its way. A switch this instance reports that the scan did not print is missing: with
 * such a break, because of it; without, it left the fabric or was renumbered.
 */
export function scanGaps(printed: readonly LinkinfoPort[], options: Pick<PortsOptions, 'topology' | 'covers' | 'hcaPorts'>, nodeOfPort: ReadonlyMap<string, string> = nodesByPortGuid(options.topology)): ScanGaps {
  return atOnce(scanGapsSteps(printed, options, nodeOfPort));
}

/** The same, as work that may pause. */
function* scanGapsSteps(printed: readonly LinkinfoPort[], options: Pick<PortsOptions, 'topology' | 'covers' | 'hcaPorts'>, nodeOfPort: ReadonlyMap<string, string>): Work<ScanGaps> {
  const pace = pacer();
  const { topology } = options;
  const printedPorts = new Map<string, Set<number>>();
  for (const port of printed) {
    if (pace()) yield;
    const guid = nodeOfPort.get(port.portGuid);
    const node = guid === undefined ? undefined : topology.nodes.get(guid);
    // A port number the node does not have is a contradiction (reported by the scan), not one of its ports.
    if (!node || port.port < 1 || port.port > node.portCount) continue;
    let ports = printedPorts.get(node.guid);
    if (!ports) printedPorts.set(node.guid, (ports = new Set()));
    ports.add(port.port);
  }
  const cutShort: string[] = [];
  const printedTypes = new Set(options.hcaPorts ? ['switch', 'ca', 'router'] : ['switch']);
  const beyond = new Set<string>();
  for (const port of printed) {
    if (pace()) yield;
    const peer = port.peer && topology.nodes.get(nodeOfPort.get(port.peer.portGuid) ?? '');
    if (peer && printedTypes.has(peer.type) && !printedPorts.has(peer.guid)) beyond.add(peer.guid);
  }
  if (beyond.size > 0) cutShort.push(`cables lead to ${beyond.size === 1 ? 'a node' : `${beyond.size} nodes`} it does not print (first: ${[...beyond][0]})`);
  const short = [...printedPorts].map(([guid]) => topology.nodes.get(guid)!).filter((node) => node.type === 'switch' && printedPorts.get(node.guid)!.size < node.portCount);
  if (short.length > 0) cutShort.push(`${short.length === 1 ? 'a switch is printed without all its ports' : `${short.length} switches are printed without all their ports`} (first: ${short[0]!.guid} "${short[0]!.description}")`);
  const missingSwitches = [...topology.nodes.values()].filter((node) => node.type === 'switch' && options.covers(node) && !printedPorts.has(node.guid));
  return { cutShort, missingSwitches };
}

/** The last pruned cache written, by discovery cache: written again only for another set of nodes. */
const prunedCaches = new WeakMap<TopologyCache, { file: string; swept: ReadonlySet<string> }>();

/** `--load-cache FILE` arguments: discovery's cache, pruned when some of its nodes are not to be swept. */
async function sweepCache(options: PortsOptions, swept: ReadonlySet<string>): Promise<string[]> {
  const { cache } = options;
  if (!cache) return [];
  const types = new Set(options.hcaPorts ? ['switch', 'ca', 'router'] : ['switch']);
  const sweepable = cache.parsed.nodes.filter((node) => node.type !== undefined && types.has(node.type));
  if (sweepable.every((node) => swept.has(node.guid))) return ['--load-cache', cache.file];
  const file = path.join(options.scratch, 'sweep.cache');
  const last = prunedCaches.get(cache);
  if (last?.file !== file || !sameNodes(swept, last.swept)) {
    await writeFile(file, await inSlices(pruneDiscoveryCacheSteps(cache.bytes, cache.parsed, (node) => swept.has(node.guid))));
    prunedCaches.set(cache, { file, swept });
  }
  return ['--load-cache', file];
}

/**
 * Counters of every port of the swept nodes from the two sweeps, by port key; undefined when a
 * sweep could not run at all (the caller then reads them with perfquery).
 */
async function sweepCounters(cycle: FabricCycle, options: PortsOptions, swept: readonly FabricNode[], nodeOfPort: ReadonlyMap<string, string>): Promise<Map<string, PortCounter[]> | undefined> {
  const sweptGuids = new Set(swept.map((node) => node.guid));
  const loadCache = await sweepCache(options, sweptGuids);
  const typeArgs = options.hcaPorts ? [] : ['--switch'];
  const errorArgs = ['--skip-sl', '--threshold-file', '/dev/null', ...loadCache, ...typeArgs];
  const trafficArgs = ['--skip-sl', '--counters', ...loadCache, ...typeArgs];
  const [errors, traffic] = await Promise.all([sweep(cycle, errorArgs), sweep(cycle, trafficArgs)]);
  if (errors === 'unusable' || traffic === 'unusable') return undefined;

  const failed = failedQueries(cycle, options.topology, [errors, traffic]);
  // Sweeps that both finished queried every swept node: a query that failed before and not now works again.
  const sweptLids = new Set(swept.flatMap((node) => (node.type === 'switch' ? [node.lid] : portLids(options.topology, node))).filter((lid) => lid !== undefined));
  if (errors?.complete && traffic?.complete) cycle.covers((item) => { const lid = queriedLid(item); return lid !== undefined && sweptLids.has(lid); });
  const errorValues = await inSlices(valuesByPort(errors, options.topology, nodeOfPort));
  const trafficValues = await inSlices(valuesByPort(traffic, options.topology, nodeOfPort));
  reportContradictions(cycle, commandItem({ command: 'ibqueryerrors', args: errorArgs }), errorValues.contradictions, options.topology);
  reportContradictions(cycle, commandItem({ command: 'ibqueryerrors', args: trafficArgs }), trafficValues.contradictions, options.topology);
  return inSlices(sweptCounters(swept, failed, errors?.complete ?? false, errorValues.values, trafficValues.values));
}

/** The counters of each port of the swept nodes from the two sweeps' values, by port key. */
function* sweptCounters(
  swept: readonly FabricNode[],
  failed: ReadonlySet<string>,
  errorsComplete: boolean,
  errorValues: ReadonlyMap<string, ReadonlyMap<string, SweepValue>>,
  trafficValues: ReadonlyMap<string, ReadonlyMap<string, SweepValue>>,
): Work<Map<string, PortCounter[]>> {
  const pace = pacer(16);
  const counters = new Map<string, PortCounter[]>();
  for (const node of swept) {
    const nodeFailed = failed.has(fabricPortKey(node.guid, 0));
    for (let port = 1; port <= node.portCount; port++) {
      const key = fabricPortKey(node.guid, port);
      const portCounters: PortCounter[] = [];
      if (errorsComplete && !nodeFailed && !failed.has(key)) {
        // Every threshold is 0: a counter the sweep did not print is 0.
        const values = errorValues.get(key);
        for (const counter of ERROR_COUNTERS) portCounters.push(errorCounter(counter, values?.get(counter.perfqueryField)));
      }
      const values = trafficValues.get(key);
      if (values) portCounters.push(...trafficCounters(values));
      if (portCounters.length > 0) counters.set(key, portCounters);
    }
    if (pace()) yield;
  }
  return counters;
}

/**
 * One sweep, its output parsed as it arrives. 'unusable': it failed outright (not installed, or
 * exited at once with an error other than "ports with errors found"); undefined: it ran but was
 * killed or cut short (recorded).
 */
async function sweep(cycle: FabricCycle, args: string[]): Promise<SweepReading | 'unusable' | undefined> {
  const parser = new IbqueryerrorsParser();
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
  for (const node of topology.nodes.values()) if (node.type === 'switch' && node.lid !== undefined) byLid.set(node.lid, { nodeGuid: node.guid, port: 0 });
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
 * Sweep values by port key (the sweeps print port GUIDs or node GUIDs; both map to the node), and
 * what in them contradicts itself or the topology (the first reading of a port stands).
 */
function* valuesByPort(
  reading: SweepReading | undefined,
  topology: FabricTopology,
  nodeOfPort: ReadonlyMap<string, string>,
): Work<{ values: Map<string, Map<string, SweepValue>>; contradictions: Contradictions }> {
  const pace = pacer();
  const byPort = new Map<string, Map<string, SweepValue>>();
  const contradictions = noContradictions();
  for (const port of reading?.ports ?? []) {
    if (pace()) yield;
    const nodeGuid = nodeOfPort.get(port.guid);
    const node = nodeGuid === undefined ? undefined : topology.nodes.get(nodeGuid);
    if (!node) {
      contradictions.unknownNodes.add(port.guid);
      continue;
    }
    // Port 0 of a switch (its management port) carries no link.
    if (port.port === 0) continue;
    const key = fabricPortKey(node.guid, port.port);
    if (port.port > node.portCount) contradictions.beyondPortCount.push(key);
    else if (byPort.has(key)) contradictions.repeated.push(key);
    else byPort.set(key, port.values);
  }
  return { values: byPort, contradictions };
}

/**
 * A zero error counter, one object per counter shared by every port and cycle: on a sane fabric
 * nearly all of the 14 error counters of every port are 0, and 5 400 ports x 14 new objects per
 * cycle were a quarter of the port readings' heap.
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
function trafficCounters(values: ReadonlyMap<string, SweepValue>): PortCounter[] {
  const extended = values.has('PortUnicastXmitPkts') || [...values.values()].some((v) => v.value > counterMaximum(32));
  const counters: PortCounter[] = [];
  for (const counter of TRAFFIC_COUNTERS) {
    const printed = values.get(counter.perfqueryField);
    if (printed !== undefined) counters.push(exportCounter(counter, printed.value, extended ? 64 : counter.bits));
  }
  return counters;
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
