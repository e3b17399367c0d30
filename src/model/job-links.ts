// What each job's footprint looks like in the last ports cycle, over the links this instance's
// shard reports (a link's owner end among the nodes it sweeps): how many, and how many are down,
// degraded, erroring, over the BER threshold or miswired. Counts per shard add up across shards,
// since each link has one owner; the recording rules sum them.
import { PLANNED_LINK_STATUS, type CablingReport } from './cabling.js';
import { fabricPortKey, inShard, type FabricPortReading, type PortAddress, type Shard } from './fabric.js';
import type { FootprintLink, JobOnFabric } from './job-footprint.js';
import { assessLink } from './link-degradation.js';
import type { LinkExpectation } from './link-rate.js';
import { PORT_STATE_ACTIVE } from './port-state.js';

export const IMPAIRMENT_REASONS = ['down', 'degraded', 'errors', 'ber', 'miswired'] as const;
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
  shard: Shard;
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
  if (either(evidence.miswired)) reasons.push('miswired');
  return reasons;
}

export interface ScopeCounts {
  links: number;
  impaired: Record<ImpairmentReason, number>;
  /** The impaired links themselves, for findings and the map. */
  impairedLinks: { link: FootprintLink; reasons: ImpairmentReason[] }[];
}

/** A job's footprint counted per scope over the links this shard reports. */
export function jobLinkCounts(job: JobOnFabric, evidence: LinkEvidence): Record<FootprintLink['scope'], ScopeCounts> {
  const empty = (): ScopeCounts => ({ links: 0, impaired: { down: 0, degraded: 0, errors: 0, ber: 0, miswired: 0 }, impairedLinks: [] });
  const counts = { host: empty(), switch: empty() };
  for (const link of job.links) {
    const reasons = linkImpairments(link, evidence);
    if (reasons === undefined) continue;
    const scope = counts[link.scope];
    scope.links += 1;
    for (const reason of reasons) scope.impaired[reason] += 1;
    if (reasons.length > 0) scope.impairedLinks.push({ link, reasons });
  }
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
