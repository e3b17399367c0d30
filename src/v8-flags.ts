// Which V8 flags the exporter sets for itself (src/runtime-flags.ts says why each), given the
// flags it was started with (command line and NODE_OPTIONS): a flag the user chose wins.

/** The flags to set, in order, for a process started with `given`. */
export function chooseV8Flags(given: readonly string[]): string[] {
  const flags: string[] = [];
  if (!given.some((flag) => /^--(no-)?(opt|turbofan|sparkplug)$|^--max-opt\b|^--jitless$/.test(flag))) flags.push('--no-opt', '--no-sparkplug');
  flags.push('--semi-space-growth-factor=1');
  if (!given.some((flag) => /^--(no-)?memory-reducer/.test(flag))) flags.push('--memory-reducer-single-gc');
  if (!given.some((flag) => /^--(no-)?optimize[-_]for[-_]size$/.test(flag))) flags.push('--optimize-for-size');
  if (!given.some((flag) => /^--(no-)?(liftoff|wasm[-_]tier[-_]up|wasm[-_]dynamic[-_]tiering)([-_]only)?$/.test(flag))) flags.push('--liftoff-only');
  return flags;
}
