// What `check` reports about one snapshot, before it is written as text or JSON.
import { countBySeverity, isProblem, worstSeverity, type Finding, type Severity } from '../../model/finding.js';
import { fabricOverview, type FabricOverview } from '../../findings/fabric-overview.js';
import { findingsOf } from '../../findings/findings.js';
import { portOverview, type PortOverview } from '../../findings/port-overview.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { CheckCycle } from './one-cycle.js';

/** 0 when nothing is critical or warning, 1 when something is (2, usage errors, never gets here). */
export type CheckExitCode = 0 | 1;

export interface CheckReport {
  status: Severity | 'ok';
  exitCode: CheckExitCode;
  counts: Record<Severity, number>;
  findings: Finding[];
  ports: PortOverview[];
  /** Fabric mode's summary; undefined without --collector.fabric. */
  fabric: FabricOverview | undefined;
  notChecked: string[];
  snapshot: Snapshot;
}

export function checkReport({ snapshot, notChecked }: CheckCycle): CheckReport {
  const findings = findingsOf(snapshot);
  const worst = worstSeverity(findings);
  return {
    status: worst === undefined || worst === 'info' ? 'ok' : worst,
    exitCode: findings.some(isProblem) ? 1 : 0,
    counts: countBySeverity(findings),
    findings,
    ports: portOverview(snapshot, findings),
    fabric: snapshot.fabric && fabricOverview(snapshot.fabric, findings),
    notChecked,
    snapshot,
  };
}
