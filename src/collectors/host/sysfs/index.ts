// The sysfs collector: /sys/class/infiniband/<device>/… — every device, its identity and ports,
// their states, rates and PMA and hardware counters. Its reading is the host's inventory
// (Snapshot.devices) that every other host collector reads about; it writes the device and port
// families, from its own reading and what the diag collectors added to a port (the expected rate
// smpquery found, the counters perfquery read where sysfs has none), and judges each port.
//
// How often each file is read (docs/benchmarks.md, "What changed"):
//   - `state` and `phys_state` of every port: every --collection.interval (sample), so that flaps
//     between scrapes are counted in infiniband_port_state_changes_total;
//   - everything else that changes (rate, LIDs, PMA and hw counters): in a full reading, which runs
//     when a scrape wants data older than one interval, or after a sample saw a port change state
//     or the device list change;
//   - device identity and port layout (node type, GUIDs, firmware, board, description, link layer,
//     port GUID, SM SL, LMC, capability mask, which counter files exist): with the first full
//     reading of a device, then again when one of its ports changed state, when the last reading
//     of it had errors, and every IDENTITY_MAX_AGE_MS.
import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { BOOLEAN, REGEX, flag, optionalFlag, type Section, type Settings } from '../../../config/flags.js';
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../../../exposition/metric-spec.js';
import { STABLE, Samples, type Labels } from '../../../exposition/samples.js';
import { ExpectationRules, type ExpectationRule } from '../../../model/expectations.js';
import type { LinkExpectation } from '../../../model/link-rate.js';
import { isInfinibandPort, portKey, portName, type Device, type Port, type PortCounter } from '../../../model/host.js';
import { assessLink } from '../../../model/link-degradation.js';
import { BYTES_PER_GIGABIT, LANE_RATES, formatWidth } from '../../../model/link-rate.js';
import { PMA_COUNTERS } from '../../../model/pma-counters.js';
import { PHYSICAL_STATES, PORT_STATES, PORT_STATE_ACTIVE, PORT_STATE_INIT, physicalLinkIsUp } from '../../../model/port-state.js';
import { plural, type Finding } from '../../../model/finding.js';
import type { ItemError, Snapshot } from '../../../model/snapshot.js';
import type { DeviceFilter } from '../../../sources/device-filter.js';
import { INFINIBAND_CLASS, listInfinibandDevices, readDevice, readDeviceIdentity, readPortStates, type DeviceIdentity } from '../../../sources/infiniband.js';
import type { SysfsFiles } from '../../../sources/sysfs-files.js';
import { defineCollector, type Collector, type CollectorContext, type Reader, type Reading } from '../../../collection/collector.js';
import { bitErrorRateFindings } from './findings.js';
import { EXPECTATIONS_SECTION } from '../../expectation-sections.js';
import { COLLECTION_INTERVAL, HOST_READING, SYSFS_PATH, checkSysfsRoot, readUnder, sysfsFiles } from '../host-reading.js';
import { IPOIB } from '../ipoib.js';
import { PERFQUERY } from '../../diag/perfquery.js';
import { SMPQUERY, peerExpectation } from '../../diag/smpquery.js';

/** Identity and port layout are read again at least this often (firmware updates, node_desc). */
export const IDENTITY_MAX_AGE_MS = 300_000;

export const DEVICE_INCLUDE = optionalFlag(REGEX, { name: 'device.include', key: 'devices.include', help: 'Only devices whose name matches this regular expression.', check: true });
export const DEVICE_EXCLUDE = optionalFlag(REGEX, { name: 'device.exclude', key: 'devices.exclude', help: 'Skip devices whose name matches this regular expression (never read).', check: true });
export const PORT_STATE_SERIES = flag(BOOLEAN, {
  name: 'metrics.port-state-series',
  key: 'metrics.port_state_series',
  default: false,
  help: 'Also serve infiniband_port_state{state} and infiniband_port_physical_state{state}, one series per state name (13 per port; the _id gauges carry the same).',
});

/** `expectations` in the config file: what each host link should run at, first match wins. */
export const EXPECTATIONS: Section<readonly ExpectationRule[]> = EXPECTATIONS_SECTION;

/** What the sysfs collector keeps beside the devices. */
export interface SysfsPart {
  /** Logical state changes seen since start, by `portKey`. */
  stateChanges: ReadonlyMap<string, number>;
  /** What the config file's expectations say each port should run at, by `portKey`. */
  configured: ReadonlyMap<string, LinkExpectation>;
  /** When each port's link came up (ms), where the exporter saw it come up: the bits it carried since. */
  linkUpAt: ReadonlyMap<string, number>;
}

