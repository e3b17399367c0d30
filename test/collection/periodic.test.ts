import { afterEach, describe, expect, it, vi } from 'vitest';
import { Periodic } from '../../src/collection/periodic.js';

afterEach(() => {
  vi.useRealTimers();
});

/**
 * A Periodic every 1000 ms (deadline 5000 ms) whose runs take `runMs`: the times they started, and
 * the most that ran at once. An overrun or an error fails the test.
 */
function recordingStarts(runMs: number): { periodic: Periodic; starts: number[]; maxRunning: () => number } {
  const starts: number[] = [];
  let running = 0;
  let most = 0;
  const periodic = new Periodic({
    intervalMs: 1000,
    deadlineMs: 5000,
    task: async () => {
      starts.push(Date.now());
      running++;
      most = Math.max(most, running);
      if (runMs > 0) await new Promise((resolve) => setTimeout(resolve, runMs));
      running--;
    },
    onOverrun: () => {
      throw new Error('no overrun expected');
    },
    onError: (error) => {
      throw error;
    },
  });
  return { periodic, starts, maxRunning: () => most };
}

describe('Periodic', () => {
  it('runs at once, then every interval, never overlapping', async () => {
    vi.useFakeTimers();
    const { periodic, starts, maxRunning } = recordingStarts(2500); // runs longer than the interval
    const t0 = Date.now();
    periodic.start();
    await vi.advanceTimersByTimeAsync(10_000);
    const stopping = periodic.stop();
    await vi.advanceTimersByTimeAsync(3000); // let the run in progress finish
    await stopping;
    expect(maxRunning()).toBe(1);
    // A run that took 2.5 s is followed at once by the next (within a timer tick): 0, 2.5, 5, 7.5 s.
    expect(starts[0]).toBe(t0);
    const gaps = starts.slice(1).map((t, i) => t - starts[i]!);
    expect(gaps).toHaveLength(3);
    for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(2500), expect(gap).toBeLessThan(2510);
  });

  it('cuts off a run at its deadline, aborts its signal and reports it', async () => {
    vi.useFakeTimers();
    const overruns: number[] = [];
    let aborted = false;
    const periodic = new Periodic({
      intervalMs: 1000,
      task: (signal) =>
        new Promise<void>(() => {
          signal.addEventListener('abort', () => (aborted = true));
        }),
      onOverrun: (ms) => overruns.push(ms),
      onError: () => undefined,
    });
    const run = periodic.runNow();
    await vi.advanceTimersByTimeAsync(1000);
    await run;
    expect(overruns).toEqual([1000]);
    expect(aborted).toBe(true);
    await periodic.stop();
  });

  it('reports a task that throws and keeps going', async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const periodic = new Periodic({
      intervalMs: 1000,
      task: async () => {
        calls++;
        throw new Error('boom');
      },
      onOverrun: () => undefined,
      onError: (error) => errors.push(error),
    });
    await periodic.runNow();
    await periodic.runNow();
    expect(calls).toBe(2);
    expect(errors.map((e) => (e as Error).message)).toEqual(['boom', 'boom']);
  });

  it('postpones the next run to one interval from now, keeping one timer', async () => {
    vi.useFakeTimers();
    const { periodic, starts } = recordingStarts(0);
    periodic.postpone(); // before start: nothing to postpone
    const t0 = Date.now();
    periodic.start();
    await vi.advanceTimersByTimeAsync(600);
    periodic.postpone(); // due at 1000, now at 1600
    await vi.advanceTimersByTimeAsync(900);
    expect(starts.map((t) => t - t0)).toEqual([0]);
    await vi.advanceTimersByTimeAsync(100);
    expect(starts.map((t) => t - t0)).toEqual([0, 1600]);
    periodic.postpone();
    periodic.postpone(); // twice: still one run, one interval after the last call
    await vi.advanceTimersByTimeAsync(3000);
    expect(starts.map((t) => t - t0)).toEqual([0, 1600, 2600, 3600, 4600]);
    await periodic.stop();
    periodic.postpone(); // after stop: nothing runs again
    await vi.advanceTimersByTimeAsync(5000);
    expect(starts).toHaveLength(5);
  });

  it('does not postpone a run in progress', async () => {
    vi.useFakeTimers();
    const { periodic, starts } = recordingStarts(500);
    const t0 = Date.now();
    periodic.start();
    await vi.advanceTimersByTimeAsync(200);
    periodic.postpone(); // the first run is under way: the next stays due at 1000
    await vi.advanceTimersByTimeAsync(1400); // to 1600: the second run is over, the third due at 2000
    expect(starts.map((t) => t - t0)).toEqual([0, 1000]);
    await periodic.stop();
  });
});
