// The words of the cabling findings: how a node, a port, a pair of ports, a plan's line and a cable
// are named for a person at the rack, and whether a planned port shows it carried a link.
import {
  compareNames,
  nodeLabel,
  planPortKey,
  type CablingConformance,
  type PlanPort,
  type ResolvedCable,
} from '../../../model/cabling.js';
import { fabricPortKey, type FabricPortReading, type FabricTopology, type PortAddress } from '../../../model/fabric.js';
import type { FabricNodeName, FabricPortName } from '../../../model/finding.js';

/** The counts fabric_ports' port-down finding takes as signs of use (the discovery no longer shows the cable). */
export function portWasInUse(reading: FabricPortReading | undefined): boolean {
  const count = (name: string): number => reading?.counters.get(name) ?? 0;
  return count('link_downed') + count('transmit_packets') + count('receive_packets') > 0;
}
/** Names for the messages: a node's node-name-map name, else its NodeDescription, else the plan's name for it, else its GUID. */
export class CablingWords {
  private readonly written = new Map<string, string>();
  private readonly planned = new Map<string, ResolvedCable>();

  constructor(
    readonly topology: FabricTopology | undefined,
    conformance?: CablingConformance,
    private readonly readings: ReadonlyMap<string, FabricPortReading> = new Map(),
    private readonly planFile = conformance?.plan.plan.file,
  ) {
    for (const [guid, written] of conformance?.plan.nodes ?? []) this.written.set(guid, written);
    for (const cable of conformance?.plan.cables ?? []) for (const end of cable.ends) this.planned.set(planPortKey(end), cable);
  }

  /** Whether a port of the plan shows it carried a link since its counters were reset. */
  inUse(end: { nodeGuid?: string | undefined; port: number }): boolean {
    return end.nodeGuid !== undefined && portWasInUse(this.readings.get(fabricPortKey(end.nodeGuid, end.port)));
  }

  /** The planned cable of a port, if the plan has one. */
  plannedAt(address: PortAddress): ResolvedCable | undefined {
    return this.planned.get(fabricPortKey(address.nodeGuid, address.port));
  }

  node(guid: string): FabricNodeName {
    return { guid, type: this.topology?.nodes.get(guid)?.type, name: nodeLabel(this.topology, guid, this.written.get(guid)) };
  }

  /** "rail0-leaf1 port 6". */
  port(address: PortAddress): string {
    return `${this.node(address.nodeGuid).name} port ${address.port}`;
  }

  planPort(end: PlanPort): string {
    return end.nodeGuid === undefined ? `${end.written} port ${end.port}` : this.port({ nodeGuid: end.nodeGuid, port: end.port });
  }

  portName(address: PortAddress): FabricPortName {
    return { node: this.node(address.nodeGuid), port: address.port };
  }

  /** "rail1-leaf1 ports 2 and 3" for ports of one node, else "A port 2 and B port 3", in natural order. */
  pair(a: PortAddress, b: PortAddress): string {
    if (a.nodeGuid === b.nodeGuid) return `${this.node(a.nodeGuid).name} ports ${Math.min(a.port, b.port)} and ${Math.max(a.port, b.port)}`;
    const [first, second] = compareNames(this.port(a), this.port(b)) <= 0 ? [a, b] : [b, a];
    return `${this.port(first)} and ${this.port(second)}`;
  }

  /** "(plan.txt line 12)", "(plan.txt lines 3 and 7)". */
  lines(cables: readonly Pick<ResolvedCable, 'line'>[]): string {
    const numbers = [...new Set(cables.map((cable) => cable.line))].sort((a, b) => a - b);
    if (numbers.length === 0 || this.planFile === undefined) return '';
    const list = numbers.length === 1 ? `line ${numbers[0]}` : `lines ${numbers.slice(0, -1).join(', ')} and ${numbers.at(-1)}`;
    return ` (${this.planFile} ${list})`;
  }

  cable(cable: ResolvedCable): string {
    return `${this.planPort(cable.ends[0])} and ${this.planPort(cable.ends[1])}`;
  }
}
