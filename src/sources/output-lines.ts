// A tool's standard output taken line by line as it arrives, instead of whole when the tool ends:
// fabric mode's tools print tens of megabytes (an iblinkinfo scan of 120 000 ports is 22 MB, a
// counters sweep 45 MB), which parsed at once would hold the event loop for seconds and the whole
// text in memory. The chunks are kept as they come and handed to `onLine` in time slices; a runner
// that can stops reading the tool's pipe while more than OUTPUT_BACKLOG_CHARS wait (`drained`
// says when to read again), and does not count the time output waits to be parsed against the
// tool's time limit. The
// lines are those of `text.split('\n')`: the last one is what follows the last newline, '' when
// the output ends with one. A line is at most MAX_LINE_CHARS: the rest of a longer one is skipped
// up to its newline, never collected (a tool printing one endless line would otherwise build one
// string until V8 refuses it, and a pattern's backtracking grows with the length of its line).
import { StringDecoder } from 'node:string_decoder';
import { nextTurn, pacer, sliceSpent, sliceStart } from '../event-loop/time-slices.js';
import { performance } from 'node:perf_hooks';

/** The longest line handed over (64 KiB); real tools' lines are under 200 characters. */
export const MAX_LINE_CHARS = 64 * 1024;

/**
 * Characters a runner lets wait before it stops reading the tool's pipe (the tool then waits on
 * its pipe). Without a bound a tool faster than its parser was held whole: a fabric's 21 MiB
 * iblinkinfo scan printed at once by the fake tools waited as text until it was parsed, long
 * enough to be moved to V8's old generation and to stay there as garbage until the next full
 * collection (docs/benchmarks.md, "One shard of four, third pass").
 */
export const OUTPUT_BACKLOG_CHARS = 4 * 1024 * 1024;

export class OutputLines {
  private readonly decoder = new StringDecoder('utf8');
  private readonly pending: string[] = [];
  private next = 0;
  /** Characters written and not yet handed over. */
  private waiting = 0;
  /** The start of a line whose end has not come yet, at most MAX_LINE_CHARS. */
  private partial = '';
  /** The line in `partial` was cut: its rest is skipped up to the next newline. */
  private overlong = false;
  private cutLines = 0;
  private draining: Promise<void> | undefined;
  private ended = false;
  private discarded = false;
  /** Who waits for the backlog to shrink (see `drained`). */
  private waiters: { chars: number; resolve: () => void }[] = [];
  /** Since when output has waited or been handed over without a pause, and the time of those before. */
  private busySince: number | undefined;
  private busyBefore = 0;

  constructor(private readonly onLine: (line: string) => void) {}

  /** Lines longer than MAX_LINE_CHARS, handed over cut to that length. */
  get cut(): number {
    return this.cutLines;
  }

  /** Characters written and not yet taken up (what a tool printed faster than it is parsed). */
  get backlog(): number {
    return this.waiting;
  }

  /**
   * How long, in ms, output has waited to be handed over or was being handed over, in all: time
   * in which the tool may have waited on its pipe for this parser.
   */
  busyMs(now = performance.now()): number {
    return this.busyBefore + (this.busySince === undefined ? 0 : now - this.busySince);
  }

