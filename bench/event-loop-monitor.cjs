// Loaded into the exporter by the fabric-scale benchmark (`node --require bench/event-loop-monitor.cjs
// dist/main.js …`), not part of the exporter: how long its event loop was blocked. A 20 ms timer
// notes every gap past 100 ms (when it began, ms since the epoch, and how long it lasted), and
// perf_hooks' event-loop delay histogram gives the largest delay. Written to the file named by
// IBX_EVENT_LOOP_REPORT every 5 s and at exit, so that a run stopped by a signal keeps it.
//
// Blocks are counted from the event loop's first turn: before it, the program is still being
// loaded and run to its first wait (nothing listens yet, so no request can wait on it). That time
// is reported apart, as `startMs` (from this module's load to the first turn).
//
// Each block says where the main thread was meanwhile, from the kernel's /proc/thread-self/schedstat
// (read at every tick): `cpuMs` on a CPU (the exporter's own work, or V8's on that thread) and
// `waitMs` runnable but waiting for a CPU (other processes had them); the rest it slept (a system
// call, a page fault on a file). `processCpuMs`: the CPU of all its threads (GC helpers, zlib, libuv).
'use strict';
const { openSync, readSync, writeFileSync } = require('node:fs');
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
  // [ns on a CPU, ns waiting for one], or undefined where the kernel has no schedstat. The file
  // is opened once (here, on the main thread) and read again from its start at each tick: the
  // monitor's cost is in the exporter's CPU the benches report.
  let schedFd;
  try {
    schedFd = openSync('/proc/thread-self/schedstat', 'r');
  } catch {}
  const schedBuffer = Buffer.alloc(128);
  const schedstat = () => {
    if (schedFd === undefined) return undefined;
    const [cpu, wait] = schedBuffer.toString('latin1', 0, readSync(schedFd, schedBuffer, 0, schedBuffer.length, 0)).split(' ');
    return [Number(cpu), Number(wait)];
  };
  let lastSched = schedstat();
  let lastUsage = process.cpuUsage();
  // The first turn, seen by whichever comes first: this timer (due by then if start-up took 20 ms) or setImmediate.
  const firstTurn = (now) => {
    last = now;
    startMs = Math.round(now - loaded);
    lastSched = schedstat();
    lastUsage = process.cpuUsage();
    histogram.reset();
  };
  setImmediate(() => startMs === undefined && firstTurn(performance.now()));
  setInterval(() => {
    const now = performance.now();
    if (startMs === undefined) return firstTurn(now);
    const late = now - last - TICK_MS;
    const sched = schedstat();
    const usage = process.cpuUsage();
    if (late > 100) {
      const block = { at: Math.round(Date.now() - late), ms: Math.round(late) };
      if (sched && lastSched) {
        block.cpuMs = Math.round((sched[0] - lastSched[0]) / 1e6);
        block.waitMs = Math.round((sched[1] - lastSched[1]) / 1e6);
      }
      block.processCpuMs = Math.round((usage.user - lastUsage.user + usage.system - lastUsage.system) / 1000);
      // `end`: the monotonic clock in µs, as V8's CPU profiles (--cpu-prof) time their samples.
      block.end = Number(process.hrtime.bigint() / 1000n);
      blocks.push(block);
    }
    last = now;
    lastSched = sched;
    lastUsage = usage;
  }, TICK_MS).unref();
  const write = () => writeFileSync(report, JSON.stringify({ maxMs: histogram.max / 1e6, startMs, blocks }));
  setInterval(write, 5000).unref();
  process.on('exit', write);
}
