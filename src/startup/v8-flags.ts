// The Node.js and V8 flags of the exporter, chosen in one place:
//   - NODE_FLAGS: what the launchers pass `node` (npm start, the systemd unit, the Dockerfile, the
//     release's binary): one V8 platform worker thread instead of one per core (8 threads
//     instead of 11, fewer context switches). The young generation needs no flag: the exporter
//     keeps it from growing itself (below), and --max-semi-space-size=1, once here, then measured
//     the same RSS and about 2 ticks more start-up CPU (docs/benchmarks.md, "Idle cost").
//   - chooseV8Flags: what the exporter sets for itself at start (set-v8-flags.ts applies them),
//     given the flags it was started with (a flag the user chose wins) and what it will run.
//
// --no-opt --no-sparkplug, on a host: V8's optimizing compiler (TurboFan) is of no use to an
// exporter that wakes a few times a minute: its work is a few thousand short calls per scrape,
// which run well enough in V8's baseline tiers, while TurboFan kept compiling them again on its
// worker threads (a fifth of all CPU in a profile of the idle process) and, while the dependencies
// load, pages in about 8 MiB of compiler code and data that stay resident. Measured with the flag,
// on the 8-device benchmark tree: the same CPU or less, 8 MiB less RSS (docs/benchmarks.md).
// In fabric mode the other way round: a ports cycle parses and renders hundreds of thousands of
// lines, about 3 times slower in the interpreter (0.39 against 0.13 s a render at 1 918 nodes), so
// the compilers stay on.
// --memory-reducer-single-gc: about 8 s after start, when allocation has slowed, V8's memory
// reducer shrinks the heap with up to three full collections in a row. The first does the work
// (heap 11 -> 8.6 MiB on the 8-device tree); the other two gave back about 1 MiB for some 25 ms of
// CPU, a quarter of all the exporter's CPU from its first answer over the next two minutes (15-16
// against 10-13 ticks of 10 ms, 8 scrapes 15 s apart; RSS 0.6-1 MiB higher; docs/benchmarks.md).
// --optimize-for-size: V8 lets the old generation grow by at least 8 MiB past what was live at the
// last full collection before it collects again. Each snapshot lives one collection interval,
// long enough to be moved there, and then is garbage: about 95 KB a reading on the 8-device tree,
// so that at a scrape every 15 s RSS rose from 54 to 59 MiB in the first 15 minutes, towards the
// limit. With the flag V8 grows the heap in steps of 2 MiB: RSS stayed at 54-55 MiB over 30
// minutes, for 0-9 % more CPU in the runs measured, about 0.2 s an hour at 8 devices: the full
// collections come more often (docs/benchmarks.md, "Memory over time"). Not in fabric mode: at
// 30 000 switch ports those collections held the event loop for 0.2-0.3 s and cost 50 % more CPU
// (5.7 against 3.8 s an interval) for 10 % less RSS (655 against 729 MiB; docs/benchmarks.md,
// "Fabric at AI-cluster scale").
// --heap-growing-percent=25, in fabric mode: after each full collection V8 lets the old generation
// grow to up to four times what was live before it collects again (its heap limit is past 2 GiB on
// a machine with memory), and a ports cycle makes tens of MiB of garbage: one shard of four of the
// 122 880-port fabric peaked at 344-368 MiB RSS with 105-132 MiB live. Growing by a quarter, it
// peaked at 243 MiB at its first cycle and 304 MiB over the next (docs/benchmarks.md, "One shard of
// four, third pass"), for the same CPU per cycle. V8 reads the flag each time it sets the next
// limit, so setting it at start is as good as on the command line. A user's own choice wins.
// --liftoff-only: the one WebAssembly module the exporter runs is bcrypt (hash-wasm, for basic
// auth's password checks, commands/serve/password-checks.ts). V8's baseline WebAssembly compiler
// checks a password as fast as TurboFan's tier-up does (51 against 52 ms at cost 10), and without
// TurboFan the exporter on the demo host kept its RSS after 40 checks (54.6 then 54.3 MiB) where it
// grew by 5.1 MiB (docs/benchmarks.md, "A flood of wrong passwords"). A user who says anything about
// Liftoff or WebAssembly tiering keeps their choice.

export const NODE_FLAGS = ['--v8-pool-size=1'];