interface KnownIdentity {
  identity: DeviceIdentity;
  readAt: number;
  /** A port changed state since it was read, or it was read with errors: read it again. */
  stale: boolean;
  /** Read in the full reading under way. */
  readNow: boolean;
}

class SysfsReader implements Reader<SysfsPart> {
  private readonly files: SysfsFiles;
  private readonly filter: DeviceFilter;
  private readonly rules: ExpectationRules;
  private readonly identities = new Map<string, KnownIdentity>();
  private readonly lastState = new Map<string, number>();
  private readonly stateChanges = new Map<string, number>();
  private readonly linkUpAt = new Map<string, number>();
  /** The device names of the last reading, to tell when devices come or go. */
  private known: readonly string[] | undefined;

  constructor(private readonly context: CollectorContext) {
    const { settings } = context;
    this.files = sysfsFiles(context);
    this.filter = { include: settings.get(DEVICE_INCLUDE), exclude: settings.get(DEVICE_EXCLUDE) };
    this.rules = new ExpectationRules(settings.section(EXPECTATIONS));
  }

  async read(_snapshot: Snapshot, signal: AbortSignal): Promise<Reading<SysfsPart>> {
    const { files } = this;
    files.beginPass();
    const listing = listInfinibandDevices(files, this.filter);
    const devices: Device[] = [];
    const errors: ItemError[] = [];
    for (const name of [...this.identities.keys()]) if (!listing.names.includes(name)) this.forgetDevice(name);
    for (const [index, name] of listing.names.entries()) {
      // Reads are synchronous: the event loop gets a turn between devices.
      if (index > 0) await yieldToEventLoop();
      if (signal.aborted) return {};
      const identityErrors: ItemError[] = [];
      let known = this.knownIdentity(name, identityErrors);
      let reading = known && readDevice(files, known.identity);
      // Errors against a layout read in an earlier pass may only say that the layout changed (a
      // counters/ directory that is a file now): read the identity again and judge against it.
      if (known && reading && reading.errors.length > 0 && !known.readNow) {
        known.stale = true;
        known = this.knownIdentity(name, identityErrors);
        reading = known && readDevice(files, known.identity);
      }
      errors.push(...identityErrors);
      if (!known || !reading) continue;
      known.readNow = false;
      errors.push(...reading.errors);
      if (!reading.device) {
        this.forgetDevice(name);
        continue;
      }
      if (reading.errors.length > 0) known.stale = true;
      devices.push(reading.device);
    }
    this.countStateChanges(devices);
    if (listing.failure === undefined) this.announce(listing.names);
    const configured = new Map<string, LinkExpectation>();
    for (const device of devices) {
      for (const port of device.ports) {
        const expectation = this.rules.forPort(device.name, port.port);
        if (expectation) configured.set(portKey(device.name, port.port), expectation);
      }
    }
    return {
      devices,
      part: { stateChanges: new Map(this.stateChanges), configured, linkUpAt: new Map(this.linkUpAt) },
      errors,
      // A device that went away is neither failing nor back.
      read: readUnder(INFINIBAND_CLASS, new Set(devices.map((device) => device.name))),
      ...(listing.failure !== undefined && { failure: listing.failure }),
    };
  }

  /**
   * One line when the devices are first found, and one whenever they change: by a full reading or a
   * sample, whichever sees it first.
   */
  private announce(names: readonly string[]): void {
    const before = this.known;
    this.known = names;
    const { logger } = this.context;
    if (before === undefined) {
      if (names.length === 0) logger.info({ path: this.files.resolve(INFINIBAND_CLASS) }, 'no InfiniBand devices found; serving the exporter\'s own metrics only');
      else logger.info({ devices: names }, `found ${plural(names.length, 'InfiniBand device')}`);
      return;
    }
    const appeared = names.filter((name) => !before.includes(name));
    const vanished = before.filter((name) => !names.includes(name));
    if (appeared.length > 0) logger.info({ devices: appeared }, `InfiniBand ${appeared.length === 1 ? 'device appeared' : 'devices appeared'}: ${appeared.join(', ')}`);
    if (vanished.length > 0) logger.warn({ devices: vanished }, `InfiniBand ${vanished.length === 1 ? 'device disappeared' : 'devices disappeared'}: ${vanished.join(', ')}`);
  }

