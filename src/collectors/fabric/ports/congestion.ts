// Congestion between two ports cycles: each switch port's stalled fraction (PortXmitWait ticks
// times the node's tick, over the time between the readings), and per tier and direction the
// max, sum and port count over the ports this instance sweeps, so that shards combine in PromQL
// (max of maxes, sum of sums over sum of counts). Worked out in the walk of the trend, once per
// ports cycle, not per scrape; served per port only from 1 %.
import { pacer, type Work } from '../../../event-loop/time-slices.js';
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import { gauge } from '../../../exposition/metric-spec.js';
import { FamilyWriter } from '../../../exposition/samples.js';
import { congestionDirection } from '../../../model/fabric-tiers.js';
import {
  CONGESTION_PORT_FLOOR,
  stalledFraction,
  xmitWaitTickSeconds,
  type CongestionDirection,
  type TickSource,
  type XmitWaitTick,
} from '../../../model/congestion.js';
import type { FabricPortReading, FabricTopology } from '../../../model/fabric.js';
import type { FabricCongestion, TierCongestion } from '../../parts.js';
import { compareNatural } from '../../../model/natural-order.js';

export const CONGESTION_METRICS = {
  tickSeconds: gauge(
    'infiniband_fabric_node_xmit_wait_tick_seconds',
    ['node_guid', 'source'],
    'How long one PortXmitWait tick of this node lasts, in seconds, at the speed and width most of its linked ports run: its PortSamplesControl Tick read from the device (source="device", perfquery -c), or the documented value of its generation where the device does not answer (source="default"). rate(infiniband_fabric_port_transmit_wait_total) times this is the fraction of time a port was stalled.',
  ),
  portRatio: gauge(
    'infiniband_fabric_port_congestion_ratio',
    ['node_guid', 'port'],
    'Fraction of the time between the last two ports cycles (0-1) in which this switch port had data to send and could not send it (PortXmitWait x tick). Served only from 0.01: an absent port waited less than 1 % of the time.',
  ),
  tierMax: gauge(
    'infiniband_fabric_congestion_ratio_max',
    ['tier', 'direction'],
    'The largest stalled fraction (0-1) of the switch ports of one tier and direction this instance swept, between its last two ports cycles. tier 1 = switches with hosts, counting up; direction="down" sends toward the hosts, "up" away. Shards combine with max().',
  ),
  tierSum: gauge(
    'infiniband_fabric_congestion_ratio_sum',
    ['tier', 'direction'],
    'Sum of the stalled fractions of the switch ports of one tier and direction this instance swept: divided by infiniband_fabric_congestion_ports (both summed over shards) it is the mean (infiniband:fabric_tier_congestion:mean).',
  ),
  tierPorts: gauge(
    'infiniband_fabric_congestion_ports',
    ['tier', 'direction'],
    'Switch ports of one tier and direction this instance measured between its last two ports cycles (linked, both readings of PortXmitWait usable).',
  ),
} as const;

export const CONGESTION_FAMILIES = Object.values(CONGESTION_METRICS);

const WAIT = 'transmit_wait';

/** PortXmitWait of a reading, undefined when it was not read. */
function waitOf(reading: FabricPortReading): { value: number; saturated: boolean } | undefined {
  const at = reading.counters.indexOf(WAIT);
  return at < 0 ? undefined : { value: reading.counters.value(at), saturated: reading.counters.saturated(at) };
}

/** Accumulates one ports cycle's congestion, a port at a time, within the walk of the trend. */
export class CongestionWalk {
  private readonly ratios = new Map<string, number>();
  private readonly tiers = new Map<string, TierCongestion>();
  /** Per node: tick seconds → how many of its linked ports run at the speed and width it stands for. */
  private readonly secondsVotes = new Map<string, Map<number, number>>();

  constructor(
    private readonly topology: FabricTopology,
    private readonly tierOf: ReadonlyMap<string, number>,
    private readonly ticks: ReadonlyMap<string, XmitWaitTick>,
    private readonly seconds: number,
  ) {}

