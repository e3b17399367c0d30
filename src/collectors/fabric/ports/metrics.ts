// The fabric port families: about 17 series per switch port (90 000 at 1 900 nodes), error
// counters only for ports with errors, flags only while true; written in time slices.
import { pacer, type Work } from '../../../event-loop/time-slices.js';
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../../../exposition/metric-spec.js';
import { FamilyWriter } from '../../../exposition/samples.js';
import { inShard, type FabricPortReading, type PortAddress } from '../../../model/fabric.js';
import { assessLink } from '../../../model/link-degradation.js';
import { BYTES_PER_GIGABIT, LANE_RATES, type LinkExpectation, type LinkSpeed } from '../../../model/link-rate.js';
import { PMA_COUNTERS } from '../../../model/pma-counters.js';
import type { CounterRow } from '../../../model/counter-row.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { FABRIC_DISCOVERY_PART, FABRIC_PORTS_PART } from '../../parts.js';
import { CONGESTION_FAMILIES, writeCongestion } from './congestion.js';
const FABRIC_PORT = ['node_guid', 'port'] as const;

export const PORT_METRICS = {
  stateId: gauge(
    'infiniband_fabric_port_state_id',
    FABRIC_PORT,
    'Logical state of a fabric port, numbered as the kernel numbers host ports: 1 DOWN (no link), 2 INIT (link up, but no subnet manager configured it), 3 ARMED, 4 ACTIVE. Down ports stay listed: a pulled cable shows as 1 here, not as a missing series.',
  ),
  physicalStateId: gauge(
    'infiniband_fabric_port_physical_state_id',
    FABRIC_PORT,
    'Physical state of a fabric port: 1 Sleep, 2 Polling (no cable, or nobody at the other end), 3 Disabled (switched off by management), 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.',
  ),
  rate: gauge(
    'infiniband_fabric_port_rate_bytes_per_second',
    FABRIC_PORT,
    "Nominal rate of a fabric port's link: width x lane rate (Gb/s x 1e9 / 8, as for host ports). Absent while the port is down.",
  ),
  widthLanes: gauge(
    'infiniband_fabric_port_link_width_lanes',
    FABRIC_PORT,
    "Active width of a fabric port's link in lanes (1, 2, 4, 8 or 12). Absent while the port is down.",
  ),
  laneRate: gauge(
    'infiniband_fabric_port_lane_rate_bytes_per_second',
    FABRIC_PORT,
    'Nominal rate of one lane at the active speed (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s). Absent while the port is down.',
  ),
  widthExpected: gauge(
    'infiniband_fabric_port_link_width_expected_lanes',
    FABRIC_PORT,
    'Width the link should run at: from fabric.expectations in the config file (first rule matching either end), else the widest both ends enable (PortInfo LinkWidthEnabled, from discovery). Absent when unknown.',
  ),
  laneRateExpected: gauge(
    'infiniband_fabric_port_lane_rate_expected_bytes_per_second',
    FABRIC_PORT,
    'Lane rate the link should run at: from fabric.expectations in the config file, else the fastest speed both ends enable (PortInfo LinkSpeed(Ext)Enabled). Absent when unknown.',
  ),
  degraded: gauge(
    'infiniband_fabric_port_link_degraded',
    [...FABRIC_PORT, 'reason'],
    'Present (value 1) only while a fabric link runs below its expected width (reason="width") or speed (reason="speed"): a damaged cable, transceiver or port. Set on both ends of an inter-switch link.',
  ),
  linkInfo: gauge(
    'infiniband_fabric_link_info',
    [...FABRIC_PORT, 'peer_guid', 'peer_port', 'peer_type'],
    "The port at the other end of a fabric port's cable (value always 1): its node GUID, port number and node type (switch, ca, router). Switch ports as last read; CA ports as last discovered.",
  ),
  pmaSaturated: gauge(
    'infiniband_fabric_port_pma_saturated',
    [...FABRIC_PORT, 'counter'],
    'Present (value 1) only while a fixed-width PMA counter of a fabric port sits at its maximum: it no longer counts and new errors are invisible until it is reset (perfquery -R).',
  ),
} as const;

/**
 * Which PMA counters of a read port are served. Traffic counters always; the error counters of a
 * port all together, once any of them is non-zero (on a healthy port they are all 0, and absent:
 * a port whose traffic counters are served had them read); PortXmitWait once it is non-zero. At
 * 120 000 switch ports that is 13 series a port fewer, most of them zeros (the rules count a
 * counter's first appearance as its increase, see rules/infiniband-fabric-alerts.yml).
 */
const WAIT = 'transmit_wait';
const ERRORS = new Set(PMA_COUNTERS.filter((c) => c.error && c.name !== WAIT).map((c) => c.name));
const SPARSE = (c: (typeof PMA_COUNTERS)[number]): string =>
  c.name === WAIT
    ? ' Served once non-zero.'
    : ERRORS.has(c.name)
      ? ' Served, with the other error counters of the port, once any of them is non-zero: absent on a port whose traffic counters are served means 0.'
      : '';

/** PMA counters of fabric ports: the host contract's names under infiniband_fabric_port_. */
export const PMA_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.map((c) => [
    c.name,
    counter(`infiniband_fabric_port_${c.name}_total`, FABRIC_PORT, `Of a fabric port: ${c.help}${SPARSE(c)}`),
  ]),
);

/** Whether a reading's error counters are served (any of them non-zero). */
function hasErrors(counters: CounterRow): boolean {
  for (let c = 0; c < counters.length; c++) if (counters.value(c) > 0 && ERRORS.has(counters.name(c))) return true;
  return false;
}