  /** The identity of `name`, read again when it is due; undefined when the device vanished. */
  private knownIdentity(name: string, errors: ItemError[]): KnownIdentity | undefined {
    const known = this.identities.get(name);
    if (known && !known.stale && this.context.now() - known.readAt < IDENTITY_MAX_AGE_MS) return known;
    const reading = readDeviceIdentity(this.files, name);
    errors.push(...reading.errors);
    if (!reading.identity) {
      this.forgetDevice(name);
      return undefined;
    }
    const fresh: KnownIdentity = { identity: reading.identity, readAt: this.context.now(), stale: reading.errors.length > 0, readNow: true };
    this.identities.set(name, fresh);
    return fresh;
  }

  /** A device that went away: its identity, and the files kept open for it. */
  private forgetDevice(name: string): void {
    this.identities.delete(name);
    this.files.release(`${INFINIBAND_CLASS}/${name}`);
  }

  /**
   * The state of every known port, between full readings: counts logical state changes. A change,
   * or a device that appeared or vanished, makes the last reading out of date.
   */
  sample(): boolean {
    const { files } = this;
    files.beginPass();
    const listing = listInfinibandDevices(files, this.filter);
    const known = this.known ?? [];
    let outdated = listing.names.length !== known.length || listing.names.some((name, i) => name !== known[i]);
    if (listing.failure === undefined && this.known !== undefined) this.announce(listing.names);
    for (const name of listing.names) {
      const entry = this.identities.get(name);
      if (!entry) continue;
      for (const sample of readPortStates(files, entry.identity)) {
        const key = portKey(sample.device, sample.port);
        const state = sample.state?.id;
        const before = this.lastState.get(key);
        if (state === undefined || before === undefined || state === before) continue;
        this.lastState.set(key, state);
        this.stateChanges.set(key, (this.stateChanges.get(key) ?? 0) + 1);
        this.linkCameUp(key, state);
        entry.stale = true;
        outdated = true;
      }
    }
    return outdated;
  }

  private countStateChanges(devices: readonly Device[]): void {
    const present = new Set<string>();
    for (const device of devices) {
      for (const port of device.ports) {
        const key = portKey(device.name, port.port);
        present.add(key);
        const state = port.state?.id;
        if (state === undefined) continue;
        const before = this.lastState.get(key);
        if (!this.stateChanges.has(key)) this.stateChanges.set(key, 0);
        if (before !== undefined && before !== state) {
          this.stateChanges.set(key, this.stateChanges.get(key)! + 1);
          this.linkCameUp(key, state);
          // The subnet manager may have set the port up differently (SM SL, LMC, capabilities).
          const known = this.identities.get(device.name);
          if (known) known.stale = true;
        }
        this.lastState.set(key, state);
      }
    }
    // A port that vanished starts again from 0 if it comes back: its series is new to Prometheus too.
    for (const key of [...this.lastState.keys()]) if (!present.has(key)) this.lastState.delete(key);
    for (const key of [...this.stateChanges.keys()]) if (!present.has(key)) this.stateChanges.delete(key);
    for (const key of [...this.linkUpAt.keys()]) if (!present.has(key)) this.linkUpAt.delete(key);
  }

  /** A port that became ACTIVE came up now; one that left ACTIVE is no longer up. */
  private linkCameUp(key: string, state: number): void {
    if (state === PORT_STATE_ACTIVE) this.linkUpAt.set(key, this.context.now());
    else this.linkUpAt.delete(key);
  }

  close(): void {
    this.files.close();
  }
}

// ---- metrics ------------------------------------------------------------------------------

const PORT = ['device', 'port'] as const;

export const DEVICE_METRICS = {
  deviceInfo: gauge('infiniband_device_info', ['device', 'node_type', 'node_guid', 'sys_image_guid', 'firmware_version', 'hca_type', 'board_id', 'hw_rev', 'node_desc'],
    'InfiniBand device identity from /sys/class/infiniband/<device> (value always 1; empty label = file absent). GUIDs as 0x + 16 hex digits.'),
} as const;

