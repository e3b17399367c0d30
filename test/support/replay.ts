// A CommandRunner that replays outputs recorded from the real tools on the simulated fabric:
// test/fixtures/<tools>/<scenario>/ holds commands.tsv (a file stem, a tab, the command line) and
// each stem's .stdout, .stderr and .exit. Command lines are matched as recorded: the per-MAD
// timeout (`-t N`, which follows --diag.timeout) left out, discovery cache paths written `<cache>`;
// a replayed `ibnetdiscover --cache FILE` also writes the scenario's recorded cache to FILE, as the
// tool does. Scenarios are searched in order.
import { copyFileSync, existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandResult, CommandRunner } from '../../src/sources/command-runner.js';
import { replay } from '../../synthetic/fabric-replay.js';
import { readRecording, type Recording } from './recordings.js';

export const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

/** Recordings of the diag collectors' tools (fixtures/diag) or fabric mode's (fixtures/fabric-recordings). */
export type Recorded = 'diag' | 'fabric';
const FOLDER: Record<Recorded, string> = { diag: 'diag', fabric: 'fabric-recordings' };

export function recording(tools: Recorded, scenario: string, stem: string): Recording {
  return readRecording(path.join(FIXTURES, FOLDER[tools], scenario, stem));
}

/** The recorded command lines of a scenario: line → stem. */
export function recordedCommands(tools: Recorded, scenario: string): Map<string, string> {
  const table = readFileSync(path.join(FIXTURES, FOLDER[tools], scenario, 'commands.tsv'), 'utf8');
  return new Map(
    table
      .split('\n')
      .filter(Boolean)
      .map((line) => {
        const [stem, command] = line.split('\t');
        return [command!, stem!];
      }),
  );
}

/** A command line as recorded: `-t N` left out, cache paths as `<cache>`. */
export function recordedLine(command: string, args: readonly string[]): string {
  const words = [command];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-t') i++;
    else if (args[i] === '--cache' || args[i] === '--load-cache') words.push(args[i]!, '<cache>'), i++;
    else words.push(args[i]!);
  }
  return words.join(' ');
}

export function result<Tool extends string>(
  command: Tool,
  args: readonly string[],
  fields: Partial<CommandResult<Tool>>,
): CommandResult<Tool> {
  return { command, args, outcome: 'exited', exitCode: 0, stdout: '', stderr: '', durationMs: 1, ...fields };
}

/** What `ibnetdiscover --cache FILE` does besides printing: write the scenario's recorded cache to FILE. */
export function writeRecordedCache(scenario: string, args: readonly string[]): void {
  const cacheAt = args.indexOf('--cache');
  const cache = path.join(FIXTURES, 'fabric-recordings', scenario, 'topology.cache');
  if (cacheAt >= 0 && existsSync(cache)) copyFileSync(cache, args[cacheAt + 1]!);
}

export type Override<Tool extends string> = (command: Tool, args: readonly string[]) => CommandResult<Tool> | undefined;

export class ReplayRunner<Tool extends string> implements CommandRunner<Tool> {
  /** Every command asked for, as recorded lines, in order. */
  readonly calls: string[] = [];
  /** Every command asked for, as run. */
  readonly rawCalls: (readonly string[])[] = [];
  private scenarios: readonly string[] = [];

  constructor(
    private readonly tools: Recorded,
    scenarios: string | readonly string[],
    public override?: Override<Tool>,
  ) {
    this.use(scenarios);
  }

  /** Switch to other recordings (the fabric changed). */
  use(scenarios: string | readonly string[]): void {
    this.scenarios = typeof scenarios === 'string' ? [scenarios] : scenarios;
  }

  async run(command: Tool, args: readonly string[]): Promise<CommandResult<Tool>> {
    const line = recordedLine(command, args);
    this.calls.push(line);
    this.rawCalls.push([command, ...args]);
    const overridden = this.override?.(command, args);
    if (overridden) return overridden;
    if (this.tools === 'fabric') {
      // Recorded or generated fabrics (a name under fixtures/fabric-recordings, or an absolute path), as the
      // fake tools replay them: a sweep given a shard's pruned cache prints that shard's nodes.
      const replayed = replay(
        this.scenarios.map((scenario) => path.resolve(FIXTURES, 'fabric-recordings', scenario)),
        command,
        args,
      );
      if (replayed)
        return result(command, args, { stdout: replayed.stdout.toString('utf8'), stderr: replayed.stderr, exitCode: replayed.exitCode });
    }
    for (const scenario of this.tools === 'fabric' ? [] : this.scenarios) {
      const stem = recordedCommands(this.tools, scenario).get(line);
      if (stem !== undefined) return result(command, args, recording(this.tools, scenario, stem));
    }
    // ibsim, where the diag recordings were made, does not implement PortSamplesControl: a
    // `perfquery -c` nobody recorded answers as it does there.
    if (command === 'perfquery' && args.includes('-c')) {
      return result(command, args, {
        stdout: '',
        stderr: 'ibwarn: [1232] mad_rpc: _do_madrpc failed; dport (Lid 1)\nperfquery: iberror: failed: sampctlquery\n',
        exitCode: 255,
      });
    }
    throw new Error(`no recording of "${line}" in ${this.scenarios.join(', ')}`);
  }
}
