// Loaded into the exporter by the fabric-scale benchmark (`node --require bench/event-loop-monitor.cjs
// dist/main.js …`), not part of the exporter: how long its event loop was blocked. A 20 ms timer
// notes every gap past 100 ms (when it began, ms since the epoch, and how long it lasted), and
// perf_hooks' event-loop delay histogram gives the largest delay. Written to the file named by
// IBX_EVENT_LOOP_REPORT every 5 s and at exit, so that a run stopped by a signal keeps it.
//
// Blocks are counted from the event loop's first turn: before it, the program is still being
// loaded and run to its first wait (nothing listens yet, so no request can wait on it). That time
// is reported apart, as `startMs` (from this module's load to the first turn).
'use strict';
const { writeFileSync } = require('node:fs');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');

const report = process.env.IBX_EVENT_LOOP_REPORT;
if (report) {
  const TICK_MS = 20;
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const blocks = [];
  const loaded = performance.now();
  let startMs;
  let last = loaded;
  // The first turn, seen by whichever comes first: this timer (due by then if start-up took 20 ms) or setImmediate.
  const firstTurn = (now) => {
    last = now;
    startMs = Math.round(now - loaded);
    histogram.reset();
  };
  setImmediate(() => startMs === undefined && firstTurn(performance.now()));
  setInterval(() => {
    const now = performance.now();
    if (startMs === undefined) return firstTurn(now);
    const late = now - last - TICK_MS;
    // `end`: the monotonic clock in µs, as V8's CPU profiles (--cpu-prof) time their samples.
    if (late > 100) blocks.push({ at: Math.round(Date.now() - late), ms: Math.round(late), end: Number(process.hrtime.bigint() / 1000n) });
    last = now;
  }, TICK_MS).unref();
  const write = () => writeFileSync(report, JSON.stringify({ maxMs: histogram.max / 1e6, startMs, blocks }));
  setInterval(write, 5000).unref();
  process.on('exit', write);
}
