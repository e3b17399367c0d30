// Fabric snapshot → the infiniband_fabric_* families, as exposition text of their own, in three
// parts that are rendered again only when their data changed: nodes (per discovery), ports (per
// ports cycle: about 31 series per switch port, 170 000 at 1 900 nodes) and the SA's records (per
// SA cycle). Never on a host refresh. Loaded only in fabric mode. Node and port series are those of
// this instance's shard; subnet manager, multicast and duplicate series are fabric-wide.
import { BYTES_PER_GIGABIT, LANE_RATES, type LinkSpeed } from '../model/link-rate.js';
import { assessLink } from '../model/link-degradation.js';
import { inShard, type FabricPortReading, type FabricSnapshot, type PortAddress } from '../model/fabric.js';
import { FABRIC_METRICS, FABRIC_PMA_COUNTER_METRICS, type MetricSpec } from './catalog.js';
import { EncodedPart } from './exposition-parts.js';
import { ExpositionBuffer } from '../exposition/buffer.js';
import { Samples } from './render.js';

const M = FABRIC_METRICS;
const NODE_ORDER: readonly MetricSpec[] = [M.nodeInfo, M.duplicateGuids, M.duplicateLids];
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

/**
 * The samples of one family, written as they come: the header before the first, nothing for a
 * family without samples. `labels` is a label set without its closing brace, `extra` the labels
 * that follow (`,reason="width"`). Sample values that are undefined or not finite are left out,
 * as `Samples` does.
 */
class FamilyWriter {
  private started = false;

  constructor(
    private readonly out: ExpositionBuffer,
    private readonly spec: MetricSpec,
  ) {}

  sample(labels: string, extra: string, value: number | undefined): void {
    if (value === undefined || !Number.isFinite(value)) return;
    if (!this.started) {
      this.out.header(this.spec);
      this.started = true;
    }
    // One write per line: the exporter runs without V8's optimising compilers (runtime-flags.ts),
    // where every Buffer#write call allocates; a line string costs less than six calls.
    this.out.write(`${this.spec.name}${labels}${extra}} ${value}\n`);
  }
}

const rateOf = (speed: LinkSpeed | undefined): number | undefined => (speed === undefined ? undefined : LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT);

/**
 * Every read port, and the cables of ports that are not read (CA ports without --fabric.hca-ports)
 * as discovered: family by family, port by port, in the order `Samples` would give. The label
 * values here are GUIDs as the parsers normalise them, port numbers and fixed words: nothing to
 * escape.
 */
function encodePorts(fabric: FabricSnapshot, sizeHint: number): Buffer {
  const out = new ExpositionBuffer(sizeHint);
  const topology = fabric.topology;
  const readings = [...fabric.ports.values()];
  const expectations = [...fabric.ports.keys()].map((key) => fabric.expectations.get(key));
  // One label set per port, shared by its 31 families.
  const labels = readings.map((reading) => `{node_guid="${reading.nodeGuid}",port="${reading.port}"`);
  const each = (spec: MetricSpec, value: (reading: FabricPortReading, i: number) => number | undefined): void => {
    const family = new FamilyWriter(out, spec);
    readings.forEach((reading, i) => family.sample(labels[i]!, '', value(reading, i)));
  };
  each(M.stateId, (reading) => reading.state?.id);
  each(M.physicalStateId, (reading) => reading.physicalState?.id);
  each(M.rate, ({ width, speed }) => (width !== undefined && speed !== undefined ? width * rateOf(speed)! : undefined));
  each(M.widthLanes, (reading) => reading.width);
  each(M.laneRate, (reading) => rateOf(reading.speed));
  each(M.widthExpected, (_, i) => expectations[i]?.width);
  each(M.laneRateExpected, (_, i) => rateOf(expectations[i]?.speed));
  const degraded = new FamilyWriter(out, M.degraded);
  readings.forEach((reading, i) => {
    const expectation = expectations[i];
    if (!expectation) return;
    const assessment = assessLink(reading, expectation);
    if (assessment.widthDegraded !== undefined) degraded.sample(labels[i]!, ',reason="width"', assessment.widthDegraded ? 1 : 0);
    if (assessment.speedDegraded !== undefined) degraded.sample(labels[i]!, ',reason="speed"', assessment.speedDegraded ? 1 : 0);
  });
  const links = new FamilyWriter(out, M.linkInfo);
  const peerLabels = (peer: PortAddress): string => `,peer_guid="${peer.nodeGuid}",peer_port="${peer.port}",peer_type="${topology?.nodes.get(peer.nodeGuid)?.type ?? ''}"`;
  readings.forEach((reading, i) => {
    if (reading.peer) links.sample(labels[i]!, peerLabels(reading.peer), 1);
  });
  if (topology) {
    for (const [key, port] of topology.ports) {
      if (!port.peer || fabric.ports.has(key) || topology.nodes.get(port.nodeGuid)?.type === 'switch' || !inShard(port.nodeGuid, fabric.shard)) continue;
      links.sample(`{node_guid="${port.nodeGuid}",port="${port.port}"`, peerLabels(port.peer), 1);
    }
  }
  for (const [name, spec] of FABRIC_PMA_COUNTER_METRICS) {
    const family = new FamilyWriter(out, spec);
    // Indexed loops: without the optimising compilers a for-of makes an iterator result per step
    // (2.4 million here, 100 MiB of garbage per render).
    for (let i = 0; i < readings.length; i++) {
      const counters = readings[i]!.counters;
      for (let c = 0; c < counters.length; c++) if (counters[c]!.name === name) family.sample(labels[i]!, '', counters[c]!.value);
    }
  }
  const saturated = new FamilyWriter(out, M.pmaSaturated);
  readings.forEach((reading, i) => {
    for (const counter of reading.counters) if (counter.saturated) saturated.sample(labels[i]!, `,counter="${counter.name}"`, 1);
  });
  return out.finish();
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

  /** `encode` is given a size a little above the part's last: the next render is nearly always as long. */
  constructor(private readonly encode: (fabric: FabricSnapshot, sizeHint: number) => Buffer) {}

  of(fabric: FabricSnapshot, inputs: readonly unknown[]): EncodedPart {
    if (inputs.length !== this.inputs.length || inputs.some((input, i) => input !== this.inputs[i])) {
      this.part = new EncodedPart(this.encode(fabric, this.part.plain.length + (this.part.plain.length >> 4)));
      this.inputs = inputs;
    }
    return this.part;
  }
}

/** The small parts go through `Samples`, which escapes any string a node or the SA reports. */
const encodeSamples = (order: readonly MetricSpec[], samples: (fabric: FabricSnapshot) => Samples) => (fabric: FabricSnapshot): Buffer =>
  samples(fabric).encode(order);

/** The parts of /metrics that hold the infiniband_fabric_* families of a fabric snapshot. */
export type FabricParts = (fabric: FabricSnapshot) => EncodedPart[];

/**
 * Parts that keep their bytes (and gzip member) between calls: a new SA cycle renders the SA's few
 * series, not the ports' 170 000, and the same part objects come back while nothing changed.
 */
export function createFabricParts(): FabricParts {
  const nodes = new Part(encodeSamples(NODE_ORDER, nodeSamples));
  const ports = new Part(encodePorts);
  const sa = new Part(encodeSamples(SA_ORDER, subnetAdministrationSamples));
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
