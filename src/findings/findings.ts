// Every finding of a snapshot, worst first: the one list the check command and the landing page
// show. Each judge is a pure function of the snapshot; fabric mode (Snapshot.fabric, judged by
// --collector.fabric) adds its own judge to JUDGES.
import type { Snapshot } from '../snapshot/types.js';
import { severityRank, type Finding, type FindingSubject } from './finding.js';
import { hostFindings } from './host.js';

export type Judge = (snapshot: Snapshot) => Finding[];

const JUDGES: readonly Judge[] = [hostFindings];

/** The device a subject belongs to, for grouping; undefined for host-wide subjects. */
export function subjectDevice(subject: FindingSubject): string | undefined {
  return subject.kind === 'port' || subject.kind === 'interface' ? subject.device : undefined;
}

/** Worst first; within a severity, in the order the judges produced them (devices in snapshot order). */
export function findingsOf(snapshot: Snapshot, judges: readonly Judge[] = JUDGES): Finding[] {
  const all = judges.flatMap((judge) => judge(snapshot));
  return all
    .map((finding, index) => ({ finding, index }))
    .sort((a, b) => severityRank(a.finding.severity) - severityRank(b.finding.severity) || a.index - b.index)
    .map(({ finding }) => finding);
}