export const PORT_METRICS = {
  portInfo: gauge('infiniband_port_info', [...PORT, 'link_layer', 'port_guid', 'width', 'speed'],
    'Port identity (value always 1): link layer (InfiniBand, Ethernet = RoCE), port GUID from GID 0, active width and speed (empty while the physical link is down).'),
  stateId: gauge('infiniband_port_state_id', PORT,
    'Logical port state from ports/<n>/state: 0 NOP, 1 DOWN, 2 INIT (link up but no subnet manager configured it), 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.'),
  state: gauge('infiniband_port_state', [...PORT, 'state'],
    'Logical port state as one series per state name, 1 for the current state, else 0 (only with --metrics.port-state-series; infiniband_port_state_id carries the same).'),
  physicalStateId: gauge('infiniband_port_physical_state_id', PORT,
    'Physical link state from ports/<n>/phys_state: 1 Sleep, 2 Polling (no cable or no peer), 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.'),
  physicalState: gauge('infiniband_port_physical_state', [...PORT, 'state'],
    'Physical link state as one series per state name, 1 for the current state, else 0 (only with --metrics.port-state-series; infiniband_port_physical_state_id carries the same).'),
  stateChanges: counter('infiniband_port_state_changes_total', PORT,
    'Logical state changes the exporter observed since it started (sampled every collection interval): flaps between scrapes are counted.'),
  lid: gauge('infiniband_port_lid', PORT, 'Base LID assigned to the port by the subnet manager (0 = not assigned).'),
  smLid: gauge('infiniband_port_sm_lid', PORT,
    'LID of the master subnet manager as the port last heard it (0 = no subnet manager ever configured the port; stays set after the SM dies).'),
  smSl: gauge('infiniband_port_sm_sl', PORT, 'Service level used to reach the subnet manager.'),
  lmc: gauge('infiniband_port_lmc', PORT, 'LID mask control: the port answers 2^LMC consecutive LIDs.'),
  capabilityMask: gauge('infiniband_port_capability_mask', PORT, 'PortInfo CapabilityMask from ports/<n>/cap_mask (bit 0x2 IsSM, 0x4000 extended speeds, 0x10000 CM).'),
  isSm: gauge('infiniband_port_is_sm', PORT, '1 when a subnet manager runs on this port (CapabilityMask IsSM bit 0x2).'),
  rate: gauge('infiniband_port_rate_bytes_per_second', PORT,
    'Nominal link rate from ports/<n>/rate (Gb/s x 1e9 / 8, as node_exporter). Absent while the physical link is down.'),
  dataRate: gauge('infiniband_port_data_rate_bytes_per_second', PORT,
    'Usable data rate after line encoding (8b/10b up to QDR, 64b/66b from FDR10): width x per-lane data rate. Absent while the physical link is down.'),
  widthLanes: gauge('infiniband_port_link_width_lanes', PORT, 'Active link width in lanes (1, 2, 4, 8 or 12). Absent while the physical link is down.'),
  laneRate: gauge('infiniband_port_lane_rate_bytes_per_second', PORT,
    'Nominal rate of one lane at the active speed (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s). Absent while the physical link is down.'),
  widthExpected: gauge('infiniband_port_link_width_expected_lanes', PORT,
    'Width the link should run at: from the config file\'s expectations, else the best width both link ends have enabled (smpquery). Absent when unknown.'),
  laneRateExpected: gauge('infiniband_port_lane_rate_expected_bytes_per_second', PORT,
    'Nominal lane rate the link should run at: from the config file\'s expectations, else the best speed both ends have enabled (smpquery). Absent when unknown.'),
  degraded: gauge('infiniband_port_link_degraded', [...PORT, 'reason'],
    '1 when the link trained below its expected width (reason="width") or speed (reason="speed"): a damaged cable or port. Present while the link is up and an expectation exists.'),
  pmaSaturated: gauge('infiniband_port_pma_saturated', [...PORT, 'counter'],
    'Present (value 1) only while a fixed-width PMA counter sits at its maximum: it no longer counts, new errors are invisible until it is reset (perfquery -R). counter="peer_<name>" is the link peer\'s counter.'),
  hwStat: counter('infiniband_port_hw_stat_total', [...PORT, 'counter'],
    'Driver hardware counter from ports/<n>/hw_counters/<counter> (e.g. mlx5 out_of_buffer, local_ack_timeout_err, np_cnp_sent).'),
} as const;

export const PMA_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.map((c) => [c.name, counter(`infiniband_port_${c.name}_total`, PORT, c.help)]),
);

