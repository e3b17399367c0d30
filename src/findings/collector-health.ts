// Findings about the collectors themselves: one that failed this cycle (warning, as
// InfiniBandExporterCollectorFailing) or one that worked but could not read some items (info).
// Each collector explains its own failure (its declaration's `failure`).
import type { Collector } from '../collection/collector.js';
import { plural, type Finding } from '../model/finding.js';
import { readErrorCount, type Snapshot } from '../model/snapshot.js';

/** The collector findings of a snapshot, in the registry's order (the report reads the same every run). */
export function collectorFindings(snapshot: Snapshot, collectors: readonly Collector[]): Finding[] {
  const findings: Finding[] = [];
  for (const collector of collectors) {
    const report = snapshot.reports.find((candidate) => candidate.collector === collector.name);
    if (!report) continue;
    const failure = typeof collector.failure === 'function' ? collector.failure(snapshot, report) : collector.failure;
    if (!failure) continue;
    // Errors another finding already tells about still fail a collector that failed.
    const unexplained = report.errors.filter((error) => !collector.explained?.(error));
    const first = (report.success ? unexplained : report.errors)[0];
    if (!first && report.success) continue;
    const firstText = first ? `${first.item}: ${first.message}` : 'no detail';
    const subject = { kind: 'collector', collector: report.collector } as const;
    if (!report.success) {
      const { consequence, meaning, cause } = failure;
      findings.push({
        condition: 'collector-failing',
        severity: 'warning',
        subject,
        summary: `collector ${report.collector} failed (${plural(readErrorCount(report.errors), 'error')}; first: ${firstText}): ${consequence}`,
        meaning,
        cause,
        remedy: `run the failing command or read the file by hand, as the same user: ${first ? first.item : report.collector}`,
        runbook: 'infinibandexportercollectorfailing',
        alert: 'InfiniBandExporterCollectorFailing',
      });
    } else if (first) {
      findings.push({
        condition: 'read-errors',
        severity: 'info',
        subject,
        summary: `collector ${report.collector} could not read ${plural(unexplained.length, 'item')} (first: ${firstText}); the rest was read`,
        meaning: 'Only these items are missing; everything else of the collector is there.',
        cause:
          'A driver that refuses a read (EINVAL on some counters or rates), a file that is not what the kernel writes, or a node of the fabric that did not answer one query.',
        remedy: `read it by hand to see what the kernel or the tool says: ${first.item}`,
        runbook: 'infinibandexportercollectorfailing',
        alert: undefined,
      });
    }
  }
  return findings;
}
