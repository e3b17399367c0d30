// The fabric at a glance, for the landing page and `check --format json`: nodes by type, links,
// subnet managers, IPoIB groups, and the unhealthy links and ports (those with a finding) with
// both ends named. Never a row per port: a fabric has thousands.
import { physicalLinkIsUp } from '../model/port-state.js';
import { linkCountSteps } from '../model/cabling.js';
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import {
  FABRIC_NODE_TYPES,
  fabricPortKey,
  type FabricNodeType,
  type FabricSnapshot,
  type MulticastGroup,
  type Shard,
} from '../model/fabric.js';
import type { LinkExpectation } from '../model/link-rate.js';
import type { SubnetManagerState } from '../model/host.js';
import type { Snapshot } from '../model/snapshot.js';
import { FABRIC_DISCOVERY } from '../collectors/fabric/discovery.js';
import { subnetManagerHost } from '../model/fabric-names.js';
import { FABRIC_PORTS } from '../collectors/fabric/ports/index.js';
import { FABRIC_SA } from '../collectors/fabric/sa.js';
import { composeFabric } from '../model/fabric.js';
import type { FabricPortName, Finding, Severity } from '../model/finding.js';
import { stateText } from './port-overview.js';

export interface FabricSubnetManagerRow {
  guid: string;
  lid: number;
  priority: number;
  state: SubnetManagerState | undefined;
  /** The node whose port carries the SM's GUID. */
  host: string | undefined;
}

/** A fabric port with a finding, and the other end of its link. */
export interface UnhealthyFabricPort {
  end: FabricPortName;
  peer: FabricPortName | undefined;
  state: string | undefined;
  physicalState: string | undefined;
  width: number | undefined;
  speed: string | undefined;
  expected: LinkExpectation | undefined;
  severity: Severity;
  condition: string;
}

export interface FabricOverview {
  /** Unix time, seconds, of the topology's discovery; undefined before the first succeeded. */
  discoveredAt: number | undefined;
  shard: Shard;
  nodes: Record<FabricNodeType, number>;
  /** Links of the fabric now, each once (linkCountSteps: the same count as /fabric). */
  links: number;
  /** Ports the last ports cycle read (this shard's switch ports, and CA ports with --fabric.hca-ports), and how many had a physical link. */
  portsRead: number;
  portsUp: number;
  subnetManagers: FabricSubnetManagerRow[];
  multicastGroups: readonly MulticastGroup[];
  /** Worst first, as the findings. */
  unhealthy: UnhealthyFabricPort[];
}

/**
 * The fabric as one FabricSnapshot, from the fabric collectors' parts; undefined when fabric mode
 * is off (none of them has reported).
 */
export function fabricOf(snapshot: Snapshot): FabricSnapshot | undefined {
  if (!snapshot.reports.some((report) => report.collector === FABRIC_DISCOVERY.name)) return undefined;
  const discovery = FABRIC_DISCOVERY.of(snapshot);
  if (!discovery) return undefined;
  return composeFabric(discovery.topology, FABRIC_PORTS.of(snapshot), FABRIC_SA.of(snapshot), discovery.shard);
}

export function fabricOverview(fabric: FabricSnapshot, findings: readonly Finding[]): FabricOverview {
  return atOnce(fabricOverviewSteps(fabric, findings));
}

/** The same, as work that may pause. */
export function* fabricOverviewSteps(fabric: FabricSnapshot, findings: readonly Finding[]): Work<FabricOverview> {
  const pace = pacer();
  const nodes = Object.fromEntries(FABRIC_NODE_TYPES.map((type) => [type, 0])) as Record<FabricNodeType, number>;
  for (const node of fabric.topology?.nodes.values() ?? []) nodes[node.type] += 1;
  const links = yield* linkCountSteps(fabric.topology, fabric.ports);
  let portsUp = 0;
  let portsRead = 0;
  for (const reading of fabric.ports.values()) {
    if (pace()) yield;
    // A port the cycle could not read at all is reported without data, not counted as read.
    if (reading.state !== undefined || reading.counters.length > 0) portsRead += 1;
    if (physicalLinkIsUp(reading.physicalState?.id)) portsUp += 1;
  }
  const unhealthy: UnhealthyFabricPort[] = [];
  for (const finding of findings) {
    const { subject } = finding;
    if (subject.kind !== 'fabric-port') continue;
    const key = fabricPortKey(subject.node.guid, subject.port);
    const reading = fabric.ports.get(key);
    const up = physicalLinkIsUp(reading?.physicalState?.id);
    unhealthy.push({
      end: { node: subject.node, port: subject.port },
      peer: subject.peer,
      state: stateText(reading?.state),
      physicalState: stateText(reading?.physicalState),
      width: up ? reading?.width : undefined,
      speed: up ? reading?.speed : undefined,
      expected: fabric.expectations.get(key),
      severity: finding.severity,
      condition: finding.condition,
    });
  }
  return {
    discoveredAt: fabric.topology?.discoveredAt,
    shard: fabric.shard,
    nodes,
    links,
    portsRead,
    portsUp,
    subnetManagers: fabric.subnetManagers.map((sm) => ({
      guid: sm.guid,
      lid: sm.lid,
      priority: sm.priority,
      state: sm.state,
      host: subnetManagerHost(fabric, sm),
    })),
    multicastGroups: fabric.multicastGroups,
    unhealthy,
  };
}
