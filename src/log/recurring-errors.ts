// A file that cannot be read fails again every cycle. Log it once when it starts, a summary while
// it persists (at most once per `summaryEveryMs`), and once when it clears — never every cycle.
//
// An error is known by its collector and item (a sysfs path, a command line without private file
// names): one item that fails in another way from one cycle to the next (a time-out, then an exit
// code; garbage whose first line differs) is one failure that goes on, not a failure that cleared
// and a new one. It clears ("read works again") only when a cycle read the item again without
// error. An item a cycle did not read at all (a device unplugged, a port no longer queried, a
// cycle cut off) stays as it was, without a word: the collection logs devices that come and go
// itself, and an item that comes back working is then "works again", one that comes back failing
// goes on. (Items are paths and command lines of a host and its fabric: what stays is bounded.)
import type { Logger } from 'pino';
import type { ReadError } from '../model/snapshot.js';

interface Ongoing {
  /** The latest occurrence: the hourly summary says how it fails now. */
  error: ReadError;
  since: number;
  occurrences: number;
  lastSummary: number;
}

/** Whether a finished cycle read `item` (every item, unless the collector says otherwise). */
export type ItemsRead = (item: string) => boolean;

const everyItem: ItemsRead = () => true;

export class RecurringErrors {
  private readonly ongoing = new Map<string, Ongoing>();

  constructor(
    private readonly logger: Logger,
    private readonly summaryEveryMs = 3_600_000,
    private readonly now: () => number = Date.now,
  ) {}

  /** Report every error of one finished cycle of `collector`, which read the items `read` accepts. */
  cycle(collector: string, errors: readonly ReadError[], read: ItemsRead = everyItem): void {
    const now = this.now();
    const seen = new Set<string>();
    for (const error of errors) {
      const key = `${error.collector}\u0000${error.item}`;
      // One command can fail several times in a cycle (a line cut, then its lines not understood).
      if (seen.has(key)) continue;
      seen.add(key);
      const entry = this.ongoing.get(key);
      if (!entry) {
        this.ongoing.set(key, { error, since: now, occurrences: 1, lastSummary: now });
        this.logger.warn(
          { collector: error.collector, item: error.item, error: error.message },
          'read failed; repeats of this error are summarised hourly',
        );
        continue;
      }
      entry.occurrences += 1;
      entry.error = error;
      if (now - entry.lastSummary >= this.summaryEveryMs) {
        entry.lastSummary = now;
        this.logger.warn(
          {
            collector: error.collector,
            item: error.item,
            error: error.message,
            occurrences: entry.occurrences,
            since: new Date(entry.since).toISOString(),
          },
          'read still failing',
        );
      }
    }
    for (const [key, entry] of this.ongoing) {
      if (entry.error.collector !== collector || seen.has(key) || !read(entry.error.item)) continue;
      this.ongoing.delete(key);
      this.logger.info({ collector, item: entry.error.item, occurrences: entry.occurrences }, 'read works again');
    }
  }
}
