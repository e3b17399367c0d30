// An exporter built in-process from command-line flags, as cli.ts would build it.
import pino from 'pino';
import type { Settings } from '../../src/config/flags.js';
import type { Collector } from '../../src/collection/collector.js';
import { parseServeCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter, type ExporterOptions } from '../../src/commands/serve/exporter.js';

/** The server's settings for `flags` (with `collectors`' flags when a test adds one). */
export function settingsFromFlags(flags: readonly string[], collectors?: readonly Collector[]): Settings {
  const command = parseServeCommandLine(flags, collectors);
  if (command.action !== 'run') throw new Error(`flags ${flags.join(' ')} do not run the exporter`);
  return command.settings;
}

/**
 * The runners of tests that run no module tool: mstlink on the machine running the tests (if any)
 * would read this machine's adapters, not the fixture tree's.
 */
export const NO_MODULE_TOOL = { module: 'not-installed' } as const;

/**
 * The kernel log of tests that follow none: this machine's /dev/kmsg is readable or not depending on
 * who runs the tests (CAP_SYSLOG); /dev/null is a character device every user reads, with no record.
 */
export const NO_KERNEL_LOG = ['--path.kmsg', '/dev/null'] as const;

export function exporterFromFlags(
  flags: string[],
  now?: () => number,
  options: Omit<ExporterOptions, 'settings' | 'logger' | 'now'> = {},
): Exporter {
  const kmsg = flags.some((flag) => flag.startsWith('--path.kmsg')) ? [] : NO_KERNEL_LOG;
  return new Exporter({
    settings: settingsFromFlags([...kmsg, ...flags], options.collectors),
    logger: pino({ level: 'silent' }),
    ...(now ? { now } : {}),
    ...options,
    runners: { ...NO_MODULE_TOOL, ...options.runners },
  });
}