  /** Resolves once at most `chars` characters wait to be handed over, or the output is discarded. */
  drained(chars: number): Promise<void> {
    if (this.satisfies(chars)) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push({ chars, resolve }));
  }

  private satisfies(chars: number): boolean {
    return this.discarded || this.waiting <= chars;
  }

  private idle(): void {
    if (this.busySince === undefined) return;
    this.busyBefore += performance.now() - this.busySince;
    this.busySince = undefined;
  }

  private wake(): void {
    if (this.waiters.length === 0) return;
    const still = this.waiters.filter((waiter) => !this.satisfies(waiter.chars));
    for (const waiter of this.waiters) if (!still.includes(waiter)) waiter.resolve();
    this.waiters = still;
  }

  /** More output; a string is taken as decoded text (a runner that collected the output whole). */
  write(chunk: Buffer | string): void {
    if (this.ended) return;
    this.push(typeof chunk === 'string' ? chunk : this.decoder.write(chunk));
  }

  /** The output is complete: resolves once every line, the last one included, was handed over. */
  async end(): Promise<void> {
    if (this.ended) return;
    this.ended = true;
    this.push(this.decoder.end());
    while (this.draining || this.next < this.pending.length) await (this.draining ?? this.startDrain());
    this.onLine(this.partial);
    this.partial = '';
    this.overlong = false;
  }

  /** The tool was stopped: what it printed is not parsed any further. */
  discard(): void {
    this.ended = true;
    this.discarded = true;
    this.pending.length = 0;
    this.next = 0;
    this.waiting = 0;
    this.idle();
    this.wake();
  }

  private push(text: string): void {
    if (text === '') return;
    this.busySince ??= performance.now();
    this.pending.push(text);
    this.waiting += text.length;
    if (!this.draining) this.startDrain();
  }

  private startDrain(): Promise<void> {
    const draining = this.drain().finally(() => {
      if (this.draining === draining) this.draining = undefined;
      // Everything written so far was handed over (a write during the drain was taken up by it).
      if (!this.draining) this.idle();
    });
    this.draining = draining;
    return draining;
  }

  private async drain(): Promise<void> {
    let started = sliceStart();
    const pace = pacer();
    while (this.next < this.pending.length) {
      const text = this.pending[this.next]!;
      this.pending[this.next++] = '';
      this.waiting -= text.length;
      this.wake();
      let from = 0;
      for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', from)) {
        if (this.partial === '' && !this.overlong && newline - from <= MAX_LINE_CHARS) {
          this.onLine(text.slice(from, newline));
        } else {
          this.append(text, from, newline);
          this.onLine(this.partial);
          this.partial = '';
          this.overlong = false;
        }
        from = newline + 1;
        // A string collected whole is megabytes: it pauses within, not only between chunks.
        if (pace() && sliceSpent(started)) {
          await nextTurn();
          if (this.discarded) break;
          started = sliceStart();
        }
      }
      this.append(text, from, text.length);
      if (sliceSpent(started)) {
        await nextTurn();
        started = sliceStart();
      }
    }
    this.pending.length = 0;
    this.next = 0;
  }

  /** `text[from, to)` added to the line not yet ended, up to MAX_LINE_CHARS. */
  private append(text: string, from: number, to: number): void {
    if (this.overlong) return;
    const room = MAX_LINE_CHARS - this.partial.length;
    if (to - from <= room) {
      this.partial += text.slice(from, to);
      return;
    }
    this.partial += text.slice(from, from + room);
    this.overlong = true;
    this.cutLines += 1;
  }
}

/**
 * A string of its own for a part of a line kept past the parse: a line is a slice of the chunk it
 * came in (about 64 KiB of output), and so is any part of it, which keeps the whole chunk alive
 * (at 24 576 hosts the node descriptions held 16.5 MiB of discovery's output).
 */
export function detached(text: string): string {
  // Shorter strings are copied by slice already; JSON's round trip makes a flat copy of any text.
  return text.length < 13 ? text : (JSON.parse(JSON.stringify(text)) as string);
}

/** A parser of a tool's output that takes it a line at a time (as OutputLines hands it over), then says what it read. */
export interface LineParser<Result = unknown> {
  push(line: string): void;
  end(): Result;
}

/**
 * Parse a whole text with an incremental parser: the lines of `text.split('\n')`, each cut to
 * MAX_LINE_CHARS as OutputLines cuts them, then its result.
 */
export function parseWhole<Result>(text: string, parser: LineParser<Result>): Result {
  let from = 0;
  for (let newline = text.indexOf('\n'); newline >= 0; newline = text.indexOf('\n', from)) {
    parser.push(text.slice(from, Math.min(newline, from + MAX_LINE_CHARS)));
    from = newline + 1;
  }
  parser.push(text.slice(from, from + MAX_LINE_CHARS));
  return parser.end();
}