  /** One port read this cycle (`after`) and, where it was, the cycle before (`before`). */
  port(key: string, after: FabricPortReading, before: FabricPortReading | undefined): void {
    const tick = this.ticks.get(after.nodeGuid);
    if (!tick || after.width === undefined || after.speed === undefined || !after.peer) return;
    const tickSeconds = xmitWaitTickSeconds(tick, after.width, after.speed);
    let votes = this.secondsVotes.get(after.nodeGuid);
    if (!votes) this.secondsVotes.set(after.nodeGuid, (votes = new Map()));
    votes.set(tickSeconds, (votes.get(tickSeconds) ?? 0) + 1);
    // A reading's PortXmitWait is absent when its query failed (a read one is there, 0 included):
    // no ratio then, rather than the whole count taken for one cycle's.
    const was = before && waitOf(before);
    const now = waitOf(after);
    const ratio =
      was === undefined || now === undefined ? undefined : stalledFraction(was.value, now.value, tickSeconds, this.seconds, now.saturated);
    if (ratio === undefined) return;
    this.ratios.set(key, ratio);
    const tier = this.tierOf.get(after.nodeGuid);
    const peerType = this.topology.nodes.get(after.peer.nodeGuid)?.type;
    if (tier === undefined || peerType === undefined) return;
    const direction: CongestionDirection = congestionDirection(tier, peerType, this.tierOf.get(after.peer.nodeGuid));
    const group = `${tier}/${direction}`;
    const sums = this.tiers.get(group);
    if (sums) {
      sums.max = Math.max(sums.max, ratio);
      sums.sum += ratio;
      sums.ports++;
    } else this.tiers.set(group, { tier, direction, max: ratio, sum: ratio, ports: 1 });
  }

  done(): FabricCongestion {
    const nodeTicks = new Map<string, { seconds: number; source: TickSource }>();
    for (const [guid, votes] of this.secondsVotes) {
      let best: [number, number] | undefined;
      for (const vote of votes) if (!best || vote[1] > best[1] || (vote[1] === best[1] && vote[0] < best[0])) best = vote;
      nodeTicks.set(guid, { seconds: best![0], source: this.ticks.get(guid)!.source });
    }
    const tiers = [...this.tiers.values()].sort((a, b) => a.tier - b.tier || compareNatural(a.direction, b.direction));
    return { ratios: this.ratios, tiers, nodeTicks };
  }
}

/** The congestion families from a ports cycle's congestion. */
export function* writeCongestion(
  congestion: FabricCongestion,
  readings: ReadonlyMap<string, FabricPortReading>,
  out: ExpositionBuffer,
): Work<void> {
  const pace = pacer();
  const ticks = new FamilyWriter(out, CONGESTION_METRICS.tickSeconds);
  for (const [guid, tick] of congestion.nodeTicks) {
    if (pace()) yield;
    ticks.sample(`{node_guid="${guid}"`, `,source="${tick.source}"`, tick.seconds);
  }
  const ports = new FamilyWriter(out, CONGESTION_METRICS.portRatio);
  for (const [key, ratio] of congestion.ratios) {
    if (pace()) yield;
    const reading = readings.get(key);
    if (reading && ratio >= CONGESTION_PORT_FLOOR) ports.sample(`{node_guid="${reading.nodeGuid}",port="${reading.port}"`, '', ratio);
  }
  for (const [spec, value] of [
    [CONGESTION_METRICS.tierMax, (tier: TierCongestion) => tier.max],
    [CONGESTION_METRICS.tierSum, (tier: TierCongestion) => tier.sum],
    [CONGESTION_METRICS.tierPorts, (tier: TierCongestion) => tier.ports],
  ] as const) {
    const family = new FamilyWriter(out, spec);
    for (const tier of congestion.tiers) family.sample(`{tier="${tier.tier}",direction="${tier.direction}"`, '', value(tier));
  }
}
