// Bookkeeping of one fabric-mode cycle: runs its commands through the injected runner and records
// every command that failed or timed out and every output line that was not understood, for the
// collector that runs the cycle. Nothing here throws for one bad command.
import { performance } from 'node:perf_hooks';
import type { ItemError } from '../../model/snapshot.js';
import { commandFailure, commandLine, type CommandResult, type CommandRunner } from '../command-runner.js';

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
  /** A command failed or timed out: part of this cycle's data is missing. */
  failed: boolean;
  durationSeconds: number;
}

type Accept = (result: CommandResult<FabricCommand>) => boolean;
const exitedZero: Accept = (result) => result.exitCode === 0;

export class FabricCycle {
  private readonly started = performance.now();
  private readonly errors: ItemError[] = [];
  private readonly timeouts: FabricCommand[] = [];
  private failed = false;

  constructor(private readonly options: FabricRunOptions) {}

  get signal(): AbortSignal | undefined {
    return this.options.signal;
  }

  /**
   * Run a command; undefined (recorded) when it could not run, timed out, or exited with a code
   * `accept` does not take (by default only 0).
   */
  async run(tool: FabricCommand, args: readonly string[], accept: Accept = exitedZero): Promise<CommandResult<FabricCommand> | undefined> {
    const { result, ok } = await this.attempt(tool, args, accept, false);
    return ok ? result : undefined;
  }

  /**
   * Run a command the caller can do without (it has another way): its failure is a read error
   * that does not fail the cycle. The result is returned either way.
   */
  async attempt(tool: FabricCommand, args: readonly string[], accept: Accept = exitedZero, optional = true): Promise<{ result: CommandResult<FabricCommand>; ok: boolean }> {
    const result = await this.options.runner.run(tool, args, this.options.signal);
    if (result.outcome === 'exited' && accept(result)) return { result, ok: true };
    if (result.outcome === 'timeout') this.timeouts.push(tool);
    const message = commandFailure(result, this.options.timeoutMs, '--diag.timeout') ?? 'failed';
    if (optional) this.note(commandLine(result), message);
    else this.fail(commandLine(result), message);
    return { result, ok: false };
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
   * Output lines that were not understood: each counts as one read error; the log shows the first
   * (one log line per command, however many lines a new output format breaks).
   */
  unparsed(item: string, lines: readonly string[]): void {
    if (lines.length === 0) return;
    const error: ItemError = { item, message: `output not understood, line skipped (first: ${JSON.stringify(lines[0]!.slice(0, 120))})` };
    for (let i = 0; i < lines.length; i++) this.errors.push(error);
  }

  report(): FabricCycleReport {
    return {
      errors: this.errors,
      timeouts: this.timeouts,
      failed: this.failed,
      durationSeconds: (performance.now() - this.started) / 1000,
    };
  }
}
