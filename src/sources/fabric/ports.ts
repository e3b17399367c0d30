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
import { atOnce, inSlices, pacer, type Work } from '../../event-loop/time-slices.js';
import {
  fabricPortKey,
  keepPortKeys,
  type FabricNode,
  type FabricPortReading,
  type FabricTopology,
  type PortAddress,
} from '../../model/fabric.js';
import { PortReadings, type PortLink } from '../../model/port-readings.js';
import { commandItem, type FabricCycle } from './commands.js';
import { readCountersByNode } from './perfquery-counters.js';
import { nodesByPortGuid, nodesByPortGuidSteps, type TopologyCache } from './discovery.js';
import { IblinkinfoParser, type LinkinfoPort } from './iblinkinfo.js';
import {
  countersOfRows,
  noContradictions,
  reportContradictions,
  sweepCounters,
  type Contradictions,
  type CycleCounters,
} from './counter-sweeps.js';

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
  /** The last cycle's readings, whose peers this cycle's share where the cable is the same. */
  previous?: PortReadings | undefined;
}

/**
 * The last cycle's address of a port's peer when it is the same as now (nearly always): one object
 * per port for as long as its cable stays, not one per cycle (the topology's ports are columns that
 * make a new one each time they are asked).
 */
function samePeer(previous: PortAddress | undefined, now: PortAddress | undefined): PortAddress | undefined {
  return previous !== undefined && now !== undefined && previous.nodeGuid === now.nodeGuid && previous.port === now.port ? previous : now;
}

export interface PortsReading {
  ports: PortReadings;
  /** The source that delivered this cycle's counters. */
  counterSource: CounterSource;
  /** Nodes this cycle's scan did not see at their discovered LID (for the next cycle). */
  unreachable: Set<string>;
  /** The scan saw nodes, GUIDs, LIDs or cables that discovery did not: the topology is out of date. */
  stale: boolean;
}

export async function readFabricPorts(cycle: FabricCycle, options: PortsOptions): Promise<PortsReading> {
  const { topology } = options;
  const nodeOfPort = await inSlices(nodesByPortGuidSteps(topology));
  const wanted = (node: FabricNode | undefined): node is FabricNode =>
    node !== undefined && (options.hcaPorts || node.type === 'switch') && options.covers(node);

  // The scan and the counter sweeps run side by side; the sweeps leave out the nodes the previous
  // scan no longer saw at the LID discovery recorded (they would only wait on timeouts).
  const swept = [...topology.nodes.values()].filter(wanted).filter((node) => !options.unreachable.has(node.guid));
  let counterSource = options.counterSource;
  const [scan, fromSweeps] = await Promise.all([
    scanPorts(cycle, options, nodeOfPort, wanted),
    counterSource === 'sweep' ? sweepCounters(cycle, options, swept, nodeOfPort) : Promise.resolve(undefined),
  ]);
  // Seen by this scan at the LID discovery recorded (a switch answers at its own; a CA port at its own).
  const seen = (node: FabricNode): boolean =>
    !scan || (node.type === 'switch' ? scan.switchLids.get(node.guid) === node.lid : scan.nodes.has(node.guid));
  let counters = fromSweeps;
  if (!counters) {
    counterSource = 'perfquery';
    counters = countersOfRows(await readCountersByNode(cycle, swept.filter(seen), topology.ports));
  }
  const unreachable = scan
    ? new Set(
        [...topology.nodes.values()]
          .filter(wanted)
          .filter((node) => !seen(node))
          .map((node) => node.guid),
      )
    : new Set(options.unreachable);
  const ports = await inSlices(portReadings(topology, wanted, scan, counters, options.previous));
  return { ports, counterSource, unreachable, stale: scan?.stale ?? false };
}

