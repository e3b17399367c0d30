// A CommandRunner for fabric mode that replays the recorded outputs (see recordings.ts). Cache
// paths are matched as `<cache>`; a replayed `ibnetdiscover --cache FILE` also writes the
// scenario's recorded cache to FILE, as the tool does.
import { copyFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type { CommandResult, CommandRunner } from '../../src/sources/command-runner.js';
import type { FabricCommand } from '../../src/snapshot/types.js';
import { FABRIC_FIXTURES, recordedCommands, recording } from './recordings.js';

export type FabricOverride = (command: FabricCommand, args: readonly string[]) => CommandResult<FabricCommand> | undefined;

function normalised(command: string, args: readonly string[]): string {
  const words = [command];
  for (let i = 0; i < args.length; i++) {
    words.push(args[i]!);
    if (args[i] === '--cache' || args[i] === '--load-cache') words.push('<cache>'), i++;
  }
  return words.join(' ');
}

export function result(command: FabricCommand, args: readonly string[], fields: Partial<CommandResult<FabricCommand>>): CommandResult<FabricCommand> {
  return { command, args, outcome: 'exited', exitCode: 0, stdout: '', stderr: '', durationMs: 1, ...fields };
}

/** What `ibnetdiscover --cache FILE` does besides printing: write the scenario's recorded cache to FILE. */
export function writeRecordedCache(scenario: string, args: readonly string[]): void {
  const cacheAt = args.indexOf('--cache');
  const cache = path.join(FABRIC_FIXTURES, scenario, 'topology.cache');
  if (cacheAt >= 0 && existsSync(cache)) copyFileSync(cache, args[cacheAt + 1]!);
}

export class FabricReplay implements CommandRunner<FabricCommand> {
  /** Every command asked for, cache paths as `<cache>`, in order. */
  readonly calls: string[] = [];
  /** Every command asked for, as run. */
  readonly rawCalls: (readonly string[])[] = [];
  override: FabricOverride | undefined;
  private scenarios: readonly string[] = [];

  /** `scenarios`: recorded scenario directories, searched in order. */
  constructor(scenarios: readonly string[], override?: FabricOverride) {
    this.use(scenarios);
    this.override = override;
  }

  /** Switch to other recordings (the fabric changed). */
  use(scenarios: readonly string[]): void {
    this.scenarios = scenarios;
  }

  async run(command: FabricCommand, args: readonly string[]): Promise<CommandResult<FabricCommand>> {
    const line = normalised(command, args);
    this.calls.push(line);
    this.rawCalls.push([command, ...args]);
    const overridden = this.override?.(command, args);
    if (overridden) return overridden;
    for (const scenario of this.scenarios) {
      const stem = recordedCommands(scenario).get(line);
      if (stem === undefined) continue;
      writeRecordedCache(scenario, args);
      return result(command, args, recording(scenario, stem));
    }
    throw new Error(`no recording of "${line}" in ${this.scenarios.join(', ')}`);
  }
}
