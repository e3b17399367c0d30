// Fabric snapshot → the infiniband_fabric_* families, as exposition text of their own, in three
// parts that are rendered again only when their data changed: nodes (per discovery), ports (per
// ports cycle: about 31 series per switch port, 170 000 at 1 900 nodes) and the SA's records (per
// SA cycle). Never on a host refresh. Loaded only in fabric mode. Node and port series are those of
// this instance's shard; subnet manager, multicast and duplicate series are fabric-wide.
import { BYTES_PER_GIGABIT, LANE_RATES } from '../infiniband/link-rate.js';
import { assessLink } from '../snapshot/link-degradation.js';
import { inShard, type FabricSnapshot } from '../snapshot/fabric.js';
import { FABRIC_METRICS, FABRIC_PMA_COUNTER_METRICS, type MetricSpec } from './catalog.js';
import { EncodedPart } from './exposition-parts.js';
import { Samples, type Labels } from './render.js';

const M = FABRIC_METRICS;
const NODE_ORDER: readonly MetricSpec[] = [M.nodeInfo, M.duplicateGuids, M.duplicateLids];
const PORT_ORDER: readonly MetricSpec[] = [
  M.stateId, M.physicalStateId, M.rate, M.widthLanes, M.laneRate, M.widthExpected, M.laneRateExpected, M.degraded, M.linkInfo,
  ...FABRIC_PMA_COUNTER_METRICS.values(),
  M.pmaSaturated,
];
const SA_ORDER: readonly MetricSpec[] = [M.subnetManagerInfo, M.multicastMtu, M.multicastRate, M.multicastMembers];

const hex = (value: number | undefined, digits: number): string => (value === undefined ? '' : `0x${value.toString(16).padStart(digits, '0')}`);

/** Nodes of this shard, and the fabric-wide duplicate counts. */
function nodeSamples(fabric: FabricSnapshot): Samples {
  const samples = new Samples();
  const topology = fabric.topology;
  if (!topology) return samples;
  samples.add(M.duplicateGuids, {}, topology.duplicateGuids);
  samples.add(M.duplicateLids, {}, topology.duplicateLids);
  for (const node of topology.nodes.values()) {
    if (!inShard(node.guid, fabric.shard)) continue;
    samples.add(M.nodeInfo, {
      node_guid: node.guid,
      node_type: node.type,
      node_desc: node.description,
      node_name: node.name ?? '',
      lid: node.lid === undefined ? '' : String(node.lid),
      ports: String(node.portCount),
      vendor_id: hex(node.vendorId, 4),
      device_id: hex(node.deviceId, 4),
    }, 1);
  }
  return samples;
}