/** Every port of the nodes this instance reports, from the scan and the counters. */
function* portReadings(
  topology: FabricTopology,
  wanted: (node: FabricNode) => boolean,
  scan: Scan | undefined,
  counters: CycleCounters,
  previous: PortReadings | undefined,
): Work<PortReadings> {
  const pace = pacer(16);
  const readings = new PortReadings(previous?.valueCount);
  for (const node of topology.nodes.values()) {
    if (!wanted(node)) continue;
    // Its ports' keys are kept: the maps of this instance's ports share them cycle after cycle.
    keepPortKeys(node.guid, node.portCount);
    for (let port = 1; port <= node.portCount; port++) {
      const key = fabricPortKey(node.guid, port);
      counters.write(node, key, readings);
      const state = scan?.ports.get(key);
      const discovered = state ? undefined : topology.ports.get(key);
      // A CA's ports that discovery did not reach (no cable) are not ports of the fabric.
      if (!state && readings.written === 0 && !discovered) {
        readings.discard();
        continue;
      }
      // Not scanned this cycle: the cable as discovery last saw it.
      readings.commit(node.guid, port, node.portCount + 1, state, state ? state.peer : samePeer(previous?.peerOf(key), discovered?.peer));
    }
    if (pace()) yield;
  }
  return readings.seal();
}

interface Scan {
  ports: Map<string, PortLink & Pick<FabricPortReading, 'peer'>>;
  /** Every node the scan reached. */
  nodes: Set<string>;
  switchLids: Map<string, number>;
  stale: boolean;
  /** Lines that contradict the topology or each other (see Contradictions). */
  contradictions: Contradictions;
}

async function scanPorts(
  cycle: FabricCycle,
  options: PortsOptions,
  nodeOfPort: ReadonlyMap<string, string>,
  wanted: (node: FabricNode) => boolean,
): Promise<Scan | undefined> {
  // The scan is taken up a port at a time as the output is parsed: the whole fabric's ports are
  // not kept until its end, and only those of the nodes this instance reports are kept at all.
  const builder = new ScanBuilder(options, nodeOfPort, wanted);
  const parser = new IblinkinfoParser((port) => builder.add(port));
  const result = await cycle.run('iblinkinfo', ['--line', ...(options.hcaPorts ? [] : ['--switches-only'])], undefined, parser);
  if (!result) return undefined;
  const parsed = parser.end();
  cycle.unparsed(result, parsed.unparsed);
  if (builder.printedPorts === 0) {
    cycle.fail(commandItem(result), 'no port in the output');
    return undefined;
  }
  const { scan } = builder;
  reportContradictions(cycle, commandItem(result), scan.contradictions, options.topology);
  const gaps = await inSlices(builder.gaps());
  if (gaps.cutShort.length > 0) {
    cycle.fail(
      commandItem(result),
      `the output is incomplete, cut short or garbled on its way: ${gaps.cutShort.join('; ')}; the ports it left out are reported without a state this cycle`,
    );
  } else if (gaps.missingSwitches.length > 0) {
    // Consistent but without some switches: they left the fabric (their cables are down at the
    // other ends) or were renumbered; a new discovery says which. Their ports' states are unknown meanwhile.
    scan.stale = true;
    const [first] = gaps.missingSwitches;
    cycle.fail(
      commandItem(result),
      `the scan did not reach ${gaps.missingSwitches.length === 1 ? 'a switch' : `${gaps.missingSwitches.length} switches`} of the topology (first: ${first!.guid} "${first!.description}"): their ports are reported without a state until a new discovery`,
    );
  }
  return scan;
}

/**
 * A scan taken up one printed port at a time: the scanned ports of the nodes `keeps` says (by
 * port key), what the output says of the topology, and what it lacks (see `scanGaps`).
 */
class ScanBuilder {
  readonly scan: Scan = { ports: new Map(), nodes: new Set(), switchLids: new Map(), stale: false, contradictions: noContradictions() };
  /** Ports taken up, understood or not. */
  printedPorts = 0;
  /** Each printed node's port numbers printed (1 each), in the order first printed, and how many. */
  private readonly printed = new Map<string, { seen: Uint8Array; count: number }>();
  /** Nodes of a type the scan prints at the far end of a printed cable, first seen first. */
  private readonly farEnds = new Set<string>();
  private readonly printedTypes: ReadonlySet<string>;

  constructor(
    private readonly options: Pick<PortsOptions, 'topology' | 'covers' | 'hcaPorts' | 'previous'>,
    private readonly nodeOfPort: ReadonlyMap<string, string>,
    private readonly keeps: (node: FabricNode) => boolean,
  ) {
    this.printedTypes = new Set(options.hcaPorts ? ['switch', 'ca', 'router'] : ['switch']);
  }

