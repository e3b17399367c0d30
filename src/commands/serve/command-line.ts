// The server's command line: its flags, the collectors', the program's, and --version.
import type { Settings } from '../../config/flags.js';
import type { Collector } from '../../collection/collector.js';
import { COLLECTORS } from '../../collectors/registry.js';
import { flagSet, helpLines, parseCommandLine } from '../command-line.js';
import { SERVE_FLAGS } from './flags.js';

export type ServeCommandLine = { action: 'help' } | { action: 'version' } | { action: 'run'; settings: Settings };

export function parseServeCommandLine(argv: readonly string[], collectors: readonly Collector[] = COLLECTORS): ServeCommandLine {
  const command = parseCommandLine(argv, flagSet(SERVE_FLAGS, collectors), { version: { type: 'boolean' } });
  if (command.help) return { action: 'help' };
  if (command.extra.version) return { action: 'version' };
  return { action: 'run', settings: command.settings };
}

export function serveHelpText(collectors: readonly Collector[] = COLLECTORS): string {
  return (
    [
      'usage: infiniband-exporter [flags]',
      '       infiniband-exporter check [flags] [--format=text|json]   (see check --help)',
      '       infiniband-exporter topology save FILE [flags]          (see topology --help)',
      '',
      'Prometheus exporter for InfiniBand hosts: port and link health, subnet manager, PMA counters, IPoIB.',
      '',
      'Flags:',
      ...helpLines(flagSet(SERVE_FLAGS, collectors).flags, [['--version', 'Show the version.']]),
    ].join('\n') + '\n'
  );
}
