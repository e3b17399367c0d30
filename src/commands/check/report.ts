// What `check` reports about one snapshot, before it is written as text or JSON.
import { countBySeverity, isProblem, worstSeverity, type Finding, type Severity } from '../../model/finding.js';
import { fabricOf, fabricOverview, type FabricOverview } from '../../findings/fabric-overview.js';
import type { FabricSnapshot } from '../../model/fabric.js';
import { IPOIB } from '../../collectors/host/ipoib.js';
import type { Collector } from '../../collection/collector.js';
import { COLLECTORS } from '../../collectors/registry.js';
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
  /** The fabric as the fabric collectors read it; undefined without --collector.fabric. */
  fabricSnapshot: FabricSnapshot | undefined;
  /** IPoIB interfaces read (0 with the ipoib collector off). */
  ipoibInterfaces: number;
}

export function checkReport({ snapshot, notChecked }: CheckCycle, collectors: readonly Collector[] = COLLECTORS): CheckReport {
  const findings = findingsOf(snapshot, collectors);
  const fabric = fabricOf(snapshot);
  const worst = worstSeverity(findings);
  return {
    status: worst === undefined || worst === 'info' ? 'ok' : worst,
    exitCode: findings.some(isProblem) ? 1 : 0,
    counts: countBySeverity(findings),
    findings,
    ports: portOverview(snapshot, findings),
    fabric: fabric && fabricOverview(fabric, findings),
    notChecked,
    snapshot,
    fabricSnapshot: fabric,
    ipoibInterfaces: IPOIB.of(snapshot)?.length ?? 0,
  };
}
