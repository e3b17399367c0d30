// The fake tools' program: `node replay-tool.mjs <scenario dir> <tool> [args…]` prints what the
// tool printed in the scenario for these arguments and exits with its exit code (see
// ../fabric-replay.ts). fake-tools.ts bundles it and writes one wrapper per tool. With
// FAKE_TOOLS_LOG set, each run appends `<start ms>\t<end ms>\t<command line>\tbytes=<n>[ nodes=<n>]`.
import { appendFileSync } from 'node:fs';
import { normalisedCommand, replay } from '../fabric-replay.js';

const started = Date.now();

const [dir, tool, ...args] = process.argv.slice(2);
if (dir === undefined || tool === undefined) {
  process.stderr.write('usage: replay-tool <scenario dir> <tool> [args…]\n');
  process.exitCode = 2;
} else {
  const replayed = replay([dir], tool, args);
  if (!replayed) {
    process.stderr.write(`${tool}: no recording of "${normalisedCommand(tool, args)}" in ${dir}\n`);
    process.exitCode = 255;
  } else {
    process.stderr.write(replayed.stderr);
    // Writes to a pipe or a file are synchronous: the output is out before the process ends.
    process.stdout.write(replayed.stdout);
    process.exitCode = replayed.exitCode;
    const log = process.env.FAKE_TOOLS_LOG;
    if (log) {
      // A sweep's summary says how many nodes it printed.
      const nodes = /^## Summary: (\d+) nodes checked/m.exec(replayed.stdout.subarray(-400).toString('latin1'))?.[1];
      appendFileSync(
        log,
        `${started}\t${Date.now()}\t${[tool, ...args].join(' ')}\tbytes=${replayed.stdout.length}${nodes === undefined ? '' : ` nodes=${nodes}`}\n`,
      );
    }
  }
}
