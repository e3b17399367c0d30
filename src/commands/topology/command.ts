// `infiniband-exporter topology save FILE`: today's fabric as a cabling plan (or as ibnetdiscover
// printed it), for --fabric.topology-file. One discovery and one ports cycle, with fabric mode's
// flags and config file, as `check --collector.fabric` runs them; the file is written whole or not
// at all (a temporary file renamed over it). Exit status: 0 written, 1 the fabric could not be
// discovered, 2 usage error. Loaded by cli.ts on demand.
import { rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { UsageError } from '../../config/errors.js';
import { choice, flag, type Settings } from '../../config/flags.js';
import type { Collector } from '../../collection/collector.js';
import { FABRIC_DISCOVERY } from '../../collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../../collectors/fabric/ports/index.js';
import { FABRIC_SWITCH } from '../../collectors/fabric/fabric-mode.js';
import { PLAN_FORMATS } from '../../model/cabling.js';
import { plural } from '../../model/finding.js';
import { collectOnce, type ToolRunners } from '../check/one-cycle.js';
import { COLLECTORS as REGISTRY } from '../../collectors/registry.js';
import { DEMO, flagSet, helpLines, parseCommandLine, verifySettings } from '../command-line.js';
import { SERVE_FLAGS } from '../serve/flags.js';

const FORMAT = flag(choice(PLAN_FORMATS), {
  name: 'format',
  default: 'plan',
  help: 'plan: one cable a line, names from the node-name-map or NodeDescriptions; ibnetdiscover: the discovery as ibnetdiscover printed it',
});

/** What a save runs: a discovery, then the ports it reads (the widths and speeds of the cables). */
const COLLECTORS: readonly Collector[] = [FABRIC_DISCOVERY, FABRIC_PORTS];

export interface TopologyIo {
  stdout: { write(text: string): unknown };
  stderr: { write(text: string): unknown };
}

export interface TopologyOptions {
  runners?: ToolRunners;
  now?: () => Date;
}

export function topologyHelpText(): string {
  const set = flagSet([FORMAT], COLLECTORS);
  return (
    [
      'usage: infiniband-exporter topology save FILE [flags]',
      '',
      'Discovers the fabric once (ibnetdiscover, then one ports cycle for the widths and speeds) and writes',
      'it to FILE as a cabling plan: one cable a line, "<node> <port> <peer node> <peer port> [width] [speed]".',
      'Each node by its node-name-map name, else its NodeDescription, else its GUID: whichever is its alone',
      '(a NodeDescription another host has too would not say which node is meant); it says how many by GUID.',
      'Give it to the exporter as --fabric.topology-file: every cable not as written is then reported,',
      'with the cable to move. FILE "-" writes to standard output.',
      'Exit status: 0 written, 1 the fabric could not be discovered, 2 usage error.',
      '',
      'Flags:',
      ...helpLines([FORMAT, ...set.flags.filter((candidate) => candidate.check && candidate !== FABRIC_SWITCH && candidate !== DEMO)]),
      '',
      "The server's other flags are accepted and have no effect here.",
    ].join('\n') + '\n'
  );
}

/** `topology save FILE [flags]`: the file and the settings, or a usage error. */
function parse(argv: readonly string[]): { help: true } | { help: false; file: string; settings: Settings } {
  if (argv.length === 0 || argv[0] === '--help' || argv[0] === '-h') return { help: true };
  if (argv[0] !== 'save') throw new UsageError(`unknown subcommand ${JSON.stringify(argv[0])}, expected save (see --help)`);
  const file = argv[1];
  if (file === undefined || (file.startsWith('-') && file !== '-')) {
    if (file === '--help' || file === '-h') return { help: true };
    throw new UsageError('expected the file to write, e.g. topology save /etc/infiniband-exporter/plan.txt (see --help)');
  }
  // Every flag of the server is accepted, so that one ARGS line serves serve, check and this.
  const command = parseCommandLine(argv.slice(2), flagSet([FORMAT, ...SERVE_FLAGS], REGISTRY));
  if (command.help) return { help: true };
  return { help: false, file, settings: command.settings.with([[FABRIC_SWITCH, true]]) };
}

/** Run `topology …`; resolves to the exit status. */
export async function runTopology(argv: readonly string[], io: TopologyIo, options: TopologyOptions = {}): Promise<number> {
  let command;
  try {
    command = parse(argv);
    if (!command.help) await verifySettings(command.settings, COLLECTORS);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    io.stderr.write(`infiniband-exporter topology${argv[0] === 'save' ? ' save' : ''}: ${error.message}\n`);
    return 2;
  }
  if (command.help) {
    io.stdout.write(topologyHelpText());
    return 0;
  }
  const { file, settings } = command;
  const { snapshot } = await collectOnce(settings, pino({ level: 'silent' }), COLLECTORS, options.runners);
  const discovery = FABRIC_DISCOVERY.of(snapshot);
  const ports = FABRIC_PORTS.of(snapshot);
  if (!discovery?.topology) {
    const why = snapshot.reports.find((report) => report.collector === FABRIC_DISCOVERY.name)?.errors[0];
    io.stderr.write(
      `infiniband-exporter topology save: the fabric could not be discovered${why ? ` (${why.item}: ${why.message})` : ''}; nothing written\n`,
    );
    return 1;
  }
  const incomplete = snapshot.reports.filter((report) => !report.success);
  const format = settings.get(FORMAT);
  const { formatPlan, planNames, planNamesByGuid } = await import('../../sources/fabric/cabling-plan-writer.js');
  const text =
    format === 'ibnetdiscover'
      ? (discovery.text ?? '')
      : formatPlan(discovery.topology, ports?.ports, (options.now ?? (() => new Date()))());
  if (incomplete.length > 0) {
    // A plan written from a partial discovery would call every cable it missed "unplanned".
    const first = incomplete[0]!.errors[0];
    io.stderr.write(
      `infiniband-exporter topology save: ${incomplete.map((report) => report.collector).join(' and ')} did not read the whole fabric${first ? ` (${first.item}: ${first.message})` : ''}; nothing written\n`,
    );
    return 1;
  }
  if (file === '-') {
    io.stdout.write(text);
  } else {
    const temporary = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
    try {
      await writeFile(temporary, text);
      await rename(temporary, file);
    } catch (error) {
      await rm(temporary, { force: true });
      io.stderr.write(`infiniband-exporter topology save: ${file} cannot be written: ${(error as Error).message}\n`);
      return 1;
    }
  }
  const nodes = discovery.topology.nodes.size;
  const cables = format === 'plan' ? text.split('\n').filter((line) => line !== '' && !line.startsWith('#')).length : undefined;
  io.stderr.write(
    `infiniband-exporter topology save: wrote the fabric (${plural(nodes, 'node')}${cables === undefined ? '' : `, ${plural(cables, 'cable')}`}) to ${file === '-' ? 'standard output' : file} as ${format === 'plan' ? 'a cabling plan' : 'ibnetdiscover output'}\n`,
  );
  // Said, so that a person who reads a GUID where a host name was expected knows why.
  const { byGuid } = planNames(discovery.topology);
  if (format === 'plan' && byGuid.shared + byGuid.nameless > 0)
    io.stderr.write(`infiniband-exporter topology save: named ${planNamesByGuid(byGuid)}\n`);
  return 0;
}