  add(port: LinkinfoPort): void {
    const { scan, nodeOfPort } = this;
    const { topology } = this.options;
    this.printedPorts++;
    const far = port.peer && topology.nodes.get(nodeOfPort.get(port.peer.portGuid) ?? '');
    if (far && this.printedTypes.has(far.type)) this.farEnds.add(far.guid);
    const nodeGuid = nodeOfPort.get(port.portGuid);
    const node = nodeGuid === undefined ? undefined : topology.nodes.get(nodeGuid);
    if (!node) {
      scan.stale = true;
      scan.contradictions.unknownNodes.add(port.portGuid);
      return;
    }
    const key = fabricPortKey(node.guid, port.port);
    // A port number the node does not have is a contradiction, not one of its ports.
    if (port.port < 1 || port.port > node.portCount) {
      scan.contradictions.beyondPortCount.push(key);
      return;
    }
    let printed = this.printed.get(node.guid);
    if (!printed) this.printed.set(node.guid, (printed = { seen: new Uint8Array(node.portCount + 1), count: 0 }));
    if (printed.seen[port.port] === 1) {
      scan.contradictions.repeated.push(key);
      return;
    }
    printed.seen[port.port] = 1;
    printed.count++;
    scan.nodes.add(node.guid);
    if (node.type === 'switch') {
      if (port.lid !== node.lid) scan.stale = true;
      scan.switchLids.set(node.guid, port.lid);
    }
    let scanned: PortAddress | undefined;
    if (port.peer) {
      const peerGuid = nodeOfPort.get(port.peer.portGuid);
      if (peerGuid === undefined) scan.stale = true;
      else scanned = { nodeGuid: peerGuid, port: port.peer.port };
    }
    // A cable pulled, plugged or moved since discovery: the topology (CAs, links) is out of date.
    const discovered = topology.ports.get(key)?.peer;
    const moved = discovered?.nodeGuid !== scanned?.nodeGuid || discovered?.port !== scanned?.port;
    if (moved) scan.stale = true;
    if (!this.keeps(node)) return;
    // PortInfo's width and speed mean nothing on a port that is down (IBA C14-24.2.1).
    const down = port.state.id <= 1;
    scan.ports.set(key, {
      state: port.state,
      physicalState: port.physicalState,
      width: down ? undefined : port.width,
      speed: down ? undefined : port.speed,
      peer: samePeer(this.options.previous?.peerOf(key), moved ? scanned : discovered),
    });
  }

  /** What the output lacks, once it was all taken up. */
  *gaps(): Work<ScanGaps> {
    const pace = pacer();
    const { topology, covers } = this.options;
    const cutShort: string[] = [];
    const beyond = [...this.farEnds].filter((guid) => !this.printed.has(guid));
    if (beyond.length > 0)
      cutShort.push(`cables lead to ${beyond.length === 1 ? 'a node' : `${beyond.length} nodes`} it does not print (first: ${beyond[0]})`);
    const short: FabricNode[] = [];
    for (const [guid, printed] of this.printed) {
      const node = topology.nodes.get(guid)!;
      if (node.type === 'switch' && printed.count < node.portCount) short.push(node);
    }
    if (short.length > 0)
      cutShort.push(
        `${short.length === 1 ? 'a switch is printed without all its ports' : `${short.length} switches are printed without all their ports`} (first: ${short[0]!.guid} "${short[0]!.description}")`,
      );
    const missingSwitches: FabricNode[] = [];
    for (const node of topology.nodes.values()) {
      if (pace()) yield;
      if (node.type === 'switch' && covers(node) && !this.printed.has(node.guid)) missingSwitches.push(node);
    }
    return { cutShort, missingSwitches };
  }
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
export function scanGaps(
  printed: readonly LinkinfoPort[],
  options: Pick<PortsOptions, 'topology' | 'covers' | 'hcaPorts'>,
  nodeOfPort: ReadonlyMap<string, string> = nodesByPortGuid(options.topology),
): ScanGaps {
  const builder = new ScanBuilder(options, nodeOfPort, () => false);
  for (const port of printed) builder.add(port);
  return atOnce(builder.gaps());
}
