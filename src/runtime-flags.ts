// V8 flags the exporter sets for itself before anything else is loaded (main.ts and cli.ts import
// this module first), so that they hold however it is started, `node dist/main.js` included, and
// before the bundle is compiled: a code cache holds only for the flags it was made with.
//
// --no-opt: V8's optimizing compiler (TurboFan) is of no use to an exporter that wakes a few times
// a minute: its work is a few thousand short calls per scrape, which run well enough in V8's
// baseline tiers, while TurboFan kept compiling them again on its worker threads (a fifth of all
// CPU in a profile of the idle process) and, while the dependencies load, pages in about 8 MiB of
// compiler code and data that stay resident. Measured with the flag, on the 8-device benchmark
// tree: the same CPU or less, 8 MiB less RSS (docs/benchmarks.md). Someone who passes their own
// choice (--opt, --turbofan, --max-opt) on the command line or in NODE_OPTIONS keeps it.
// --memory-reducer-single-gc: about 8 s after start, when allocation has slowed, V8's memory
// reducer shrinks the heap with up to three full collections in a row. The first does the work
// (heap 11 -> 8.6 MiB on the 8-device tree); the other two gave back about 1 MiB for some 25 ms of
// CPU, a quarter of all the exporter's CPU from its first answer over the next two minutes (15-16
// against 10-13 ticks of 10 ms, 8 scrapes 15 s apart; RSS 0.6-1 MiB higher; docs/benchmarks.md).
// Someone who says anything about the memory reducer keeps their choice.
// --optimize-for-size: V8 lets the old generation grow by at least 8 MiB past what was live at the
// last full collection before it collects again. Each snapshot lives one collection interval,
// long enough to be moved there, and then is garbage: about 95 KB a reading on the 8-device tree,
// so that at a scrape every 15 s RSS rose from 54 to 59 MiB in the first 15 minutes, towards the
// limit. With the flag V8 grows the heap in steps of 2 MiB: RSS stayed at 54-55 MiB over 30
// minutes, for 0-9 % more CPU in the runs measured, about 0.2 s an hour at 8 devices: the full
// collections come more often (docs/benchmarks.md, "Memory over time").
// A user who passes --optimize-for-size or --no-optimize-for-size keeps their choice.
// --liftoff-only: the one WebAssembly module the exporter runs is bcrypt (hash-wasm, for basic
// auth's password checks, server/password-checks.ts). V8's baseline WebAssembly compiler checks a
// password as fast as TurboFan's tier-up does (51 against 52 ms at cost 10), and without TurboFan
// the exporter on the demo host kept its RSS after 40 checks (54.6 then 54.3 MiB) where it grew by
// 5.1 MiB (docs/benchmarks.md, "A flood of wrong passwords"). A user who says anything about
// Liftoff or WebAssembly tiering keeps their choice.
import { setFlagsFromString } from 'node:v8';
import { chooseV8Flags } from './v8-flags.js';

for (const flag of chooseV8Flags([...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)])) setFlagsFromString(flag);
