// The sysfs collector's families: the device and port families, from its own reading and what
// the diag collectors added to a port (the expected rate smpquery found, perfquery's counters).
import { BOOLEAN, flag, type Settings } from '../../../config/flags.js';
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../../../exposition/metric-spec.js';
import { STABLE, Samples, type Labels } from '../../../exposition/samples.js';
import type { LinkExpectation } from '../../../model/link-rate.js';
import { portKey, type Port, type PortCounter } from '../../../model/host.js';
import { assessLink } from '../../../model/link-degradation.js';
import { BYTES_PER_GIGABIT, LANE_RATES, formatWidth } from '../../../model/link-rate.js';
import { PMA_COUNTERS } from '../../../model/pma-counters.js';
import { PHYSICAL_STATES, PORT_STATES, physicalLinkIsUp } from '../../../model/port-state.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { peerExpectation } from '../../../model/host.js';
import { PERFQUERY_PART, SMPQUERY_PART, SYSFS_PART } from '../../parts.js';
export const PORT_STATE_SERIES = flag(BOOLEAN, {
  name: 'metrics.port-state-series',
  key: 'metrics.port_state_series',
  default: false,
  help: 'Also serve infiniband_port_state{state} and infiniband_port_physical_state{state}, one series per state name (13 per port; the _id gauges carry the same).',
});

const PORT = ['device', 'port'] as const;

export const DEVICE_METRICS = {
  deviceInfo: gauge(
    'infiniband_device_info',
    ['device', 'node_type', 'node_guid', 'sys_image_guid', 'firmware_version', 'hca_type', 'board_id', 'hw_rev', 'node_desc'],
    'InfiniBand device identity from /sys/class/infiniband/<device> (value always 1; empty label = file absent). GUIDs as 0x + 16 hex digits.',
  ),
} as const;

export const PORT_METRICS = {
  portInfo: gauge(
    'infiniband_port_info',
    [...PORT, 'link_layer', 'port_guid', 'width', 'speed'],
    'Port identity (value always 1): link layer (InfiniBand, Ethernet = RoCE), port GUID from GID 0, active width and speed (empty while the physical link is down).',
  ),
  stateId: gauge(
    'infiniband_port_state_id',
    PORT,
    'Logical port state from ports/<n>/state: 0 NOP, 1 DOWN, 2 INIT (link up but no subnet manager configured it), 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.',
  ),
  state: gauge(
    'infiniband_port_state',
    [...PORT, 'state'],
    'Logical port state as one series per state name, 1 for the current state, else 0 (only with --metrics.port-state-series; infiniband_port_state_id carries the same).',
  ),
  physicalStateId: gauge(
    'infiniband_port_physical_state_id',
    PORT,
    'Physical link state from ports/<n>/phys_state: 1 Sleep, 2 Polling (no cable or no peer), 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.',
  ),
  physicalState: gauge(
    'infiniband_port_physical_state',
    [...PORT, 'state'],
    'Physical link state as one series per state name, 1 for the current state, else 0 (only with --metrics.port-state-series; infiniband_port_physical_state_id carries the same).',
  ),
  stateChanges: counter(
    'infiniband_port_state_changes_total',
    PORT,
    'Logical state changes the exporter observed since it started (sampled every collection interval): flaps between scrapes are counted.',
  ),
  lid: gauge('infiniband_port_lid', PORT, 'Base LID assigned to the port by the subnet manager (0 = not assigned).'),
  smLid: gauge(
    'infiniband_port_sm_lid',
    PORT,
    'LID of the master subnet manager as the port last heard it (0 = no subnet manager ever configured the port; stays set after the SM dies).',
  ),
  smSl: gauge('infiniband_port_sm_sl', PORT, 'Service level used to reach the subnet manager.'),
  lmc: gauge('infiniband_port_lmc', PORT, 'LID mask control: the port answers 2^LMC consecutive LIDs.'),
  capabilityMask: gauge(
    'infiniband_port_capability_mask',
    PORT,
    'PortInfo CapabilityMask from ports/<n>/cap_mask (bit 0x2 IsSM, 0x4000 extended speeds, 0x10000 CM).',
  ),
  isSm: gauge('infiniband_port_is_sm', PORT, '1 when a subnet manager runs on this port (CapabilityMask IsSM bit 0x2).'),
  rate: gauge(
    'infiniband_port_rate_bytes_per_second',
    PORT,
    'Nominal link rate from ports/<n>/rate (Gb/s x 1e9 / 8, as node_exporter). Absent while the physical link is down.',
  ),
  dataRate: gauge(
    'infiniband_port_data_rate_bytes_per_second',
    PORT,
    'Usable data rate after line encoding (8b/10b up to QDR, 64b/66b from FDR10): width x per-lane data rate. Absent while the physical link is down.',
  ),
  widthLanes: gauge(
    'infiniband_port_link_width_lanes',
    PORT,
    'Active link width in lanes (1, 2, 4, 8 or 12). Absent while the physical link is down.',
  ),
  laneRate: gauge(
    'infiniband_port_lane_rate_bytes_per_second',
    PORT,
    'Nominal rate of one lane at the active speed (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s). Absent while the physical link is down.',
  ),
  widthExpected: gauge(
    'infiniband_port_link_width_expected_lanes',
    PORT,
    "Width the link should run at: from the config file's expectations, else the best width both link ends have enabled (smpquery). Absent when unknown.",
  ),
  laneRateExpected: gauge(
    'infiniband_port_lane_rate_expected_bytes_per_second',
    PORT,
    "Nominal lane rate the link should run at: from the config file's expectations, else the best speed both ends have enabled (smpquery). Absent when unknown.",
  ),
  degraded: gauge(
    'infiniband_port_link_degraded',
    [...PORT, 'reason'],
    '1 when the link trained below its expected width (reason="width") or speed (reason="speed"): a damaged cable or port. Present while the link is up and an expectation exists.',
  ),
  pmaSaturated: gauge(
    'infiniband_port_pma_saturated',
    [...PORT, 'counter'],
    'Present (value 1) only while a fixed-width PMA counter sits at its maximum: it no longer counts, new errors are invisible until it is reset (perfquery -R). counter="peer_<name>" is the link peer\'s counter.',
  ),
  hwStat: counter(
    'infiniband_port_hw_stat_total',
    [...PORT, 'counter'],
    'Driver hardware counter from ports/<n>/hw_counters/<counter> (e.g. mlx5 out_of_buffer, local_ack_timeout_err, np_cnp_sent).',
  ),
} as const;

