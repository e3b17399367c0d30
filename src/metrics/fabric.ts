// Fabric snapshot → the infiniband_fabric_* families, as one exposition text of their own: it is
// rendered once per fabric cycle (about 31 series per switch port, 170 000 at 1 900 nodes), not on
// every host refresh. Loaded only in fabric mode. Node and port series are those of this
// instance's shard; subnet manager, multicast and duplicate series are fabric-wide.
import { BYTES_PER_GIGABIT, LANE_RATES } from '../infiniband/link-rate.js';
import { assessLink } from '../snapshot/link-degradation.js';
import { inShard, type FabricSnapshot } from '../snapshot/fabric.js';
import { FABRIC_METRICS, FABRIC_PMA_COUNTER_METRICS, type MetricSpec } from './catalog.js';
import { Samples } from './render.js';

const ORDER: readonly MetricSpec[] = [
  ...Object.values(FABRIC_METRICS).filter((spec) => spec !== FABRIC_METRICS.pmaSaturated),
  ...FABRIC_PMA_COUNTER_METRICS.values(),
  FABRIC_METRICS.pmaSaturated,
];

const hex = (value: number | undefined, digits: number): string => (value === undefined ? '' : `0x${value.toString(16).padStart(digits, '0')}`);

export function collectFabricSamples(fabric: FabricSnapshot): Samples {
  const samples = new Samples();
  const topology = fabric.topology;
  if (topology) {
    samples.add(FABRIC_METRICS.duplicateGuids, {}, topology.duplicateGuids);
    samples.add(FABRIC_METRICS.duplicateLids, {}, topology.duplicateLids);
    for (const node of topology.nodes.values()) {
      if (!inShard(node.guid, fabric.shard)) continue;
      samples.add(FABRIC_METRICS.nodeInfo, {
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
    // Cables of ports that are not read (CA ports without --fabric.hca-ports): as discovered.
    for (const [key, port] of topology.ports) {
      if (!port.peer || fabric.ports.has(key) || topology.nodes.get(port.nodeGuid)?.type === 'switch' || !inShard(port.nodeGuid, fabric.shard)) continue;
      const peerType = topology.nodes.get(port.peer.nodeGuid)?.type;
      samples.add(FABRIC_METRICS.linkInfo, { node_guid: port.nodeGuid, port: String(port.port), peer_guid: port.peer.nodeGuid, peer_port: String(port.peer.port), peer_type: peerType ?? '' }, 1);
    }
  }

  for (const [key, reading] of fabric.ports) {
    const id = { node_guid: reading.nodeGuid, port: String(reading.port) };
    samples.add(FABRIC_METRICS.stateId, id, reading.state?.id);
    samples.add(FABRIC_METRICS.physicalStateId, id, reading.physicalState?.id);
    const { width, speed } = reading;
    if (width !== undefined && speed !== undefined) samples.add(FABRIC_METRICS.rate, id, width * LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT);
    samples.add(FABRIC_METRICS.widthLanes, id, width);
    if (speed !== undefined) samples.add(FABRIC_METRICS.laneRate, id, LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT);
    const expectation = fabric.expectations.get(key);
    if (expectation) {
      samples.add(FABRIC_METRICS.widthExpected, id, expectation.width);
      samples.add(FABRIC_METRICS.laneRateExpected, id, expectation.speed && LANE_RATES[expectation.speed].nominalGbps * BYTES_PER_GIGABIT);
      const assessment = assessLink(reading, expectation);
      if (assessment.widthDegraded !== undefined) samples.add(FABRIC_METRICS.degraded, { ...id, reason: 'width' }, assessment.widthDegraded ? 1 : 0);
      if (assessment.speedDegraded !== undefined) samples.add(FABRIC_METRICS.degraded, { ...id, reason: 'speed' }, assessment.speedDegraded ? 1 : 0);
    }
    if (reading.peer) {
      const peerType = topology?.nodes.get(reading.peer.nodeGuid)?.type ?? '';
      samples.add(FABRIC_METRICS.linkInfo, { ...id, peer_guid: reading.peer.nodeGuid, peer_port: String(reading.peer.port), peer_type: peerType }, 1);
    }
    for (const counter of reading.counters) {
      samples.add(FABRIC_PMA_COUNTER_METRICS.get(counter.name)!, id, counter.value);
      if (counter.saturated) samples.add(FABRIC_METRICS.pmaSaturated, { ...id, counter: counter.name }, 1);
    }
  }

  for (const sm of fabric.subnetManagers) {
    samples.add(FABRIC_METRICS.subnetManagerInfo, { sm_guid: sm.guid, sm_lid: String(sm.lid), state: sm.state ?? '', priority: String(sm.priority) }, 1);
  }
  for (const group of fabric.multicastGroups) {
    const id = { mgid: group.mgid, pkey: group.pkey };
    samples.add(FABRIC_METRICS.multicastMtu, id, group.mtuBytes);
    samples.add(FABRIC_METRICS.multicastRate, id, group.rateGbps === undefined ? undefined : group.rateGbps * BYTES_PER_GIGABIT);
    samples.add(FABRIC_METRICS.multicastMembers, id, group.members);
  }
  return samples;
}

/** The infiniband_fabric_* families of one fabric snapshot, as exposition text. */
export async function renderFabric(fabric: FabricSnapshot): Promise<string> {
  return collectFabricSamples(fabric).register(ORDER).metrics();
}

