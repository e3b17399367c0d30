// An exporter built in-process from command-line flags, as main.ts would build it.
import pino from 'pino';
import { parseCommandLine } from '../../src/config/settings.js';
import { Exporter } from '../../src/commands/serve/exporter.js';

export function exporterFromFlags(flags: string[], now?: () => number): Exporter {
  const command = parseCommandLine(flags);
  if (command.action !== 'run') throw new Error(`flags ${flags.join(' ')} do not run the exporter`);
  return new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), ...(now ? { now } : {}) });
}