const FAMILIES: readonly MetricSpec[] = [
  ...Object.values(DEVICE_METRICS),
  ...Object.values(PORT_METRICS).filter((spec) => spec !== PORT_METRICS.pmaSaturated && spec !== PORT_METRICS.hwStat),
  ...PMA_COUNTER_METRICS.values(),
  PORT_METRICS.pmaSaturated,
  PORT_METRICS.hwStat,
];

const bit = (flag: boolean): number => (flag ? 1 : 0);

/** What a port should run at: the config file's expectation, else what smpquery found both ends enable. */
export function expectationOf(snapshot: Snapshot, key: string): LinkExpectation | undefined {
  return SYSFS.of(snapshot)?.configured.get(key) ?? peerExpectation(SMPQUERY.of(snapshot)?.get(key));
}

/** A port's PMA counters: sysfs's, and those perfquery read where sysfs has none. */
export function countersOf(snapshot: Snapshot, device: string, port: Port): readonly PortCounter[] {
  const extra = PERFQUERY.of(snapshot)?.get(portKey(device, port.port))?.counters ?? [];
  if (extra.length === 0) return port.counters;
  const present = new Set(port.counters.map((c) => c.name));
  return [...port.counters, ...extra.filter((c) => !present.has(c.name))];
}

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer, settings: Settings): void {
  const samples = new Samples();
  const portStateSeries = settings.get(PORT_STATE_SERIES);
  const stateChanges = SYSFS.of(snapshot)?.stateChanges;
  const pma = PERFQUERY.of(snapshot);
  for (const device of snapshot.devices) {
    samples.add(DEVICE_METRICS.deviceInfo, {
      device: device.name,
      node_type: device.nodeType ?? '',
      node_guid: device.nodeGuid ?? '',
      sys_image_guid: device.sysImageGuid ?? '',
      firmware_version: device.firmwareVersion ?? '',
      hca_type: device.hcaType ?? '',
      board_id: device.boardId ?? '',
      hw_rev: device.hwRev ?? '',
      node_desc: device.nodeDesc ?? '',
    }, 1);

    const deviceLabels = STABLE.one('device', device.name);
    for (const port of device.ports) {
      const key = portKey(device.name, port.port);
      const id = STABLE.with(deviceLabels, 'port', String(port.port));
      const linkUp = physicalLinkIsUp(port.physicalState?.id);
      // Width and speed of a port whose physical link is down are leftovers (mlx5 reports 4X QDR).
      const showRate = linkUp || port.physicalState === undefined;
      const width = showRate ? port.width : undefined;
      const speed = showRate ? port.speed : undefined;
      samples.add(PORT_METRICS.portInfo, { ...id, link_layer: port.linkLayer ?? '', port_guid: port.portGuid ?? '', width: formatWidth(width), speed: speed ?? '' }, 1);
      if (port.state) {
        samples.add(PORT_METRICS.stateId, id, port.state.id);
        if (portStateSeries) PORT_STATES.forEach((name, index) => samples.add(PORT_METRICS.state, STABLE.with(id, 'state', name), bit(index === port.state!.id)));
      }
      if (port.physicalState) {
        samples.add(PORT_METRICS.physicalStateId, id, port.physicalState.id);
        if (portStateSeries) PHYSICAL_STATES.forEach((name, index) => samples.add(PORT_METRICS.physicalState, STABLE.with(id, 'state', name), bit(index + 1 === port.physicalState!.id)));
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
        if (assessment.widthDegraded !== undefined) samples.add(PORT_METRICS.degraded, STABLE.with(id, 'reason', 'width'), bit(assessment.widthDegraded));
        if (assessment.speedDegraded !== undefined) samples.add(PORT_METRICS.degraded, STABLE.with(id, 'reason', 'speed'), bit(assessment.speedDegraded));
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
  for (const value of peerCounters) if (value.saturated) samples.add(PORT_METRICS.pmaSaturated, STABLE.with(id, 'counter', `peer_${value.name}`), 1);
}

// ---- findings -----------------------------------------------------------------------------

export const START_OPENSM = 'start a subnet manager on one host of this fabric: systemctl enable --now opensm (package opensm)';
export const SM_MEANING = 'A port without a subnet manager gets no LID and carries no traffic; IPoIB on it has no carrier.';

/** A linked InfiniBand port that no subnet manager configured: INIT, or SM LID 0 (sysfs alone tells). */
export function unconfiguredPortFindings(device: Device, port: Port): Finding[] {
  if (!isInfinibandPort(port) || !physicalLinkIsUp(port.physicalState?.id)) return [];
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  if (port.state?.id === PORT_STATE_INIT) {
    return [{
      condition: 'port-stuck-init',
      severity: 'critical',
      subject,
      summary: `port ${name} is INIT with its link up (LinkUp, SM LID ${port.smLid ?? 'unknown'}): no subnet manager has configured it`,
      meaning: `The cable is fine and the link trained, but no subnet manager has brought the port to ACTIVE. ${SM_MEANING} INIT is normal for a few seconds after the link comes up; a port still INIT a minute later is stuck.`,
      cause: 'No subnet manager (opensm, or a managed switch\'s) runs on this fabric, it died before this port came up, or it cannot reach this port.',
      remedy: START_OPENSM,
      runbook: 'infinibandportstuckinitializing',
      alert: 'InfiniBandPortStuckInitializing',
    }];
  }
  if (port.smLid === 0) {
    return [{
      condition: 'no-sm-lid',
      severity: 'critical',
      subject,
      summary: `port ${name} has a link but SM LID 0: no subnet manager has ever configured it`,
      meaning: SM_MEANING,
      cause: 'No subnet manager runs on this fabric, or it cannot reach this port.',
      remedy: START_OPENSM,
      runbook: 'infinibandsubnetmanagerunreachable',
      alert: 'InfiniBandSubnetManagerUnreachable',
    }];
  }
  return [];
}

function physicalStateName(port: Port): string {
  const id = port.physicalState?.id;
  return port.physicalState?.name ?? (id === undefined ? 'unknown' : `state ${id}`);
}

/** Signs in one snapshot that a port without a link was in use: then its loss matters. */
function usageEvidence(snapshot: Snapshot, device: Device, port: Port): string[] {
  const key = portKey(device.name, port.port);
  const evidence: string[] = [];
  const downed = port.counters.find((value) => value.name === 'link_downed')?.value ?? 0;
  if (downed > 0) evidence.push(`its link went down ${plural(downed, 'time')} since the counters were reset`);
  const interfaces = (IPOIB.of(snapshot) ?? []).filter((iface) => iface.device === device.name && iface.port === port.port).map((iface) => iface.name);
  if (interfaces.length > 0) evidence.push(`IPoIB ${interfaces.join(', ')} ${interfaces.length === 1 ? 'runs' : 'run'} on it`);
  if (SYSFS.of(snapshot)?.configured.has(key)) evidence.push('the config file expects a link on it');
  if ((SYSFS.of(snapshot)?.stateChanges.get(key) ?? 0) > 0) evidence.push('the exporter saw its state change');
  return evidence;
}

function linkDownFindings(snapshot: Snapshot, device: Device, port: Port, hostHasInfinibandLink: boolean): Finding[] {
  const id = port.physicalState?.id;
  if (id === undefined || id < 1 || id > 4) return [];
  const name = portName(device.name, port.port);
  const phys = physicalStateName(port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const disabled = id === 3;
  const evidence = usageEvidence(snapshot, device, port);
  const alone = isInfinibandPort(port) && !hostHasInfinibandLink;
  const cause = disabled
    ? 'The port, or the switch port at the other end, was disabled (ibportstate … disable, or the Ethernet interface of a RoCE port is down).'
    : 'The cable is pulled or broken, the transceiver failed or is unseated, or the switch, switch port or peer host at the other end is down.';
  const remedy = disabled
    ? 'enable the switch port: ibportstate <switch lid> <switch port> enable (find it with iblinkinfo); for RoCE, ip link set <interface> up'
    : 'reseat the cable at both ends (the QSFP must click in), then try another cable or transceiver, and check the switch port is up';
  if (evidence.length > 0 || alone) {
    const why = alone ? 'no port of this host has an InfiniBand link' : evidence.join('; ');
    return [{
      condition: 'link-down',
      severity: 'critical',
      subject,
      summary: `port ${name} has no link (${phys}): ${disabled ? 'it is disabled' : 'cable pulled or broken, or the peer is down'} (${why})`,
      meaning: 'The port carries nothing: jobs and IPoIB traffic through it fail.',
      cause,
      remedy,
      runbook: 'infinibandportlinkdown',
      alert: 'InfiniBandPortLinkDown',
    }];
  }
  return [{
    condition: 'port-without-link',
    severity: 'info',
    subject,
    summary: `port ${name} has no link (${phys}): no cable, a pulled or broken cable, or the peer is down; nothing shows it was in use (no link-down count, IPoIB or expectation), so it may be a spare port`,
    meaning: 'A spare port is normal, and other ports of this host have links; a port that should carry traffic carries none.',
    cause,
    remedy: `if port ${name} should be cabled: ${remedy}; otherwise nothing to do`,
    runbook: 'infinibandportlinkdown',
    alert: undefined,
  }];
}

function expectedFrom(expectation: LinkExpectation): string {
  return expectation.source === 'config' ? 'the config file' : 'the best both ends have enabled';
}

function degradationFindings(snapshot: Snapshot, device: Device, port: Port): Finding[] {
  const expectation = expectationOf(snapshot, portKey(device.name, port.port));
  const { widthDegraded, speedDegraded } = assessLink(port, expectation);
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const planned = expectation?.source === 'config' ? ' If the lower value is intended, say so in the config file\'s expectations.' : '';
  const findings: Finding[] = [];
  if (widthDegraded && expectation?.width !== undefined && port.width !== undefined) {
    findings.push({
      condition: 'link-width-degraded',
      severity: 'warning',
      subject,
      summary: `port ${name} runs at ${formatWidth(port.width)}, expected ${formatWidth(expectation.width)} (${expectedFrom(expectation)}): lanes are lost, it moves ${port.width}/${expectation.width} of the bandwidth it should`,
      meaning: `The link trained on fewer lanes than it should.${planned}`,
      cause: 'A damaged cable, a dirty or damaged connector, a failing transceiver or a bent pin in the cage.',
      remedy: 'reseat the cable at both ends and clean the optics; replace the cable or transceiver if the link trains narrow again',
      runbook: 'infinibandlinkwidthdegraded',
      alert: 'InfiniBandLinkWidthDegraded',
    });
  }
  if (speedDegraded && expectation?.speed !== undefined && port.speed !== undefined) {
    findings.push({
      condition: 'link-speed-degraded',
      severity: 'warning',
      subject,
      summary: `port ${name} runs at ${port.speed} (${LANE_RATES[port.speed].nominalGbps} Gb/s per lane), expected ${expectation.speed} (${expectedFrom(expectation)}): the link trained at a lower speed`,
      meaning: `Every lane runs slower than it should.${planned}`,
      cause: 'A cable not rated for the speed, a marginal cable, a failing transceiver, old firmware at one end, or a speed disabled on the switch port.',
      remedy: 'use a cable rated for the speed: reseat it, then replace the cable or transceiver; compare the firmware with a healthy host',
      runbook: 'infinibandlinkspeeddegraded',
      alert: 'InfiniBandLinkSpeedDegraded',
    });
  }
  return findings;
}

/** Error counters worth telling about: every PMA error counter but transmit_wait (congestion, not errors). */
const ERROR_COUNTER_NAMES: ReadonlySet<string> = new Set(PMA_COUNTERS.filter((c) => c.error && c.name !== 'transmit_wait').map((c) => c.name));

function describeCounters(counters: readonly { name: string; value: number }[]): string {
  // 64-bit values beyond 2^53 are approximate in a float64: said as such.
  return counters.map((c) => `${c.name} ${Number.isSafeInteger(c.value) ? c.value : `≈${c.value.toExponential(3)}`}`).join(', ');
}

function counterFindings(snapshot: Snapshot, device: Device, port: Port): Finding[] {
  const peerCounters = PERFQUERY.of(snapshot)?.get(portKey(device.name, port.port))?.peerCounters ?? [];
  const all: PortCounter[] = [...countersOf(snapshot, device.name, port), ...peerCounters.map((c) => ({ ...c, name: `peer_${c.name}` }))];
  const name = portName(device.name, port.port);
  const subject = { kind: 'port', device: device.name, port: port.port } as const;
  const findings: Finding[] = [];
  const saturated = all.filter((c) => c.saturated);
  if (saturated.length > 0) {
    findings.push({
      condition: 'counter-saturated',
      severity: 'warning',
      subject,
      summary: `port ${name}: ${plural(saturated.length, 'counter')} stuck at ${saturated.length === 1 ? 'its' : 'their'} maximum (${describeCounters(saturated)}): new events are no longer counted`,
      meaning: 'A fixed-width PMA counter at its maximum stops counting: error rates read 0 and the error alerts are blind for it until it is reset. peer_ counters are the switch port\'s.',
      cause: 'Errors accumulated for months without a reset, an error storm, or 32-bit data counters on an adapter or kernel without extended counters.',
      remedy: 'reset the counters: perfquery -R (and perfquery -R <peer lid> <peer port> for peer_ counters); if errors fill them again quickly, fix the link',
      runbook: 'infinibandcountersaturated',
      alert: 'InfiniBandCounterSaturated',
    });
  }
  const errors = all.filter((c) => !c.saturated && c.value > 0 && ERROR_COUNTER_NAMES.has(c.name.replace(/^peer_/, '')));
  if (errors.length > 0) {
    findings.push({
      condition: 'error-counters',
      severity: 'info',
      subject,
      summary: `port ${name} has counted errors since its counters were reset: ${describeCounters(errors)}`,
      meaning: 'A count, not a rate: one look cannot tell whether they still grow. A few from link bring-up are normal; a steady rise means a bad cable, transceiver or port (the InfiniBandPhysicalErrors alert watches the rate). peer_ counters are the switch port\'s.',
      cause: 'Link bring-up, or a dirty, bent or damaged cable or connector, a failing transceiver, a cable too long for the speed.',
      remedy: 'see whether they grow: perfquery; sleep 60; perfquery — if they do, reseat or replace the cable; once fixed, perfquery -R',
      runbook: 'infinibandphysicalerrors',
      alert: undefined,
    });
  }
  return findings;
}

function noDeviceFinding(snapshot: Snapshot): Finding[] {
  const report = snapshot.reports.find((candidate) => candidate.collector === SYSFS.name);
  if (snapshot.devices.length > 0 || !report?.success) return [];
  return [{
    condition: 'no-devices',
    severity: 'critical',
    subject: { kind: 'host' },
    summary: 'no InfiniBand device found (class/infiniband is missing or empty, or the device filters leave nothing)',
    meaning: 'This host cannot use InfiniBand at all: no job needing it can run here.',
    cause: 'The adapter\'s driver is not loaded (mlx5_ib, mlx4_ib, …), the adapter failed or was removed, or --device.include/--device.exclude match no device.',
    remedy: 'see whether the adapter is there (lspci | grep -i -e mellanox -e infiniband), load its driver (modprobe mlx5_ib) and read dmesg',
    runbook: 'no-infiniband-device',
    alert: undefined,
  }];
}

/** The findings of every port, in snapshot order: no subnet manager, link down, degradation, counters. */
function judge(snapshot: Snapshot): Finding[] {
  const hostHasInfinibandLink = snapshot.devices.some((device) => device.ports.some((port) => isInfinibandPort(port) && physicalLinkIsUp(port.physicalState?.id)));
  const findings: Finding[] = [...noDeviceFinding(snapshot)];
  for (const device of snapshot.devices) {
    for (const port of device.ports) {
      findings.push(
        ...unconfiguredPortFindings(device, port),
        ...linkDownFindings(snapshot, device, port, hostHasInfinibandLink),
        ...degradationFindings(snapshot, device, port),
        ...counterFindings(snapshot, device, port),
      );
    }
  }
  const part = SYSFS.of(snapshot);
  const readAt = snapshot.reports.find((report) => report.collector === SYSFS.name)?.finishedAt;
  const upSeconds = (device: string, port: number): number | undefined => {
    const upAt = part?.linkUpAt.get(portKey(device, port));
    return upAt === undefined || readAt === undefined ? undefined : Math.max(1, readAt - upAt / 1000);
  };
  findings.push(...bitErrorRateFindings(snapshot.devices, (key) => PERFQUERY.of(snapshot)?.get(key)?.peerCounters, upSeconds));
  return findings;
}

export const SYSFS: Collector<SysfsPart> = defineCollector({
  name: 'sysfs',
  checks: 'ports, links and counters',
  flags: [SYSFS_PATH, COLLECTION_INTERVAL, DEVICE_INCLUDE, DEVICE_EXCLUDE, PORT_STATE_SERIES],
  sections: [EXPECTATIONS],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  verify: checkSysfsRoot,
  setUp: (context) => new SysfsReader(context),
  metrics: { families: FAMILIES, inputs: [SMPQUERY, PERFQUERY], write: writeMetrics },
  findings: judge,
  failure: {
    consequence: 'what it reads is missing',
    meaning: 'The checks built on this collector could not run: its problems would not show.',
    cause: 'A wrong --path.sysfs, or a driver returning errors.',
  },
});