export const PMA_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.map((c) => [c.name, counter(`infiniband_port_${c.name}_total`, PORT, c.help)]),
);

export const FAMILIES: readonly MetricSpec[] = [
  ...Object.values(DEVICE_METRICS),
  ...Object.values(PORT_METRICS).filter((spec) => spec !== PORT_METRICS.pmaSaturated && spec !== PORT_METRICS.hwStat),
  ...PMA_COUNTER_METRICS.values(),
  PORT_METRICS.pmaSaturated,
  PORT_METRICS.hwStat,
];

const bit = (flag: boolean): number => (flag ? 1 : 0);

/** What a port should run at: the config file's expectation, else what smpquery found both ends enable. */
export function expectationOf(snapshot: Snapshot, key: string): LinkExpectation | undefined {
  return SYSFS_PART.of(snapshot)?.configured.get(key) ?? peerExpectation(SMPQUERY_PART.of(snapshot)?.get(key));
}

/** A port's PMA counters: sysfs's, and those perfquery read where sysfs has none. */
export function countersOf(snapshot: Snapshot, device: string, port: Port): readonly PortCounter[] {
  const extra = PERFQUERY_PART.of(snapshot)?.get(portKey(device, port.port))?.counters ?? [];
  if (extra.length === 0) return port.counters;
  const present = new Set(port.counters.map((c) => c.name));
  return [...port.counters, ...extra.filter((c) => !present.has(c.name))];
}