const M = PORT_METRICS;
export const FAMILIES: readonly MetricSpec[] = [
  M.stateId,
  M.physicalStateId,
  M.rate,
  M.widthLanes,
  M.laneRate,
  M.widthExpected,
  M.laneRateExpected,
  M.degraded,
  M.linkInfo,
  ...PMA_COUNTER_METRICS.values(),
  M.pmaSaturated,
  ...CONGESTION_FAMILIES,
];

const rateOf = (speed: LinkSpeed | undefined): number | undefined =>
  speed === undefined ? undefined : LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT;

/**
 * Every read port, and the cables of ports that are not read (CA ports without --fabric.hca-ports)
 * as discovered: family by family, port by port, in the order `Samples` would give. The label
 * values here are GUIDs as the parsers normalise them, port numbers and fixed words: nothing to
 * escape.
 */
export function* writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): Work<void> {
  const part = FABRIC_PORTS_PART.of(snapshot);
  const discovery = FABRIC_DISCOVERY_PART.of(snapshot);
  if (!part) return;
  // A pause every few hundred samples: a shard of an AI-cluster fabric writes half a million.
  const pace = pacer();
  const topology = discovery?.topology;
  // Each port's reading, expectation and label set (one per port, shared by its families), in one
  // walk that pauses like the writing: made at once, the whole fabric's 122 880 held the event
  // loop for 0.1-0.2 s (a CPU profile of the blocks after the counters sweep).
  const readings: FabricPortReading[] = [];
  const expectations: (LinkExpectation | undefined)[] = [];
  const labels: string[] = [];
  for (const [key, reading] of part.ports) {
    readings.push(reading);
    expectations.push(part.expectations.get(key));
    labels.push(`{node_guid="${reading.nodeGuid}",port="${reading.port}"`);
    if (pace()) yield;
  }
  yield;
  function* each(spec: MetricSpec, value: (reading: FabricPortReading, i: number) => number | undefined): Work<void> {
    const family = new FamilyWriter(out, spec);
    for (let i = 0; i < readings.length; i++) {
      family.sample(labels[i]!, '', value(readings[i]!, i));
      if (pace()) yield;
    }
  }
  yield* each(M.stateId, (reading) => reading.state?.id);
  yield* each(M.physicalStateId, (reading) => reading.physicalState?.id);
  yield* each(M.rate, ({ width, speed }) => (width !== undefined && speed !== undefined ? width * rateOf(speed)! : undefined));
  yield* each(M.widthLanes, (reading) => reading.width);
  yield* each(M.laneRate, (reading) => rateOf(reading.speed));
  yield* each(M.widthExpected, (_, i) => expectations[i]?.width);
  yield* each(M.laneRateExpected, (_, i) => rateOf(expectations[i]?.speed));
  // Only while degraded: a healthy fabric serves none.
  const degraded = new FamilyWriter(out, M.degraded);
  for (let i = 0; i < readings.length; i++) {
    if (pace()) yield;
    const expectation = expectations[i];
    if (!expectation) continue;
    const assessment = assessLink(readings[i]!, expectation);
    if (assessment.widthDegraded) degraded.sample(labels[i]!, ',reason="width"', 1);
    if (assessment.speedDegraded) degraded.sample(labels[i]!, ',reason="speed"', 1);
  }
  const links = new FamilyWriter(out, M.linkInfo);
  const peerLabels = (peer: PortAddress): string =>
    `,peer_guid="${peer.nodeGuid}",peer_port="${peer.port}",peer_type="${topology?.nodes.get(peer.nodeGuid)?.type ?? ''}"`;
  for (let i = 0; i < readings.length; i++) {
    if (pace()) yield;
    const { peer } = readings[i]!;
    if (peer) links.sample(labels[i]!, peerLabels(peer), 1);
  }
  if (topology && discovery) {
    for (const [key, port] of topology.ports) {
      if (pace()) yield;
      if (
        !port.peer ||
        part.ports.has(key) ||
        topology.nodes.get(port.nodeGuid)?.type === 'switch' ||
        !inShard(port.nodeGuid, discovery.shard)
      )
        continue;
      links.sample(`{node_guid="${port.nodeGuid}",port="${port.port}"`, peerLabels(port.peer), 1);
    }
  }
  const erroring = readings.map((reading) => hasErrors(reading.counters));
  yield;
  for (const [name, spec] of PMA_COUNTER_METRICS) {
    const family = new FamilyWriter(out, spec);
    const error = ERRORS.has(name);
    const wait = name === WAIT;
    // Indexed loops: without the optimising compilers a for-of makes an iterator result per step
    // (2.4 million here, 100 MiB of garbage per render).
    for (let i = 0; i < readings.length; i++) {
      if (pace()) yield;
      if (error && !erroring[i]) continue;
      const counters = readings[i]!.counters;
      const c = counters.indexOf(name);
      if (c >= 0 && !(wait && counters.value(c) === 0)) family.sample(labels[i]!, '', counters.value(c));
    }
  }
  const saturated = new FamilyWriter(out, M.pmaSaturated);
  for (let i = 0; i < readings.length; i++) {
    if (pace()) yield;
    const counters = readings[i]!.counters;
    for (let c = 0; c < counters.length; c++) if (counters.saturated(c)) saturated.sample(labels[i]!, `,counter="${counters.name(c)}"`, 1);
  }
  yield* writeCongestion(part.congestion, part.ports, out);
}
