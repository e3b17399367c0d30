// A CommandRunner that answers from outputs recorded earlier from the real tools (the bundled demo
// fabric, demo/fabric/): the exporter runs exactly as on a fabric, through the one runner, and only
// the tools' answers come from files. A recording directory holds `commands.tsv` (a file stem, a
// tab, the command line as run, with a discovery cache path written `<cache>`: each cycle names a
// new private file), each stem's `.stdout`, `.stderr` and `.exit`, and `topology.cache`, the file
// `ibnetdiscover --cache` wrote, which a replayed `ibnetdiscover --cache FILE` writes to FILE as the
// tool does. A command that was not recorded fails as a tool that cannot start would, naming the
// command line, so that a new command of the exporter shows as a read error, not as silence.
//
// Counters move: a stem may have a second recording, `<stem>.later.stdout`, made `later.seconds`
// after the first on the same fabric. Each counter value (`[Name == value]`, as ibqueryerrors prints
// them) that grew between the two keeps growing at that rate from the runner's start, so rates
// (congestion, errors, traffic) show in the dashboards as on a live fabric. Values that did not
// grow, and outputs whose two recordings differ in anything but counter values, stay as recorded.
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import type { CommandResult, CommandRunner } from './command-runner.js';

/** Arguments followed by a cycle's private file, written `<cache>` in commands.tsv. */
const CACHE_OPTIONS = new Set(['--cache', '--load-cache']);

/** A command line as commands.tsv records it. */
export function recordedCommandLine(command: string, args: readonly string[]): string {
  return [command, ...args.map((arg, i) => (i > 0 && CACHE_OPTIONS.has(args[i - 1]!) ? '<cache>' : arg))].join(' ');
}

/** commands.tsv: command line → stem. */
export function parseRecordedCommands(text: string): Map<string, string> {
  const table = new Map<string, string>();
  for (const line of text.split('\n')) {
    const tab = line.indexOf('\t');
    if (tab > 0) table.set(line.slice(tab + 1), line.slice(0, tab));
  }
  return table;
}

const COUNTER_VALUE = /(== )(\d{1,20})/g;
/** A counter value with ibqueryerrors' human-readable figure after it, which the exporter does not read. */
const COUNTER_ITEM = /== \d{1,20}(?: \([^)]*\))?/g;

/**
 * `first` with each counter value that grew by `later` moved on by `fraction` of that growth (1: as
 * in `later`, 2: as much again); `first` itself when the two differ in anything but counter values.
 */
export function grownOutput(first: string, later: string, fraction: number): string {
  if (first.replace(COUNTER_ITEM, '') !== later.replace(COUNTER_ITEM, '')) return first;
  const grown = [...later.matchAll(COUNTER_VALUE)].map((match) => BigInt(match[2]!));
  const scale = BigInt(Math.max(0, Math.floor(fraction * 1e6)));
  let i = 0;
  return first.replace(COUNTER_VALUE, (_, prefix: string, digits: string) => {
    const start = BigInt(digits);
    const end = grown[i++]!;
    return `${prefix}${end > start ? start + ((end - start) * scale) / 1_000_000n : start}`;
  });
}

export class RecordedRunner<Tool extends string> implements CommandRunner<Tool> {
  private readonly table: Map<string, string>;
  /** Seconds between a stem's two recordings; undefined when the recordings have no later round. */
  private readonly laterSeconds: number | undefined;
  private readonly started: number;

  /** `now`: milliseconds, performance.now() by default (a test moves time on). */
  constructor(
    private readonly directory: string,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.table = parseRecordedCommands(readFileSync(path.join(directory, 'commands.tsv'), 'utf8'));
    const later = path.join(directory, 'later.seconds');
    const seconds = existsSync(later) ? Number(readFileSync(later, 'utf8').trim()) : NaN;
    this.laterSeconds = seconds > 0 ? seconds : undefined;
    this.started = now();
  }

  async run(command: Tool, args: readonly string[]): Promise<CommandResult<Tool>> {
    const line = recordedCommandLine(command, args);
    const stem = this.table.get(line);
    const base = { command, args, durationMs: 0 };
    if (stem === undefined) {
      return { ...base, outcome: 'spawn-error', exitCode: undefined, stdout: '', stderr: `no recording of "${line}" in ${this.directory}` };
    }
    const file = (extension: string): string => path.join(this.directory, `${stem}.${extension}`);
    const cacheAt = args.indexOf('--cache');
    const cache = path.join(this.directory, 'topology.cache');
    if (cacheAt >= 0 && args[cacheAt + 1] !== undefined && existsSync(cache)) copyFileSync(cache, args[cacheAt + 1]!);
    let stdout = readFileSync(file('stdout'), 'utf8');
    if (this.laterSeconds !== undefined && existsSync(file('later.stdout'))) {
      const elapsed = (this.now() - this.started) / 1000;
      stdout = grownOutput(stdout, readFileSync(file('later.stdout'), 'utf8'), elapsed / this.laterSeconds);
    }
    return {
      ...base,
      outcome: 'exited',
      exitCode: Number(readFileSync(file('exit'), 'utf8').trim()),
      stdout,
      stderr: readFileSync(file('stderr'), 'utf8'),
    };
  }
}