export function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer, settings: Settings): void {
  const samples = new Samples();
  const portStateSeries = settings.get(PORT_STATE_SERIES);
  const stateChanges = SYSFS_PART.of(snapshot)?.stateChanges;
  const pma = PERFQUERY_PART.of(snapshot);
  for (const device of snapshot.devices) {
    samples.add(
      DEVICE_METRICS.deviceInfo,
      {
        device: device.name,
        node_type: device.nodeType ?? '',
        node_guid: device.nodeGuid ?? '',
        sys_image_guid: device.sysImageGuid ?? '',
        firmware_version: device.firmwareVersion ?? '',
        hca_type: device.hcaType ?? '',
        board_id: device.boardId ?? '',
        hw_rev: device.hwRev ?? '',
        node_desc: device.nodeDesc ?? '',
      },
      1,
    );

    const deviceLabels = STABLE.one('device', device.name);
    for (const port of device.ports) {
      const key = portKey(device.name, port.port);
      const id = STABLE.with(deviceLabels, 'port', String(port.port));
      const linkUp = physicalLinkIsUp(port.physicalState?.id);
      // Width and speed of a port whose physical link is down are leftovers (mlx5 reports 4X QDR).
      const showRate = linkUp || port.physicalState === undefined;
      const width = showRate ? port.width : undefined;
      const speed = showRate ? port.speed : undefined;
      samples.add(
        PORT_METRICS.portInfo,
        { ...id, link_layer: port.linkLayer ?? '', port_guid: port.portGuid ?? '', width: formatWidth(width), speed: speed ?? '' },
        1,
      );
      if (port.state) {
        samples.add(PORT_METRICS.stateId, id, port.state.id);
        if (portStateSeries)
          PORT_STATES.forEach((name, index) =>
            samples.add(PORT_METRICS.state, STABLE.with(id, 'state', name), bit(index === port.state!.id)),
          );
      }
      if (port.physicalState) {
        samples.add(PORT_METRICS.physicalStateId, id, port.physicalState.id);
        if (portStateSeries)
          PHYSICAL_STATES.forEach((name, index) =>
            samples.add(PORT_METRICS.physicalState, STABLE.with(id, 'state', name), bit(index + 1 === port.physicalState!.id)),
          );
      }
      samples.add(PORT_METRICS.stateChanges, id, stateChanges?.get(key));
      samples.add(PORT_METRICS.lid, id, port.lid);
      samples.add(PORT_METRICS.smLid, id, port.smLid);
      samples.add(PORT_METRICS.smSl, id, port.smSl);
      samples.add(PORT_METRICS.lmc, id, port.lmc);
      samples.add(PORT_METRICS.capabilityMask, id, port.capabilityMask);
      samples.add(PORT_METRICS.isSm, id, port.capabilityMask === undefined ? undefined : bit((port.capabilityMask & 0x2) !== 0));
      if (showRate) {
        samples.add(PORT_METRICS.rate, id, port.rateGbps === undefined ? undefined : port.rateGbps * BYTES_PER_GIGABIT);
        samples.add(PORT_METRICS.widthLanes, id, width);
        if (speed !== undefined) {
          samples.add(PORT_METRICS.laneRate, id, LANE_RATES[speed].nominalGbps * BYTES_PER_GIGABIT);
          if (width !== undefined) samples.add(PORT_METRICS.dataRate, id, width * LANE_RATES[speed].dataGbps * BYTES_PER_GIGABIT);
        }
      }
      const expectation = expectationOf(snapshot, key);
      if (expectation) {
        samples.add(PORT_METRICS.widthExpected, id, expectation.width);
        samples.add(PORT_METRICS.laneRateExpected, id, expectation.speed && LANE_RATES[expectation.speed].nominalGbps * BYTES_PER_GIGABIT);
        const assessment = assessLink(port, expectation);
        if (assessment.widthDegraded !== undefined)
          samples.add(PORT_METRICS.degraded, STABLE.with(id, 'reason', 'width'), bit(assessment.widthDegraded));
        if (assessment.speedDegraded !== undefined)
          samples.add(PORT_METRICS.degraded, STABLE.with(id, 'reason', 'speed'), bit(assessment.speedDegraded));
      }
      // Indexed loops and forEach: V8's interpreter, which is all that runs on a compute node
      // (startup/v8-flags.ts), allocates a result object per step of for…of (and an entry array per
      // step over a Map).
      const counters = pma === undefined ? port.counters : countersOf(snapshot, device.name, port);
      for (let i = 0; i < counters.length; i++) {
        const value = counters[i]!;
        samples.add(PMA_COUNTER_METRICS.get(value.name)!, id, value.value);
        if (value.saturated) samples.add(PORT_METRICS.pmaSaturated, STABLE.with(id, 'counter', value.name), 1);
      }
      addPeerSaturation(samples, id, pma?.get(key)?.peerCounters);
      port.hwCounters.forEach((value, name) => samples.add(PORT_METRICS.hwStat, STABLE.with(id, 'counter', name), value));
    }
  }
  samples.writeTo(FAMILIES, out);
}

/** The link peer's saturated counters, as counter="peer_<name>" (the family is the port's). */
function addPeerSaturation(samples: Samples, id: Labels, peerCounters: readonly PortCounter[] | undefined): void {
  if (!peerCounters) return;
  for (const value of peerCounters)
    if (value.saturated) samples.add(PORT_METRICS.pmaSaturated, STABLE.with(id, 'counter', `peer_${value.name}`), 1);
}

// ---- findings -----------------------------------------------------------------------------
