// Node.js flags measured beside the default ones by the benchmark's "with flags" runs
// (bench/sections/idle.mjs, docs/benchmarks.md): a young generation of at most 1 MiB per
// semi-space, and one V8 platform worker thread instead of one per core.
export const NODE_FLAGS = ['--max-semi-space-size=1', '--v8-pool-size=1'];
