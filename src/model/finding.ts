// What is wrong on a host (and, in fabric mode, in its subnet), for a person: one finding per condition, with what it means, its likely
// cause and the first thing to do (the runbook's first step). Findings are judged from one
// snapshot by pure functions; the check command, the landing page and the tests share them.

/** As the alert the finding mirrors: critical pages, warning makes a ticket, info is context. */
export const SEVERITIES = ['critical', 'warning', 'info'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** A node of the fabric as a finding names it. */
export interface FabricNodeName {
  guid: string;
  /** Undefined for a node the topology does not know (a peer seen only by the last scan). */
  type: 'switch' | 'ca' | 'router' | undefined;
  /** Its node-name-map name, else its NodeDescription, else its GUID: never empty. */
  name: string;
}

/** One end of a fabric link. */
export interface FabricPortName {
  node: FabricNodeName;
  port: number;
}

/** What a finding is about. The fabric-port, multicast-group and subnet kinds are judged in fabric mode. */
export type FindingSubject =
  | { kind: 'host' }
  /** An adapter as a whole (its PCIe link). */
  | { kind: 'device'; device: string }
  | { kind: 'port'; device: string; port: number }
  | { kind: 'interface'; interface: string; device: string | undefined; port: number | undefined }
  | { kind: 'collector'; collector: string }
  /** A port of a fabric node; `peer` names the other end of its link when the finding is about the link. */
  | { kind: 'fabric-port'; node: FabricNodeName; port: number; peer: FabricPortName | undefined }
  | { kind: 'multicast-group'; mgid: string; pkey: string }
  | { kind: 'subnet' };

export interface Finding {
  /** Stable name of the condition, for scripts: e.g. `port-stuck-init`. */
  condition: string;
  severity: Severity;
  subject: FindingSubject;
  /** One line naming the subject, what is wrong and its likely cause. */
  summary: string;
  /** What it means for the host and its jobs. */
  meaning: string;
  /** What usually causes it. */
  cause: string;
  /** The first thing to do: the runbook's first step. */
  remedy: string;
  /** Section of docs/runbooks.md (its anchor). */
  runbook: string;
  /** The alert of rules/infiniband-alerts.yml (or -fabric-alerts.yml) this finding mirrors, at the same severity. */
  alert: string | undefined;
}

/**
 * Where the runbooks are published: the base of every alert's runbook_url in
 * rules/infiniband-alerts.yml (a test keeps the two equal).
 */
export const RUNBOOK_BASE = 'https://github.com/infiniband-exporter/infiniband-exporter/blob/main/docs/runbooks.md';

export function runbookUrl(finding: Pick<Finding, 'runbook'>, base = RUNBOOK_BASE): string {
  return `${base}#${finding.runbook}`;
}

export function severityRank(severity: Severity): number {
  return SEVERITIES.indexOf(severity);
}

/** The worst severity among `findings`; undefined when there is none. */
export function worstSeverity(findings: readonly Pick<Finding, 'severity'>[]): Severity | undefined {
  let worst: Severity | undefined;
  for (const { severity } of findings) if (worst === undefined || severityRank(severity) < severityRank(worst)) worst = severity;
  return worst;
}

/** A problem to act on (exit status 1 of `check`): anything critical or warning. */
export function isProblem(finding: Pick<Finding, 'severity'>): boolean {
  return finding.severity !== 'info';
}

export function countBySeverity(findings: readonly Pick<Finding, 'severity'>[]): Record<Severity, number> {
  const counts: Record<Severity, number> = { critical: 0, warning: 0, info: 0 };
  for (const { severity } of findings) counts[severity] += 1;
  return counts;
}

/** What a failed collector means, in its own words (the collector-failing finding). */
export interface CollectorFailure {
  /** Follows "collector X failed (N errors; first: …): " in the summary. */
  consequence: string;
  meaning: string;
  cause: string;
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}
