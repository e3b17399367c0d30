// A CommandRunner that answers from outputs recorded earlier from the real tools (the bundled demo
// fabric, demo/fabric/): the exporter runs exactly as on a fabric, through the one runner, and only
// the tools' answers come from files. A recording directory holds `commands.tsv` (a file stem, a
// tab, the command line as run, with a discovery cache path written `<cache>`: each cycle names a
// new private file), each stem's `.stdout`, `.stderr` and `.exit`, and `topology.cache`, the file
// `ibnetdiscover --cache` wrote, which a replayed `ibnetdiscover --cache FILE` writes to FILE as the
// tool does. A command that was not recorded fails as a tool that cannot start would, naming the
// command line, so that a new command of the exporter shows as a read error, not as silence.
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
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

export class RecordedRunner<Tool extends string> implements CommandRunner<Tool> {
  private readonly table: Map<string, string>;

  constructor(private readonly directory: string) {
    this.table = parseRecordedCommands(readFileSync(path.join(directory, 'commands.tsv'), 'utf8'));
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
    return {
      ...base,
      outcome: 'exited',
      exitCode: Number(readFileSync(file('exit'), 'utf8').trim()),
      stdout: readFileSync(file('stdout'), 'utf8'),
      stderr: readFileSync(file('stderr'), 'utf8'),
    };
  }
}
