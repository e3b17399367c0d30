// Snapshot → exposition text (format 0.0.4), once per snapshot that is scraped. A port that
// vanished from the snapshot has no series in the next text, by construction: the text is written
// from the snapshot's samples alone.
//
// The text is written here rather than through prom-client metric objects: for the same samples
// it is byte for byte what a fresh prom-client registry renders (test/metrics/render-oracle.test.ts
// checks it against prom-client), at a third of the CPU — 8 devices 1.0 against 3.0 ms per
// snapshot, 64 devices 6 against 21 ms — and on a compute node scraped every 15 s that render is a
// large share of all the work the exporter does (docs/benchmarks.md). prom-client still serves the
// process's own metrics.
import type { BuildInfo } from './build-info.js';
import { BYTES_PER_GIGABIT, LANE_RATES, formatWidth } from '../model/link-rate.js';
import { PHYSICAL_STATES, PORT_STATES, physicalLinkIsUp } from '../model/port-state.js';
import { assessLink } from '../model/link-degradation.js';
import { portKey, type DiagPort, type Snapshot } from '../model/snapshot.js';
import {
  DEVICE_METRICS,
  EXPORTER_METRICS,
  IPOIB_METRICS,
  PEER_COUNTER_METRICS,
  PEER_METRICS,
  PMA_COUNTER_METRICS,
  PORT_METRICS,
  SUBNET_MANAGER_METRICS,
  type MetricSpec,
} from './catalog.js';
import { ExpositionBuffer, escapeLabelValue } from '../exposition/buffer.js';

export type Labels = Readonly<Record<string, string>>;

/**
 * Label sets that stay the same object from one snapshot to the next (a port's {device, port}, that
 * plus one more label, a collector's or an interface's): a snapshot allocates no label objects for
 * them.
 */
class StableLabels {
  private readonly roots = new Map<string, Map<string, Labels>>();
  private readonly children = new WeakMap<Labels, Map<string, Map<string, Labels>>>();

  one(name: string, value: string): Labels {
    const byValue = StableLabels.byValue(this.roots, name);
    let labels = byValue.get(value);
    if (!labels) byValue.set(value, (labels = { [name]: value }));
    return labels;
  }

  with(base: Labels, name: string, value: string): Labels {
    let byName = this.children.get(base);
    if (!byName) this.children.set(base, (byName = new Map()));
    const byValue = StableLabels.byValue(byName, name);
    let labels = byValue.get(value);
    if (!labels) byValue.set(value, (labels = { ...base, [name]: value }));
    return labels;
  }

  private static byValue(byName: Map<string, Map<string, Labels>>, name: string): Map<string, Labels> {
    let byValue = byName.get(name);
    if (!byValue) byName.set(name, (byValue = new Map()));
    return byValue;
  }
}

const STABLE = new StableLabels();

const CHUNK_CHARACTERS = 8192;

/**
 * `{name="value",…}` of a label set, formatted once per label object: the stable ones (a port's)
 * once for the life of the process, the others once per render.
 */
const FORMATTED = new WeakMap<Labels, string>();

function formatLabels(labels: Labels): string {
  let body = FORMATTED.get(labels);
  if (body === undefined) {
    const pairs: string[] = [];
    for (const name in labels) pairs.push(`${name}="${escapeLabelValue(labels[name]!)}"`);
    body = pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
    FORMATTED.set(labels, body);
  }
  return body;
}

/** Samples gathered per metric; only metrics with at least one sample are written. */
export class Samples {
  // Two parallel lists per metric rather than a [labels, value] pair per sample: at 170 000 samples
  // (fabric mode) the pairs alone were 11 MB of garbage per render.
  private readonly byMetric = new Map<MetricSpec, { labels: Labels[]; values: number[] }>();

  add(spec: MetricSpec, labels: Labels, value: number | undefined): void {
    if (value === undefined || !Number.isFinite(value)) return;
    let samples = this.byMetric.get(spec);
    if (!samples) this.byMetric.set(spec, (samples = { labels: [], values: [] }));
    samples.labels.push(labels);
    samples.values.push(value);
  }

  /** Every metric's samples, in the order they were added (for prom-client as a test oracle). */
  *entries(): IterableIterator<[MetricSpec, readonly (readonly [Labels, number])[]]> {
    for (const [spec, { labels, values }] of this.byMetric) yield [spec, labels.map((set, i) => [set, values[i]!] as const)];
  }

