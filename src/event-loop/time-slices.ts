// Long work in time slices, so that the event loop is never held for long: at 120 000 switch ports
// a parse, a topology or an exposition is seconds of work, and a loop held that long answers no
// scrape and takes a command that ended meanwhile for one that ran past its time limit.
//
// Such work is written once, as a generator function that yields (nothing) wherever it may pause,
// every few hundred items of a loop (`pacer`), and returns its result. `inSlices` runs it a slice
// of about SLICE_MS at a time, letting timers, I/O and requests run between slices; `atOnce` runs
// it to its end now, which is what a pure function's synchronous wrapper, a test or a small input
// wants. The work itself knows nothing of time. Nothing of the project is imported here: every
// room may use it.
import { performance } from 'node:perf_hooks';

/** Work that may pause: a generator yielding where it can stop for a while, returning its result. */
export type Work<T> = Generator<void, T, void>;

/** How long one slice holds the event loop: a few of them (a parse beside a render) in one turn stay far below 100 ms. */
export const SLICE_MS = 10;

/** Items of a loop between two points where work may pause: a fraction of a millisecond of work. */
const ITEMS_PER_PAUSE = 256;

/**
 * A counter for a loop of work: true once every `every` calls, where the loop yields
 * (`if (pace()) yield;`).
 */
export function pacer(every = ITEMS_PER_PAUSE): () => boolean {
  let count = 0;
  return () => {
    count += 1;
    if (count < every) return false;
    count = 0;
    return true;
  };
}

/** Run work to its end now. */
export function atOnce<T>(work: Work<T>): T {
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
  }
}

/** The next turn of the event loop, after the I/O and the timers that are due. */
export function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * The time a turn of the event loop began for one kind of work: the first `start()` of a turn
 * starts it, every later call in the same turn gets the same time. A turn ends with its
 * `setImmediate` callbacks, which run after its callbacks and promise reactions and before the
 * turn that `nextTurn` resumes in.
 */
export class TurnClock {
  private turn: { start: number } | undefined;

  start(): number {
    if (this.turn === undefined) {
      const turn = { start: performance.now() };
      this.turn = turn;
      setImmediate(() => {
        if (this.turn === turn) this.turn = undefined;
      });
    }
    return this.turn.start;
  }
}

/**
 * Work in slices shares one slice per turn: work that ends and hands over to more work in the same
 * turn (one parse's end resolving the next step of a discovery, which starts another) began a
 * fresh slice each, and a discovery's steps held one turn for 30 ms that way, each within its 10.
 */
const SLICES = new TurnClock();

/** When this turn's slice began (`performance.now()`), for work that checks `sliceSpent` itself. */
export function sliceStart(): number {
  return SLICES.start();
}

/**
 * Run work a slice at a time, the event loop turning between slices; resolves to its result. Each
 * turn it does at least one step of the work, however much of the turn's slice others spent.
 */
export async function inSlices<T>(work: Work<T>): Promise<T> {
  let start = sliceStart();
  for (;;) {
    const step = work.next();
    if (step.done) return step.value;
    if (sliceSpent(start)) {
      await nextTurn();
      start = sliceStart();
    }
  }
}

/** Whether the slice that began at `start` (`sliceStart()`) is spent. */
export function sliceSpent(start: number): boolean {
  return performance.now() - start >= SLICE_MS;
}
