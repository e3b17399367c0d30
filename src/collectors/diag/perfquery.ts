// The perfquery collector: from each linked, addressed local port, its own PMA counters that sysfs
// does not provide (old kernels, Omni-Path), and the error counters of its link peer (the switch
// port at the other end of the cable), addressed by the LID smpquery found for it; and each port's
// PortXmitWait tick, read once per device with perfquery -c.
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../../exposition/metric-spec.js';
import { STABLE, Samples } from '../../exposition/samples.js';
import { xmitWaitTickSeconds } from '../../model/congestion.js';
import { portKey, type PortPma } from '../../model/host.js';
import { PMA_COUNTERS } from '../../model/pma-counters.js';
import type { Snapshot } from '../../model/snapshot.js';
import { readPortCounters, type KnownTicks } from '../../sources/diag/local-ports.js';
import { defineCollector, type Collector } from '../../collection/collector.js';
import { DIAG_CHECKS, DIAG_CYCLE, DIAG_FLAGS, DIAG_SWITCH, diagReader } from './diag-group.js';
import { PERFQUERY_PART, SMPQUERY_PART } from '../parts.js';

/** Error counters of the link peer's port (read with perfquery by LID), one metric per PMA error counter. */
export const PEER_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.filter((c) => c.error).map((c) => [
    c.name,
    counter(
      `infiniband_port_peer_${c.name}_total`,
      ['device', 'port'],
      `At the link peer (the switch port at the other end of this port's cable): ${c.help} Saturation shows as infiniband_port_pma_saturated{counter="peer_${c.name}"}.`,
    ),
  ]),
);

const TICK_SECONDS = gauge(
  'infiniband_port_xmit_wait_tick_seconds',
  ['device', 'port'],
  "How long one PortXmitWait tick of this port lasts at its current speed and width, in seconds: the adapter's PortSamplesControl Tick (perfquery -c, read once per device), or its generation's documented tick where the adapter does not answer. rate(infiniband_port_transmit_wait_total) times this is the fraction of time the port was stalled (infiniband:port_congestion:ratio5m).",
);

const FAMILIES = [...PEER_COUNTER_METRICS.values(), TICK_SECONDS];

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const samples = new Samples();
  const ports = new Map(snapshot.devices.flatMap((device) => device.ports.map((port) => [portKey(device.name, port.port), port] as const)));
  for (const [key, { peerCounters, tick }] of PERFQUERY.of(snapshot) ?? []) {
    const [device, port] = key.split('/') as [string, string];
    const id = STABLE.with(STABLE.one('device', device), 'port', port);
    for (const value of peerCounters) {
      const spec = PEER_COUNTER_METRICS.get(value.name);
      if (spec) samples.add(spec, id, value.value);
    }
    const { width, speed } = ports.get(key) ?? {};
    if (tick && width !== undefined && speed !== undefined) samples.add(TICK_SECONDS, id, xmitWaitTickSeconds(tick, width, speed));
  }
  samples.writeTo(FAMILIES, out);
}

export const PERFQUERY: Collector<ReadonlyMap<string, PortPma>> = defineCollector({
  name: PERFQUERY_PART.name,
  checks: DIAG_CHECKS,
  enabledBy: DIAG_SWITCH,
  flags: DIAG_FLAGS,
  scope: 'host',
  // The peer's LID comes from smpquery.
  schedule: { cycle: DIAG_CYCLE, after: [SMPQUERY_PART] },
  onOverrun: 'drop',
  setUp: (context) => {
    // Each port's tick, read once per device (kept between cycles: it is identity-like).
    const ticks: KnownTicks = new Map();
    return diagReader(context, 'perfquery', (tools, snapshot, signal) =>
      readPortCounters(tools.targets(snapshot.devices, signal), SMPQUERY_PART.of(snapshot), tools.options(signal), ticks),
    );
  },
  metrics: { families: FAMILIES, write: writeMetrics },
  failure: {
    consequence: "the link peers' error counters are missing",
    meaning: 'Errors counted by the switch port at the other end of a cable would not show.',
    cause: 'No access to /dev/infiniband/umad* (not root), a port without a LID, or a command timing out.',
  },
});