  /**
   * The exposition text of the metrics of `order` that have samples, in that order, as UTF-8, laid
   * out as prom-client lays out a registry (families apart by an empty line, label order as given,
   * values as JavaScript prints them): byte for byte what a prom-client registry renders for the
   * same samples (test/metrics/render-oracle.test.ts), written straight into one buffer, without a
   * metric object per label set. Empty when no metric has samples.
   */
  encode(order: readonly MetricSpec[]): Buffer {
    const out = new ExpositionBuffer();
    this.writeTo(order, out);
    return out.finish();
  }

  /** The same, written into `out`. */
  writeTo(order: readonly MetricSpec[], out: ExpositionBuffer): void {
    for (let s = 0; s < order.length; s++) {
      const spec = order[s]!;
      const samples = this.byMetric.get(spec);
      if (!samples) continue;
      out.header(spec);
      // Lines are joined into chunks of a few KiB before they are encoded: one UTF-8 write per
      // line was a fifth of the render.
      let chunk = '';
      for (let i = 0; i < samples.values.length; i++) {
        chunk += `${spec.name}${formatLabels(samples.labels[i]!)} ${samples.values[i]}\n`;
        if (chunk.length > CHUNK_CHARACTERS) {
          out.write(chunk);
          chunk = '';
        }
      }
      out.write(chunk);
    }
  }

  /** The same as text. */
  text(order: readonly MetricSpec[]): string {
    return this.encode(order).toString('utf8');
  }
}

const bit = (flag: boolean): number => (flag ? 1 : 0);

export interface RenderOptions {
  /** Also the one-hot infiniband_port_state{state} and infiniband_port_physical_state{state} families. */
  portStateSeries: boolean;
}

export function collectSamples(snapshot: Snapshot, build: BuildInfo, options: RenderOptions): Samples {
  const samples = new Samples();
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
      const id = STABLE.with(deviceLabels, 'port', String(port.port));
      const linkUp = physicalLinkIsUp(port.physicalState?.id);
      // Width and speed of a port whose physical link is down are leftovers (mlx5 reports 4X QDR).
      const showRate = linkUp || port.physicalState === undefined;
      const width = showRate ? port.width : undefined;
      const speed = showRate ? port.speed : undefined;
      samples.add(PORT_METRICS.portInfo, {
        ...id,
        link_layer: port.linkLayer ?? '',
        port_guid: port.portGuid ?? '',
        width: formatWidth(width),
        speed: speed ?? '',
      }, 1);
      if (port.state) {
        samples.add(PORT_METRICS.stateId, id, port.state.id);
        if (options.portStateSeries) {
          PORT_STATES.forEach((name, index) => samples.add(PORT_METRICS.state, STABLE.with(id, 'state', name), bit(index === port.state!.id)));
        }
      }
      if (port.physicalState) {
        samples.add(PORT_METRICS.physicalStateId, id, port.physicalState.id);
        if (options.portStateSeries) {
          PHYSICAL_STATES.forEach((name, index) => samples.add(PORT_METRICS.physicalState, STABLE.with(id, 'state', name), bit(index + 1 === port.physicalState!.id)));
        }
      }
      samples.add(PORT_METRICS.stateChanges, id, snapshot.totals.stateChanges.get(portKey(device.name, port.port)));
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
      const expectation = snapshot.expectations.get(portKey(device.name, port.port));
      if (expectation) {
        samples.add(PORT_METRICS.widthExpected, id, expectation.width);
        samples.add(PORT_METRICS.laneRateExpected, id, expectation.speed && LANE_RATES[expectation.speed].nominalGbps * BYTES_PER_GIGABIT);
        const assessment = assessLink(port, expectation);
        if (assessment.widthDegraded !== undefined) samples.add(PORT_METRICS.degraded, STABLE.with(id, 'reason', 'width'), bit(assessment.widthDegraded));
        if (assessment.speedDegraded !== undefined) samples.add(PORT_METRICS.degraded, STABLE.with(id, 'reason', 'speed'), bit(assessment.speedDegraded));
      }
      // Indexed loops and forEach: V8's interpreter, which is all that runs here (runtime-flags.ts),
      // allocates a result object per step of for…of (and an entry array per step over a Map).
      for (let i = 0; i < port.counters.length; i++) {
        const counter = port.counters[i]!;
        samples.add(PMA_COUNTER_METRICS.get(counter.name)!, id, counter.value);
        if (counter.saturated) samples.add(PORT_METRICS.pmaSaturated, STABLE.with(id, 'counter', counter.name), 1);
      }
      port.hwCounters.forEach((value, name) => samples.add(PORT_METRICS.hwStat, STABLE.with(id, 'counter', name), value));
      addDiagSamples(samples, id, snapshot.diag.get(portKey(device.name, port.port)));
    }
  }

  for (const iface of snapshot.ipoib) {
    samples.add(IPOIB_METRICS.info, {
      interface: iface.name,
      device: iface.device ?? '',
      port: iface.port === undefined ? '' : String(iface.port),
      mode: iface.mode ?? '',
      pkey: iface.pkey ?? '',
      parent: iface.parent ?? '',
    }, 1);
    const labels = STABLE.one('interface', iface.name);
    samples.add(IPOIB_METRICS.mtu, labels, iface.mtu);
    samples.add(IPOIB_METRICS.connectedMode, labels, iface.mode === undefined ? undefined : bit(iface.mode === 'connected'));
    samples.add(IPOIB_METRICS.carrier, labels, iface.carrier);
  }

  samples.add(EXPORTER_METRICS.buildInfo, { version: build.version, revision: build.revision, nodejs_version: build.nodejsVersion }, 1);
  for (const report of snapshot.reports) {
    const labels = STABLE.one('collector', report.collector);
    samples.add(EXPORTER_METRICS.success, labels, bit(report.success));
    samples.add(EXPORTER_METRICS.duration, labels, report.durationSeconds);
    if (report.finishedAt > 0) samples.add(EXPORTER_METRICS.lastCollection, labels, report.finishedAt);
  }
  for (const [collector, count] of snapshot.totals.readErrors) samples.add(EXPORTER_METRICS.readErrors, STABLE.one('collector', collector), count);
  for (const [command, count] of snapshot.totals.commandTimeouts) samples.add(EXPORTER_METRICS.commandTimeouts, STABLE.one('command', command), count);
  return samples;
}

