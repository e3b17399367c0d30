// Every finding of a snapshot, worst first: the one list the check command and the landing page
// show. Each collector judges what it read (its declaration's `findings`); this puts them in one
// order a person can read: within a severity, the host before the fabric, then as the subjects
// stand (the host, its ports in snapshot order, its interfaces, its collectors; the fabric's
// collectors, the subnet, its multicast groups, its ports).
import type { Collector } from '../collection/collector.js';
import { atOnce, type Work } from '../event-loop/time-slices.js';
import { COLLECTORS } from '../collectors/registry.js';
import { portKey } from '../model/host.js';
import { severityRank, type Finding, type FindingSubject } from '../model/finding.js';
import type { Snapshot } from '../model/snapshot.js';
import { collectorFindings } from './collector-health.js';

/** Where a finding is shown: under its host device, the host as a whole, the fabric's subnet, or a fabric node. */
export type FindingGroup =
  | { kind: 'device'; device: string }
  | { kind: 'host' }
  | { kind: 'subnet' }
  | { kind: 'fabric-node'; guid: string };

function scopeOf(collector: string, collectors: readonly Collector[]): 'host' | 'fabric' {
  return collectors.find((candidate) => candidate.name === collector)?.scope ?? 'host';
}

export function groupOf(subject: FindingSubject, collectors: readonly Collector[] = COLLECTORS): FindingGroup {
  switch (subject.kind) {
    case 'device':
    case 'port':
      return { kind: 'device', device: subject.device };
    case 'interface':
      return subject.device === undefined ? { kind: 'host' } : { kind: 'device', device: subject.device };
    case 'collector':
      return scopeOf(subject.collector, collectors) === 'fabric' ? { kind: 'subnet' } : { kind: 'host' };
    case 'fabric-port':
      return { kind: 'fabric-node', guid: subject.node.guid };
    case 'multicast-group':
    case 'subnet':
      return { kind: 'subnet' };
    case 'host':
      return { kind: 'host' };
  }
}

/** The place of a subject in the reading order (see the head of this file). */
function place(subject: FindingSubject, ports: ReadonlyMap<string, number>, collectors: readonly Collector[]): [number, number] {
  switch (subject.kind) {
    case 'host':
      return [0, 0];
    case 'device':
      return [1, ports.get(portKey(subject.device, 1)) ?? ports.size];
    case 'port':
      return [1, ports.get(portKey(subject.device, subject.port)) ?? ports.size];
    case 'interface':
      return [2, 0];
    case 'collector':
      return scopeOf(subject.collector, collectors) === 'fabric' ? [4, 0] : [3, 0];
    case 'subnet':
      return [5, 0];
    case 'multicast-group':
      return [6, 0];
    case 'fabric-port':
      return [7, 0];
  }
}

/** Worst first; within a severity, in reading order, then as the collectors judged them. */
export function findingsOf(snapshot: Snapshot, collectors: readonly Collector[] = COLLECTORS): Finding[] {
  return atOnce(findingsSteps(snapshot, collectors));
}

/** The same, as work that may pause: a fabric's findings are judged port by port. */
export function* findingsSteps(snapshot: Snapshot, collectors: readonly Collector[] = COLLECTORS): Work<Finding[]> {
  // A collector that is off has no part, and judges nothing.
  const judged: { collector: Collector; findings: Finding[] }[] = [];
  for (const collector of collectors) {
    judged.push({
      collector,
      findings: collector.findingSteps ? yield* collector.findingSteps(snapshot) : (collector.findings?.(snapshot) ?? []),
    });
  }
  // Findings another collector explains better are left out (a moved cable is not a pulled one).
  const explainers = collectors.flatMap((collector) => {
    const explains = collector.explains?.(snapshot);
    return explains ? [{ collector, explains }] : [];
  });
  const kept = judged.flatMap(({ collector, findings }) =>
    findings.filter((finding) => !explainers.some((explainer) => explainer.collector !== collector && explainer.explains(finding))),
  );
  const all = [...kept, ...collectorFindings(snapshot, collectors)];
  const ports = new Map(
    snapshot.devices.flatMap((device) => device.ports.map((port) => portKey(device.name, port.port))).map((key, i) => [key, i]),
  );
  return all
    .map((finding, index) => ({ finding, index, place: place(finding.subject, ports, collectors) }))
    .sort(
      (a, b) =>
        severityRank(a.finding.severity) - severityRank(b.finding.severity) ||
        a.place[0] - b.place[0] ||
        a.place[1] - b.place[1] ||
        a.index - b.index,
    )
    .map(({ finding }) => finding);
}
