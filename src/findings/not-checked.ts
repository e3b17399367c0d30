// What was not checked, and why: the "Not checked" list of `check` and of the landing page, from
// the same source (the collectors' switches and their set-up).
import type { Collectors } from '../collection/scheduler.js';

/**
 * The collectors whose switch is off, and those that could not run here, one line per reason (the
 * three diag collectors share theirs). Fabric mode is off on most hosts by design: not a gap in
 * the host's check.
 */
export function notChecked(program: Pick<Collectors, 'registry' | 'disabled' | 'enrolments'>): string[] {
  const reasons = new Map<string, string[]>();
  for (const collector of program.registry) {
    const disabled = program.disabled.some((entry) => entry.collector === collector);
    const enrolment = program.enrolments.find((entry) => entry.collector === collector);
    const reason = disabled
      ? collector.scope === 'host'
        ? `the ${collector.enabledBy!.name.replace(/^collector\./, '')} collector is off`
        : undefined
      : enrolment && 'off' in enrolment
        ? enrolment.off
        : undefined;
    if (reason === undefined) continue;
    const checks = reasons.get(reason) ?? [];
    if (!checks.includes(collector.checks)) reasons.set(reason, [...checks, collector.checks]);
  }
  return [...reasons].map(([reason, checks]) => `${checks.join(', ')}: ${reason}`);
}
