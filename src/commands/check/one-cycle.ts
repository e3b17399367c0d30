// One collection cycle for `check`, as the server runs it with the same settings: every cycle of
// the enabled collectors once, each after the cycle it follows (the host reading, then the diag
// tools over the ports it found; a fabric discovery, then one ports cycle beside one SA cycle),
// each within the deadline of a single run.
import type { Logger } from 'pino';
import type { Settings } from '../../config/flags.js';
import type { Collector } from '../../collection/collector.js';
import { Collectors } from '../../collection/scheduler.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { CommandRunner } from '../../sources/command-runner.js';
import { notChecked } from '../../findings/not-checked.js';

export interface CheckCycle {
  snapshot: Snapshot;
  /** What could not be checked and why, for the person reading the report. */
  notChecked: string[];
}

export type ToolRunners = Readonly<Record<string, CommandRunner<string> | 'not-installed' | undefined>>;

export async function collectOnce(
  settings: Settings,
  logger: Logger,
  collectors: readonly Collector[],
  runners: ToolRunners = {},
): Promise<CheckCycle> {
  const program = new Collectors(collectors, { settings, logger, mode: 'check', runners });
  try {
    await program.setUp();
    const snapshot = await program.runOnce();
    // A mistake of the user's that the cycle found (a plan file that stopped parsing): exit 2.
    if (program.fatalError) throw program.fatalError;
    return { snapshot, notChecked: notChecked(program) };
  } finally {
    // Removes what the collectors keep between cycles (the discovery cache files).
    await program.stop();
  }
}
