// A CommandRunner that replays outputs recorded from the real tools on the simulated fabric
// (test/fixtures/diag/<scenario>/: commands.tsv maps a file stem to the command line; the stem's
// .stdout, .stderr and .exit files hold what the tool printed and its exit code).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CommandResult, CommandRunner } from '../../src/sources/command-runner.js';
import type { DiagCommand } from '../../src/model/snapshot.js';
import { readRecording, type Recording } from '../support/recordings.js';

export type { Recording };

export const DIAG_FIXTURES = fileURLToPath(new URL('../fixtures/diag/', import.meta.url));

export function recording(scenario: string, stem: string): Recording {
  return readRecording(path.join(DIAG_FIXTURES, scenario, stem));
}

/** The recorded command lines of scenarios, the first scenario that has a command wins: line → [scenario, stem]. */
function commandsOf(scenarios: readonly string[]): Map<string, [string, string]> {
  const commands = new Map<string, [string, string]>();
  for (const scenario of scenarios) {
    const table = readFileSync(path.join(DIAG_FIXTURES, scenario, 'commands.tsv'), 'utf8');
    for (const line of table.split('\n').filter(Boolean)) {
      const [stem, command] = line.split('\t');
      if (!commands.has(command!)) commands.set(command!, [scenario, stem!]);
    }
  }
  return commands;
}

/** The per-MAD timeout (-t) varies with --diag.timeout; recordings were made without it. */
function withoutMadTimeout(args: readonly string[]): string[] {
  const kept: string[] = [];
  for (let i = 0; i < args.length; i++) {
    if (args[i] === '-t') i++;
    else kept.push(args[i]!);
  }
  return kept;
}

export type Override = (command: DiagCommand, args: readonly string[]) => CommandResult<DiagCommand> | undefined;

export class ReplayRunner implements CommandRunner<DiagCommand> {
  /** Every command line asked for, `-t` removed, in order. */
  readonly calls: string[] = [];
  private commands: Map<string, [string, string]>;

  /** `scenarios`: recorded scenario directories, searched in order. */
  constructor(
    scenarios: string | readonly string[],
    private readonly override?: Override,
  ) {
    this.commands = commandsOf(typeof scenarios === 'string' ? [scenarios] : scenarios);
  }

  /** Switch to other recordings (the fabric changed). */
  use(scenarios: string | readonly string[]): void {
    this.commands = commandsOf(typeof scenarios === 'string' ? [scenarios] : scenarios);
  }

  async run(command: DiagCommand, args: readonly string[]): Promise<CommandResult<DiagCommand>> {
    const line = [command, ...withoutMadTimeout(args)].join(' ');
    this.calls.push(line);
    const overridden = this.override?.(command, args);
    if (overridden) return overridden;
    const found = this.commands.get(line);
    if (found === undefined) throw new Error(`no recording of "${line}"`);
    const { stdout, stderr, exitCode } = recording(...found);
    return { command, args, outcome: 'exited', exitCode, stdout, stderr, durationMs: 1 };
  }
}
