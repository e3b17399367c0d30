// A file that cannot be read fails again every cycle. Log it once when it starts, a summary while
// it persists (at most once per `summaryEveryMs`), and once when it clears — never every cycle.
import type { Logger } from 'pino';
import type { ReadError } from '../model/snapshot.js';

interface Ongoing {
  error: ReadError;
  since: number;
  occurrences: number;
  lastSummary: number;
}

export class RecurringErrors {
  private readonly ongoing = new Map<string, Ongoing>();

  constructor(
    private readonly logger: Logger,
    private readonly summaryEveryMs = 3_600_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Report every error of one finished cycle of `collector`. */
  cycle(collector: string, errors: readonly ReadError[]): void {
    const now = this.now();
    const seen = new Set<string>();
    for (const error of errors) {
      const key = `${error.collector}\u0000${error.item}\u0000${error.message}`;
      seen.add(key);
      const entry = this.ongoing.get(key);
      if (!entry) {
        this.ongoing.set(key, { error, since: now, occurrences: 1, lastSummary: now });
        this.logger.warn({ collector: error.collector, item: error.item, error: error.message }, 'read failed; repeats of this error are summarised hourly');
        continue;
      }
      entry.occurrences += 1;
      if (now - entry.lastSummary >= this.summaryEveryMs) {
        entry.lastSummary = now;
        this.logger.warn(
          { collector: error.collector, item: error.item, error: error.message, occurrences: entry.occurrences, since: new Date(entry.since).toISOString() },
          'read still failing',
        );
      }
    }
    for (const [key, entry] of this.ongoing) {
      if (entry.error.collector !== collector || seen.has(key)) continue;
      this.ongoing.delete(key);
      this.logger.info({ collector, item: entry.error.item, occurrences: entry.occurrences }, 'read works again');
    }
  }
}
