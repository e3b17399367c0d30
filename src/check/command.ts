// `infiniband-exporter check`: one collection cycle with the server's flags and config file, the
// findings for a person or a script, and an exit status a node health check can act on (0 healthy,
// 1 something critical or warning, 2 usage error). Loaded by cli.ts on demand: nothing of the
// HTTP server, fastify or prom-client is imported on this path.
import pino from 'pino';
import { UsageError } from '../config/errors.js';
import { checkHelpText, checkSysfsRoot, parseCheckCommandLine } from '../config/settings.js';
import type { ToolRunners } from '../collection/from-settings.js';
import { renderJson } from './json-report.js';
import { collectOnce } from './one-cycle.js';
import { checkReport } from './report.js';
import { renderText, textStyleFor } from './text-report.js';

export interface CheckIo {
  stdout: { write(text: string): unknown; isTTY?: boolean };
  stderr: { write(text: string): unknown };
  env: NodeJS.ProcessEnv;
}

/** Run the check; resolves to the exit status. */
export async function runCheck(argv: readonly string[], io: CheckIo, runners: ToolRunners = {}): Promise<number> {
  let command;
  try {
    command = parseCheckCommandLine(argv);
    // A sysfs root that is not one is a mistyped flag, not a sick node: a health check must not drain it.
    if (command.action === 'check') checkSysfsRoot(command.settings);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`infiniband-exporter check: ${error.message}\n`);
    return 2;
  }
  if (command.action === 'help') {
    io.stdout.write(checkHelpText());
    return 0;
  }
  // The report says everything the log would (read errors are findings): no log output.
  const cycle = await collectOnce(command.settings, pino({ level: 'silent' }), runners);
  const report = checkReport(cycle);
  io.stdout.write(command.format === 'json' ? renderJson(report) : renderText(report, textStyleFor(io.stdout, io.env)));
  return report.exitCode;
}
