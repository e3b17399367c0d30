// What each job's footprint looks like in the last ports cycle, over the links this instance's
// shard reports (a link's owner end among the nodes it sweeps): how many, and how many are down,
// degraded, erroring, over the BER threshold, congested or miswired, and how long its links were
// stalled. Counts and sums per shard add up across shards, since each link has one owner; the
// recording rules sum them (and take the max of the maxes).
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import { PLANNED_LINK_STATUS, type CablingReport } from './cabling.js';
import { CONGESTED_LINK_RATIO } from './congestion.js';
import { fabricPortKey, inShard, type FabricPortReading, type PortAddress, type Shard } from './fabric.js';
import type { FootprintLink, JobOnFabric } from './job-footprint.js';
import { assessLink } from './link-degradation.js';
import type { LinkExpectation } from './link-rate.js';
import { PORT_STATE_ACTIVE } from './port-state.js';

export const IMPAIRMENT_REASONS = ['down', 'degraded', 'errors', 'ber', 'congested', 'miswired'] as const;
export type ImpairmentReason = (typeof IMPAIRMENT_REASONS)[number];
export const FOOTPRINT_SCOPES = ['host', 'switch'] as const;

/** What the last ports cycle says of the fabric's ports, as the judgement of a link needs it. */
export interface LinkEvidence {
  ports: ReadonlyMap<string, FabricPortReading>;
  expectations: ReadonlyMap<string, LinkExpectation>;
  risingErrors: ReadonlySet<string>;
  berOverThreshold: ReadonlySet<string>;
  /** Port keys of cables not where the plan or the rails want them. */
  miswired: ReadonlySet<string>;
  /** Each measured port's stalled fraction over the last ports cycle (0–1), by port key. */
  congestion: ReadonlyMap<string, number>;
  shard: Shard;
  /**
   * Each link judged so far on this evidence, by its id (null: not this shard's): a link is in the
   * footprints of many jobs (at 2 000 jobs, 74 000 cables held 1.2 million times), judged once.
   * Ids are those of one placement's numbering: evidence with `judged` serves one numbering.
   */
  judged?: (Judgement | null)[];
  /** Each job's counts on this evidence, for as long as the job's placement stays the same object. */
  counted?: WeakMap<JobOnFabric, Record<FootprintLink['scope'], ScopeCounts>>;
}

/** What one link is on the evidence: its impairments and how long it was stalled (0 where not measured). */
export interface Judgement {
  reasons: ImpairmentReason[];
  ratio: number;
}

/**
 * How long a link was stalled over the last ports cycle: the larger of its two directions, each
 * measured at the end that sends it (this shard's ends only); undefined when neither end was measured.
 */
export function linkCongestion(link: FootprintLink, congestion: ReadonlyMap<string, number>): number | undefined {
  const ends = [fabricPortKey(link.owner.nodeGuid, link.owner.port), fabricPortKey(link.peer.nodeGuid, link.peer.port)]
    .map((key) => congestion.get(key))
    .filter((ratio): ratio is number => ratio !== undefined);
  return ends.length > 0 ? Math.max(...ends) : undefined;
}

/** Why a link is impaired; undefined when this shard does not report it (its owner is another shard's, or was not read). */
export function linkImpairments(link: FootprintLink, evidence: LinkEvidence): ImpairmentReason[] | undefined {
  if (!inShard(link.owner.nodeGuid, evidence.shard)) return undefined;
  const ownerKey = fabricPortKey(link.owner.nodeGuid, link.owner.port);
  const peerKey = fabricPortKey(link.peer.nodeGuid, link.peer.port);
  const reading = evidence.ports.get(ownerKey);
  if (!reading) return undefined;
  const either = (set: ReadonlySet<string>) => set.has(ownerKey) || set.has(peerKey);
  const reasons: ImpairmentReason[] = [];
  const down = reading.peer === undefined || (reading.state !== undefined && reading.state.id !== PORT_STATE_ACTIVE);
  if (down) reasons.push('down');
  const assessment = assessLink(reading, evidence.expectations.get(ownerKey));
  if (!down && (assessment.widthDegraded || assessment.speedDegraded)) reasons.push('degraded');
  if (either(evidence.risingErrors)) reasons.push('errors');
  if (either(evidence.berOverThreshold)) reasons.push('ber');
  if ((linkCongestion(link, evidence.congestion) ?? 0) >= CONGESTED_LINK_RATIO) reasons.push('congested');
  if (either(evidence.miswired)) reasons.push('miswired');
  return reasons;
}

export interface ScopeCounts {
  links: number;
  impaired: Record<ImpairmentReason, number>;
  /**
   * The largest and the sum of the links' stalled fractions (a link whose ends were not measured
   * adds 0, so that the sum over `links` is the mean over the links counted).
   */
  congestionMax: number;
  congestionSum: number;
  /** The impaired links themselves, for findings and the map. */
  impairedLinks: { link: FootprintLink; reasons: ImpairmentReason[] }[];
}

/** A job's footprint counted per scope over the links this shard reports. */
export function jobLinkCounts(job: JobOnFabric, evidence: LinkEvidence): Record<FootprintLink['scope'], ScopeCounts> {
  return atOnce(jobLinkCountsSteps(job, evidence));
}

/** The same as work that may pause: a job across the tree holds 20 000 links. */
export function* jobLinkCountsSteps(job: JobOnFabric, evidence: LinkEvidence): Work<Record<FootprintLink['scope'], ScopeCounts>> {
  const known = evidence.counted?.get(job);
  if (known) return known;
  const empty = (): ScopeCounts => ({
    links: 0,
    impaired: { down: 0, degraded: 0, errors: 0, ber: 0, congested: 0, miswired: 0 },
    congestionMax: 0,
    congestionSum: 0,
    impairedLinks: [],
  });
  const counts = { host: empty(), switch: empty() };
  const judged = evidence.judged;
  const pace = pacer(2048);
  const links = job.links;
  for (let i = 0; i < links.length; i++) {
    if (pace()) yield;
    const link = links.at(i);
    let judgement = judged?.[link.id];
    if (judgement === undefined) {
      const reasons = linkImpairments(link, evidence);
      judgement = reasons === undefined ? null : { reasons, ratio: linkCongestion(link, evidence.congestion) ?? 0 };
      if (judged) judged[link.id] = judgement;
    }
    if (judgement === null) continue;
    const scope = link.scope === 'host' ? counts.host : counts.switch;
    scope.links += 1;
    const ratio = judgement.ratio;
    if (ratio > scope.congestionMax) scope.congestionMax = ratio;
    scope.congestionSum += ratio;
    const reasons = judgement.reasons;
    if (reasons.length === 0) continue;
    for (const reason of reasons) scope.impaired[reason] += 1;
    scope.impairedLinks.push({ link, reasons });
  }
  evidence.counted?.set(job, counts);
  return counts;
}

/** The port keys of cables not where the cabling plan or the rails want them (both ends, and where they are now). */
export function miswiredPorts(report: CablingReport | undefined): Set<string> {
  const keys = new Set<string>();
  const add = (address: PortAddress | undefined) => {
    if (address) keys.add(fabricPortKey(address.nodeGuid, address.port));
  };
  for (const link of report?.conformance?.links ?? []) {
    if (link.status !== PLANNED_LINK_STATUS.connectedElsewhere) continue;
    for (const end of link.now) add(end);
    for (const end of link.cable.ends) if (end.nodeGuid !== undefined) add({ nodeGuid: end.nodeGuid, port: end.port });
  }
  for (const violation of report?.rails?.violations ?? []) {
    add(violation.adapter);
    add(violation.leaf);
  }
  return keys;
}
