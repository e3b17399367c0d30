// Findings about the collectors themselves: one that failed this cycle (warning, as
// InfiniBandExporterCollectorFailing) or one that worked but could not read some items (info).
// The host and fabric judges each explain their own collectors.
import { COLLECTORS, type CollectorReport, type ReadError } from '../snapshot/types.js';
import type { Finding } from './finding.js';

/** What a failed collector means, in its judge's words. */
export interface CollectorFailure {
  /** Follows "collector X failed (N errors; first: …): " in the summary. */
  consequence: string;
  meaning: string;
  cause: string;
}

export function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

/**
 * The findings of `reports`. `explained` drops the errors another finding already tells about
 * (they still fail a collector that failed).
 */
export function collectorFindings(
  reports: readonly CollectorReport[],
  failure: (report: CollectorReport) => CollectorFailure,
  explained: (error: ReadError) => boolean = () => false,
): Finding[] {
  const findings: Finding[] = [];
  // In the order of COLLECTORS, not of the cycles' ends: the report reads the same every run.
  for (const report of [...reports].sort((a, b) => COLLECTORS.indexOf(a.collector) - COLLECTORS.indexOf(b.collector))) {
    const unexplained = report.errors.filter((error) => !explained(error));
    const first = (report.success ? unexplained : report.errors)[0];
    if (!first && report.success) continue;
    const firstText = first ? `${first.item}: ${first.message}` : 'no detail';
    const subject = { kind: 'collector', collector: report.collector } as const;
    if (!report.success) {
      const { consequence, meaning, cause } = failure(report);
      findings.push({
        condition: 'collector-failing',
        severity: 'warning',
        subject,
        summary: `collector ${report.collector} failed (${plural(report.errors.length, 'error')}; first: ${firstText}): ${consequence}`,
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
        cause: 'A driver that refuses a read (EINVAL on some counters or rates), a file that is not what the kernel writes, or a node of the fabric that did not answer one query.',
        remedy: `read it by hand to see what the kernel or the tool says: ${first.item}`,
        runbook: 'infinibandexportercollectorfailing',
        alert: undefined,
      });
    }
  }
  return findings;
}