function addDiagSamples(samples: Samples, id: Labels, diag: DiagPort | undefined): void {
  if (!diag) return;
  const peer = diag.peer;
  if (peer) {
    samples.add(PEER_METRICS.info, {
      ...id,
      peer_guid: peer.guid,
      peer_port: String(peer.port),
      peer_lid: peer.lid === undefined ? '' : String(peer.lid),
      peer_node_type: peer.nodeType ?? '',
      peer_description: peer.description ?? '',
    }, 1);
    for (const counter of peer.counters) {
      const spec = PEER_COUNTER_METRICS.get(counter.name);
      if (!spec) continue;
      samples.add(spec, id, counter.value);
      if (counter.saturated) samples.add(PORT_METRICS.pmaSaturated, STABLE.with(id, 'counter', `peer_${counter.name}`), 1);
    }
  }
  const sm = diag.subnetManager;
  if (sm) {
    samples.add(SUBNET_MANAGER_METRICS.reachable, id, bit(sm.reachable));
    const seen = new Set<string>();
    for (const info of [sm.master, sm.local]) {
      if (!info) continue;
      const labels = { ...id, sm_guid: info.guid, sm_lid: String(info.lid), state: info.state ?? '' };
      const key = JSON.stringify(labels);
      if (seen.has(key)) continue;
      seen.add(key);
      samples.add(SUBNET_MANAGER_METRICS.info, labels, 1);
    }
    if (sm.master) {
      samples.add(SUBNET_MANAGER_METRICS.priority, id, sm.master.priority);
      samples.add(SUBNET_MANAGER_METRICS.activity, id, sm.master.activityCount);
    }
  }
}

const ORDER: readonly MetricSpec[] = [
  ...Object.values(DEVICE_METRICS),
  ...Object.values(PORT_METRICS).filter((spec) => spec !== PORT_METRICS.pmaSaturated && spec !== PORT_METRICS.hwStat),
  ...PMA_COUNTER_METRICS.values(),
  PORT_METRICS.pmaSaturated,
  PORT_METRICS.hwStat,
  ...Object.values(PEER_METRICS),
  ...PEER_COUNTER_METRICS.values(),
  ...Object.values(SUBNET_MANAGER_METRICS),
  ...Object.values(IPOIB_METRICS),
  ...Object.values(EXPORTER_METRICS),
];

/** The order of the metric families in the text. */
export const METRIC_ORDER = ORDER;

/** One snapshot as Prometheus text exposition format 0.0.4, in UTF-8: what /metrics serves. */
export function encodeSnapshot(snapshot: Snapshot, build: BuildInfo, options: RenderOptions): Buffer {
  return collectSamples(snapshot, build, options).encode(ORDER);
}

/**
 * The same, written into `out`: the host part's buffer (metrics/exposition-parts.ts), kept from one
 * snapshot to the next.
 */
export function writeSnapshot(snapshot: Snapshot, build: BuildInfo, options: RenderOptions, out: ExpositionBuffer): void {
  collectSamples(snapshot, build, options).writeTo(ORDER, out);
}

/** The same as text. */
export function renderSnapshot(snapshot: Snapshot, build: BuildInfo, options: RenderOptions): string {
  return encodeSnapshot(snapshot, build, options).toString('utf8');
}
