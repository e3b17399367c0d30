// Long work in time slices: the same result as run at once, and the event loop turning between
// slices while it runs.
import { describe, expect, it } from 'vitest';
import { atOnce, inSlices, nextTurn, pacer, TurnClock, type Work } from '../../src/event-loop/time-slices.js';
import { countTurns } from '../support/event-loop-turns.js';

/** Holds the event loop for `ms` milliseconds. */
function spin(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/** Sums 0..n-1, pausing every 256 items, spending about `microseconds` per item. */
function* sum(n: number, microseconds = 0): Work<number> {
  const pace = pacer();
  let total = 0;
  for (let i = 0; i < n; i++) {
    if (microseconds > 0) {
      const until = process.hrtime.bigint() + BigInt(microseconds * 1000);
      while (process.hrtime.bigint() < until);
    }
    total += i;
    if (pace()) yield;
  }
  return total;
}

describe('time slices', () => {
  it('pacer says true once every `every` calls', () => {
    const pace = pacer(3);
    expect(Array.from({ length: 7 }, () => pace())).toEqual([false, false, true, false, false, true, false]);
  });

  it('atOnce and inSlices give the same result', async () => {
    expect(atOnce(sum(10_000))).toBe(49_995_000);
    expect(await inSlices(sum(10_000))).toBe(49_995_000);
  });

  it('atOnce holds the event loop to the end: no turn meanwhile', () => {
    const turns = countTurns();
    atOnce(sum(20_000, 5));
    expect(turns.stop()).toBe(0);
  });

  it('inSlices lets the event loop turn between slices: work of 100 ms or more turns it five times or more', async () => {
    const turns = countTurns();
    // 20 000 items of at least 5 µs: at least 100 ms, slices of 10 ms.
    expect(await inSlices(sum(20_000, 5))).toBe(199_990_000);
    expect(turns.stop()).toBeGreaterThanOrEqual(5);
  });

  it('a timer due meanwhile runs before the work ends', async () => {
    let fired = false;
    setTimeout(() => (fired = true), 1);
    let firedBeforeEnd = false;
    await inSlices(
      (function* (): Work<void> {
        yield* sum(20_000, 5);
        firedBeforeEnd = fired;
      })(),
    );
    expect(firedBeforeEnd).toBe(true);
  });

  it("a turn clock gives every call of one turn that turn's start, and a new start in the next", async () => {
    const clock = new TurnClock();
    const first = clock.start();
    spin(2);
    await Promise.resolve();
    expect(clock.start()).toBe(first);
    await nextTurn();
    expect(clock.start()).toBeGreaterThan(first);
  });

  it('work that starts when other work ends in the same turn shares its slice: a turn between its first and second step', async () => {
    const events: string[] = [];
    // 8 ms of a slice of 10, then the second work's first step of 4 ms: its slice is spent.
    function* first(): Work<void> {
      spin(4);
      yield;
      spin(4);
    }
    function* second(): Work<void> {
      spin(4);
      events.push('second, step 1');
      setImmediate(() => events.push('a turn'));
      yield;
      events.push('second, step 2');
    }
    // A turn of its own to begin in: the slice of a turn before it (another test's) is over.
    await nextTurn();
    await inSlices(first()).then(() => inSlices(second()));
    expect(events).toEqual(['second, step 1', 'a turn', 'second, step 2']);
  });

  it('work resumed in a turn another work already spent still takes a step: none waits for ever', async () => {
    const events: string[] = [];
    function* long(): Work<void> {
      for (let i = 0; i < 5; i++) {
        spin(12);
        yield;
      }
    }
    function* short(): Work<void> {
      events.push('step 1');
      yield;
      events.push('step 2');
      yield;
      events.push('step 3');
    }
    await Promise.all([inSlices(long()), inSlices(short())]);
    expect(events).toEqual(['step 1', 'step 2', 'step 3']);
  });
});
