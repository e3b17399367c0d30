// Every finding of a snapshot, worst first: the one list the check command and the landing page
// show. Each judge is a pure function of the snapshot; the fabric judge finds nothing unless
// fabric mode (--collector.fabric) filled Snapshot.fabric.
import type { Snapshot } from '../model/snapshot.js';
import { FABRIC_COLLECTORS, fabricFindings } from './fabric.js';
import { severityRank, type Finding, type FindingSubject } from '../model/finding.js';
import { hostFindings } from './host.js';

export type Judge = (snapshot: Snapshot) => Finding[];

const JUDGES: readonly Judge[] = [hostFindings, fabricFindings];

/** Where a finding is shown: under its host device, the host as a whole, the fabric's subnet, or a fabric node. */
export type FindingGroup =
  | { kind: 'device'; device: string }
  | { kind: 'host' }
  | { kind: 'subnet' }
  | { kind: 'fabric-node'; guid: string };

export function groupOf(subject: FindingSubject): FindingGroup {
  switch (subject.kind) {
    case 'port':
      return { kind: 'device', device: subject.device };
    case 'interface':
      return subject.device === undefined ? { kind: 'host' } : { kind: 'device', device: subject.device };
    case 'collector':
      return FABRIC_COLLECTORS.has(subject.collector) ? { kind: 'subnet' } : { kind: 'host' };
    case 'fabric-port':
      return { kind: 'fabric-node', guid: subject.node.guid };
    case 'multicast-group':
    case 'subnet':
      return { kind: 'subnet' };
    case 'host':
      return { kind: 'host' };
  }
}

/** Worst first; within a severity, in the order the judges produced them (devices in snapshot order). */
export function findingsOf(snapshot: Snapshot, judges: readonly Judge[] = JUDGES): Finding[] {
  const all = judges.flatMap((judge) => judge(snapshot));
  return all
    .map((finding, index) => ({ finding, index }))
    .sort((a, b) => severityRank(a.finding.severity) - severityRank(b.finding.severity) || a.index - b.index)
    .map(({ finding }) => finding);
}
