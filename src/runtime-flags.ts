// V8 flags the exporter sets for itself before anything else is loaded (main.ts imports this
// module first), so that they hold however it is started, `node dist/main.js` included.
//
// --no-opt: V8's optimizing compiler (TurboFan) is of no use to an exporter that wakes a few times
// a minute: its work is a few thousand short calls per scrape, which run well enough in V8's
// baseline tiers, while TurboFan kept compiling them again on its worker threads (a fifth of all
// CPU in a profile of the idle process) and, while the dependencies load, pages in about 8 MiB of
// compiler code and data that stay resident. Measured with the flag, on the 8-device benchmark
// tree: the same CPU or less, 8 MiB less RSS (docs/benchmarks.md). Someone who passes their own
// choice (--opt, --turbofan, --max-opt) on the command line or in NODE_OPTIONS keeps it.
import { setFlagsFromString } from 'node:v8';

const given = [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/)];
if (!given.some((flag) => /^--(no-)?(opt|turbofan|sparkplug)$|^--max-opt\b|^--jitless$/.test(flag))) {
  setFlagsFromString('--no-opt');
  setFlagsFromString('--no-sparkplug');
}
setFlagsFromString('--semi-space-growth-factor=1');