/**
 * glibc's malloc settings, in the environment the service launchers give the exporter (the systemd
 * unit, the packages' unit, the Dockerfile and the release's image): glibc reads them at start,
 * before any of the exporter's code runs, so the process cannot choose them for itself.
 * `mmap_threshold`: a block of 128 KiB or more comes from its own mapping, given back when freed.
 * Without it glibc raises that threshold to the largest block freed so far (a 21 MiB discovery
 * cache file, a MiB of exposition text), after which such blocks come from its heap, which it
 * gives back only when twice that much is free at its top: one shard of four of the 122 880-port
 * fabric held 52 MiB of malloc heap for 7 MiB of buffers in use. `arena_max=2`: the threads that
 * allocate (zlib's, the file system's, V8's) share two arenas instead of one per thread, 23 MiB
 * more there. With both: 13-20 MiB and 3-6 MiB, the same CPU per cycle (docs/benchmarks.md, "One
 * shard of four, third pass"). Ignored where the C library is not glibc.
 */
export const GLIBC_TUNABLES = 'glibc.malloc.arena_max=2:glibc.malloc.mmap_threshold=131072';

/** How far fabric mode's old generation may grow past what was live before V8 collects it again. */
export const FABRIC_HEAP_GROWING = '--heap-growing-percent=25';

// One memory-reducer collection: V8 11 (Node.js 20) spells it --memory-reducer-single-gc; V8 12
// added --memory-reducer-gc-count and V8 13 (Node.js 24) dropped the former, which it would refuse
// with "unrecognized flag" on every start.
export const MEMORY_REDUCER_ONE_GC =
  Number(process.versions.v8.split('.')[0]) >= 12 ? '--memory-reducer-gc-count=1' : '--memory-reducer-single-gc';

// What set-v8-flags.ts set, kept on globalThis: the bundle holds its own copy of these modules. V8
// takes a code cache only under the flags it was made with, and fabric mode sets others than a
// host: the cache's name (bundle-loader.ts) and the binary's choice of cache (sea-main.ts) need them.
const SET = Symbol.for('infiniband-exporter.v8-flags');
type State = { [SET]?: readonly string[] };

/** The V8 flags set-v8-flags.ts set in this process, in order; undefined where it has not run. */
export function v8FlagsSet(): readonly string[] | undefined {
  return (globalThis as State)[SET];
}

/** Records what set-v8-flags.ts set (once per process). */
export function recordV8FlagsSet(flags: readonly string[]): void {
  (globalThis as State)[SET] = flags;
}

/** What the exporter is about to run, as far as the flags depend on it. */
export interface Program {
  /** Fabric mode (--collector.fabric, or fabric.enabled in the config file). */
  fabric: boolean;
}

/** The V8 flags to set, in order, for a process started with `given` (command line and NODE_OPTIONS). */
export function chooseV8Flags(given: readonly string[], program: Program = { fabric: false }): string[] {
  const flags: string[] = [];
  const compilersChosen = given.some((flag) => /^--(no-)?(opt|turbofan|sparkplug)$|^--max-opt\b|^--jitless$/.test(flag));
  if (!compilersChosen && !program.fabric) flags.push('--no-opt', '--no-sparkplug');
  flags.push('--semi-space-growth-factor=1');
  if (!given.some((flag) => /^--(no-)?memory-reducer/.test(flag))) flags.push(MEMORY_REDUCER_ONE_GC);
  if (!program.fabric && !given.some((flag) => /^--(no-)?optimize[-_]for[-_]size$/.test(flag))) flags.push('--optimize-for-size');
  if (program.fabric && !given.some((flag) => /^--heap[-_]growing[-_]percent\b/.test(flag))) flags.push(FABRIC_HEAP_GROWING);
  if (!given.some((flag) => /^--(no-)?(liftoff|wasm[-_]tier[-_]up|wasm[-_]dynamic[-_]tiering)([-_]only)?$/.test(flag)))
    flags.push('--liftoff-only');
  return flags;
}

/**
 * Whether the exporter's own arguments ask for fabric mode: the last of --collector.fabric,
 * --collector.fabric=<bool> and --no-collector.fabric, else `fabric.enabled` in the config file
 * they name (read with `readConfig`; a file that cannot be read or parsed says no: the program
 * reports it properly a moment later).
 */
export function asksForFabricMode(argv: readonly string[], readConfig: (file: string) => unknown): boolean {
  let switched: boolean | undefined;
  let config: string | undefined;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--collector.fabric' || arg === '--collector.fabric=true') switched = true;
    else if (arg === '--no-collector.fabric' || arg === '--collector.fabric=false') switched = false;
    else if (arg === '--config.file') config = argv[++i];
    else if (arg.startsWith('--config.file=')) config = arg.slice('--config.file='.length);
  }
  if (switched !== undefined) return switched;
  if (config === undefined) return false;
  try {
    const file = readConfig(config) as { fabric?: { enabled?: unknown } } | null;
    return file?.fabric?.enabled === true;
  } catch {
    return false;
  }
}
