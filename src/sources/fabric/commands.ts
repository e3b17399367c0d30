// Bookkeeping of one fabric-mode cycle: runs its commands through the injected runner and records
// every command that failed or timed out and every output line that was not understood, for the
// collector that runs the cycle. Nothing here throws for one bad command.
//
// Partial output is never success. A tool that exits 0 may still have printed less than it found
// (its output cut short or garbled on the way); the readers check what each tool's output must
// hold and call `fail` when it does not, and an output line that was not understood fails the
// cycle too: its data is missing and nothing says which. Such a cycle keeps what it did read,
// reports `collector_success` 0 and names the reason as a read error.
import { performance } from 'node:perf_hooks';
import type { ItemError } from '../../model/snapshot.js';
import { commandFailure, commandLine, type CommandResult, type CommandRunner } from '../command-runner.js';
import { MAX_LINE_CHARS, OutputLines, type LineParser } from '../output-lines.js';
import type { UnparsedLines } from '../unparsed-lines.js';

/**
 * The tools fabric mode runs: sminfo asks each subnet manager of the SA's list for its own state;
 * perfquery reads counters switch by switch when the ibqueryerrors sweep cannot run.
 */
export const FABRIC_COMMANDS = ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo', 'perfquery'] as const;
export type FabricCommand = (typeof FABRIC_COMMANDS)[number];

export interface FabricRunOptions {
  runner: CommandRunner<FabricCommand>;
  /** The runner's time limit per command, for messages. */
  timeoutMs: number;
  signal?: AbortSignal;
}

export interface FabricCycleReport {
  errors: ItemError[];
  /** Commands killed at the time limit, by tool. */
  timeouts: FabricCommand[];
  /** A command failed or timed out, or its output was incomplete: part of this cycle's data is missing. */
  failed: boolean;
  durationSeconds: number;
  /** Whether this cycle read an item (a command it ran, a query a sweep made): for the log's "works again". */
  read: (item: string) => boolean;
}

type Accept = (result: CommandResult<FabricCommand>) => boolean;
const exitedZero: Accept = (result) => result.exitCode === 0;

/** Arguments naming a cycle's private files: a new cache file per discovery. */
const PRIVATE_FILE_OPTIONS = new Set(['--cache', '--load-cache']);

/**
 * The item a command's errors are recorded against: its command line without the private cache
 * files, so that one command keeps one name from cycle to cycle (the log summarises it instead of
 * taking each run for a new failure) and reads as a person would run it by hand.
 */
export function commandItem(result: Pick<CommandResult, 'command' | 'args'>): string {
  const args = result.args.filter((arg, i) => !PRIVATE_FILE_OPTIONS.has(arg) && !PRIVATE_FILE_OPTIONS.has(result.args[i - 1] ?? ''));
  return commandLine({ command: result.command, args });
}

export class FabricCycle {
  private readonly started = performance.now();
  private readonly errors: ItemError[] = [];
  private readonly timeouts: FabricCommand[] = [];
  private readonly ran = new Set<string>();
  private readonly coverage: ((item: string) => boolean)[] = [];
  private failed = false;

  constructor(private readonly options: FabricRunOptions) {}

  get signal(): AbortSignal | undefined {
    return this.options.signal;
  }

  /**
   * Run a command; undefined (recorded) when it could not run, timed out, or exited with a code
   * `accept` does not take (by default only 0). With `parser`, the output is parsed as it
   * arrives: its result is the parser's (`result.stdout` keeps only the output's beginning).
   */
  async run(
    tool: FabricCommand,
    args: readonly string[],
    accept: Accept = exitedZero,
    parser?: LineParser,
  ): Promise<CommandResult<FabricCommand> | undefined> {
    const { result, ok } = await this.attempt(tool, args, accept, false, parser);
    return ok ? result : undefined;
  }

  /**
   * Run a command the caller can do without (it has another way): its failure is a read error
   * that does not fail the cycle. The result is returned either way.
   */
  async attempt(
    tool: FabricCommand,
    args: readonly string[],
    accept: Accept = exitedZero,
    optional = true,
    parser?: LineParser,
  ): Promise<{ result: CommandResult<FabricCommand>; ok: boolean }> {
    const lines = parser && new OutputLines((line) => parser.push(line));
    const result = await this.options.runner.run(tool, args, this.options.signal, lines);
    this.ran.add(commandItem(result));
    if (result.outcome === 'exited' && accept(result)) {
      // A runner that returned the output whole (a test's recordings): parsed the same way, in slices.
      if (lines && !result.streamed) {
        lines.write(result.stdout);
        await lines.end();
      }
      // Cut lines were handed over shortened: a read error (the parser counts what it did not understand).
      if (lines && lines.cut > 0)
        this.note(commandItem(result), `${lines.cut === 1 ? 'a line' : `${lines.cut} lines`} longer than ${MAX_LINE_CHARS} characters cut`);
      return { result, ok: true };
    }
    if (result.outcome === 'timeout') this.timeouts.push(tool);
    const message = commandFailure(result, this.options.timeoutMs, '--diag.timeout') ?? 'failed';
    if (optional) this.note(commandItem(result), message);
    else this.fail(commandItem(result), message);
    return { result, ok: false };
  }

  /** Items other than commands that this cycle read (`test` says which), e.g. the queries of a sweep. */
  covers(test: (item: string) => boolean): void {
    this.coverage.push(test);
  }

  /** A command's failure, or a fact that makes the cycle's result incomplete. */
  fail(item: string, message: string): void {
    this.failed = true;
    this.errors.push({ item, message });
  }

  /** A read error that does not fail the cycle (one switch did not answer, one value was odd). */
  note(item: string, message: string): void {
    this.errors.push({ item, message });
  }

  /**
   * Output lines of a command that were not understood: each counts as one read error, and the
   * cycle fails (what they held is missing); one entry stands for them all (`count`: junk output
   * of millions of lines holds no entry per line), and the log shows the first (one log line per
   * command, however many lines a new output format breaks).
   */
  unparsed(result: Pick<CommandResult, 'command' | 'args'>, lines: UnparsedLines): void {
    const { count } = lines;
    if (count === 0) return;
    this.failed = true;
    this.errors.push({
      item: commandItem(result),
      message: `output not understood: ${count === 1 ? 'a line' : `${count} lines`} skipped, the data ${count === 1 ? 'it' : 'they'} held is missing (first: ${JSON.stringify(lines.examples[0]!.slice(0, 120))})`,
      ...(count > 1 && { count }),
    });
  }

  report(): FabricCycleReport {
    const { ran, coverage } = this;
    return {
      errors: this.errors,
      timeouts: this.timeouts,
      failed: this.failed,
      durationSeconds: (performance.now() - this.started) / 1000,
      // Items that are neither commands nor covered (the topology, the node-name-map) are read by every cycle.
      read: (item) => ran.has(item) || coverage.some((test) => test(item)) || !isCommandItem(item),
    };
  }
}

/** An item that names a command (or one query of a command): it is read only when the cycle ran it. */
function isCommandItem(item: string): boolean {
  const tool = item.split(' ', 1)[0]!;
  return (FABRIC_COMMANDS as readonly string[]).includes(tool);
}