/** Every read port, and the cables of ports that are not read (CA ports without --fabric.hca-ports) as discovered. */
function portSamples(fabric: FabricSnapshot): Samples {
  const samples = new Samples();
  const topology = fabric.topology;
  for (const [key, reading] of fabric.ports) {
    // One label object per port, shared by its families: 5 400 objects at 1 900 nodes, not 170 000.
    const id: Labels = { node_guid: reading.nodeGuid, port: String(reading.port) };
    samples.add(M.stateId, id, reading.state?.id);
    samples.add(M.physicalStateId, id, reading.physicalState?.id);
    const { width, speed } = reading;
    if (width !== undefined && speed !== undefined) samples.add(M.rate, id, width * LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT);
    samples.add(M.widthLanes, id, width);
    if (speed !== undefined) samples.add(M.laneRate, id, LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT);
    const expectation = fabric.expectations.get(key);
    if (expectation) {
      samples.add(M.widthExpected, id, expectation.width);
      samples.add(M.laneRateExpected, id, expectation.speed && LANE_RATES[expectation.speed].nominalGbps * BYTES_PER_GIGABIT);
      const assessment = assessLink(reading, expectation);
      if (assessment.widthDegraded !== undefined) samples.add(M.degraded, { ...id, reason: 'width' }, assessment.widthDegraded ? 1 : 0);
      if (assessment.speedDegraded !== undefined) samples.add(M.degraded, { ...id, reason: 'speed' }, assessment.speedDegraded ? 1 : 0);
    }
    if (reading.peer) {
      const peerType = topology?.nodes.get(reading.peer.nodeGuid)?.type ?? '';
      samples.add(M.linkInfo, { ...id, peer_guid: reading.peer.nodeGuid, peer_port: String(reading.peer.port), peer_type: peerType }, 1);
    }
    for (const counter of reading.counters) {
      samples.add(FABRIC_PMA_COUNTER_METRICS.get(counter.name)!, id, counter.value);
      if (counter.saturated) samples.add(M.pmaSaturated, { ...id, counter: counter.name }, 1);
    }
  }
  if (topology) {
    for (const [key, port] of topology.ports) {
      if (!port.peer || fabric.ports.has(key) || topology.nodes.get(port.nodeGuid)?.type === 'switch' || !inShard(port.nodeGuid, fabric.shard)) continue;
      const peerType = topology.nodes.get(port.peer.nodeGuid)?.type ?? '';
      samples.add(M.linkInfo, { node_guid: port.nodeGuid, port: String(port.port), peer_guid: port.peer.nodeGuid, peer_port: String(port.peer.port), peer_type: peerType }, 1);
    }
  }
  return samples;
}

function subnetAdministrationSamples(fabric: FabricSnapshot): Samples {
  const samples = new Samples();
  for (const sm of fabric.subnetManagers) {
    samples.add(M.subnetManagerInfo, { sm_guid: sm.guid, sm_lid: String(sm.lid), state: sm.state ?? '', priority: String(sm.priority) }, 1);
  }
  for (const group of fabric.multicastGroups) {
    const id = { mgid: group.mgid, pkey: group.pkey };
    samples.add(M.multicastMtu, id, group.mtuBytes);
    samples.add(M.multicastRate, id, group.rateGbps === undefined ? undefined : group.rateGbps * BYTES_PER_GIGABIT);
    samples.add(M.multicastMembers, id, group.members);
  }
  return samples;
}

/** One part of the exposition, rendered again only when one of its inputs (compared by identity) changed. */
class Part {
  private inputs: readonly unknown[] = [];
  private part = new EncodedPart(Buffer.alloc(0));

  constructor(
    private readonly order: readonly MetricSpec[],
    private readonly samples: (fabric: FabricSnapshot) => Samples,
  ) {}

  of(fabric: FabricSnapshot, inputs: readonly unknown[]): EncodedPart {
    if (inputs.length !== this.inputs.length || inputs.some((input, i) => input !== this.inputs[i])) {
      this.part = new EncodedPart(this.samples(fabric).encode(this.order));
      this.inputs = inputs;
    }
    return this.part;
  }
}

/** The parts of /metrics that hold the infiniband_fabric_* families of a fabric snapshot. */
export type FabricParts = (fabric: FabricSnapshot) => EncodedPart[];

/**
 * Parts that keep their bytes (and gzip member) between calls: a new SA cycle renders the SA's few
 * series, not the ports' 170 000, and the same part objects come back while nothing changed.
 */
export function createFabricParts(): FabricParts {
  const nodes = new Part(NODE_ORDER, nodeSamples);
  const ports = new Part(PORT_ORDER, portSamples);
  const sa = new Part(SA_ORDER, subnetAdministrationSamples);
  return (fabric) => [
    nodes.of(fabric, [fabric.topology, fabric.shard]),
    ports.of(fabric, [fabric.ports, fabric.expectations, fabric.topology, fabric.shard]),
    sa.of(fabric, [fabric.subnetManagers, fabric.multicastGroups]),
  ];
}

/** The infiniband_fabric_* families of one fabric snapshot, as exposition text (no caching). */
export function renderFabric(fabric: FabricSnapshot): string {
  return createFabricParts()(fabric).map((part) => part.plain.toString('utf8')).join('');
}
