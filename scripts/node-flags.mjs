// Node.js flags measured beside the default ones by the benchmark's "with flags" runs
// (bench/sections/idle.mjs, docs/benchmarks.md): one V8 platform worker thread instead of one per
// core (8 threads instead of 11, fewer context switches). The young generation needs no flag: the
// exporter keeps it from growing itself (src/runtime-flags.ts), and --max-semi-space-size=1, once
// here, then measured the same RSS and about 2 ticks more start-up CPU.
export const NODE_FLAGS = ['--v8-pool-size=1'];
