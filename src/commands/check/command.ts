// `infiniband-exporter check`: one collection cycle with the server's flags and config file, the
// findings for a person or a script, and an exit status a node health check can act on (0 healthy,
// 1 something critical or warning, 2 usage error). Loaded by cli.ts on demand: nothing of the
// HTTP server, fastify or prom-client is imported on this path.
import pino from 'pino';
import { choice, flag } from '../../config/flags.js';
import { UsageError } from '../../config/errors.js';
import type { Collector } from '../../collection/collector.js';
import { COLLECTORS } from '../../collectors/registry.js';
import { flagSet, helpLines, parseCommandLine, verifySettings } from '../command-line.js';
import { demoRunners } from '../demo.js';
import { SERVE_FLAGS } from '../serve/flags.js';
import { renderJson } from './json-report.js';
import { collectOnce, type ToolRunners } from './one-cycle.js';
import { checkReport } from './report.js';
import { renderText, textStyleFor } from './text-report.js';

export const CHECK_FORMATS = ['text', 'json'] as const;
const FORMAT = flag(choice(CHECK_FORMATS), {
  name: 'format',
  default: 'text',
  help: 'text for a person (colour on a terminal unless NO_COLOR is set), json for scripts',
});

export interface CheckIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

export interface CheckOptions {
  runners?: ToolRunners;
  /** The collectors; the registry's by default (a test adds its own). */
  collectors?: readonly Collector[];
}

export function checkHelpText(collectors: readonly Collector[] = COLLECTORS): string {
  const set = flagSet([FORMAT, ...SERVE_FLAGS], collectors);
  return (
    [
      'usage: infiniband-exporter check [flags]',
      '',
      'Runs one collection cycle, as the server would with the same flags and config file, and prints',
      'what is wrong and what to do, worst first, then a one-line summary. With --collector.fabric it also',
      "runs one fabric discovery, one ports cycle and one SA cycle (each cut off as the server's: at",
      "--fabric.interval, or its commands' time limits if longer) and reports the fabric's findings too.",
      'Exit status: 0 nothing critical or warning, 1 something is, 2 usage error.',
      '',
      'Flags:',
      ...helpLines([FORMAT, ...set.flags.filter((candidate) => candidate.check)]),
      '',
      "The server's other flags are accepted and have no effect here.",
    ].join('\n') + '\n'
  );
}

/** Run the check; resolves to the exit status. */
export async function runCheck(argv: readonly string[], io: CheckIo, options: CheckOptions = {}): Promise<number> {
  const collectors = options.collectors ?? COLLECTORS;
  let command;
  try {
    command = parseCommandLine(argv, flagSet([FORMAT, ...SERVE_FLAGS], collectors));
    // A sysfs root that is not one is a mistyped flag, not a sick node: a health check must not drain it.
    if (!command.help) await verifySettings(command.settings, collectors);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`infiniband-exporter check: ${error.message}\n`);
    return 2;
  }
  if (command.help) {
    io.stdout.write(checkHelpText(collectors));
    return 0;
  }
  // The report says everything the log would (read errors are findings): no log output.
  let cycle;
  try {
    cycle = await collectOnce(command.settings, pino({ level: 'silent' }), collectors, {
      ...demoRunners(command.settings),
      ...options.runners,
    });
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`infiniband-exporter check: ${error.message}\n`);
    return 2;
  }
  const report = checkReport(cycle, collectors);
  io.stdout.write(command.settings.get(FORMAT) === 'json' ? renderJson(report) : renderText(report, textStyleFor(io.stdout, io.env)));
  return report.exitCode;
}
