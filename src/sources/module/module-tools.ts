// The module source: the cable and optical module of each InfiniBand port, with mstlink (Debian's
// mstflint) or NVIDIA's mlxlink, one command per port through the command runner:
//   mstlink -d <device> -p <port> -m -c --json
// -m is the module (identity, temperature, voltage, per-lane Rx/Tx power and bias with the
// module's alarm thresholds), -c the physical counters (raw, effective and symbol BER); the
// troubleshooting section that every run prints carries the link-down reason. Where the tool has
// them (its --help lists them: mstflint and MFT since 4.17), `--rx_fec_histogram --show_histogram`
// add the FEC histogram to the same run, which costs the firmware little more than the rest.
// `-d` takes the InfiniBand device name (the tool follows /sys/class/infiniband/<device>/device
// to the PCI function). mlxlink takes the same options. The tools need root (or write access to the device's
// PCI config space); without it they say "Permission denied", which this source reports as
// `accessDenied` so that the collector turns itself off with one log line instead of failing every
// port at every interval. Each port reads the module over I2C in the firmware: a few hundred ms,
// which is why the collector runs it at its own interval (--module.interval, 5m), not every cycle.
import type { ModuleReading } from '../../model/optical-module.js';
import type { ItemError } from '../../model/snapshot.js';
import { commandFailure, commandLine, type CommandResult, type CommandRunner } from '../command-runner.js';
import { interpretMlxlink, parseMlxlinkJson, parseMlxlinkText, unhandledErrors } from './mlxlink-output.js';

export type ModuleTool = 'mstlink' | 'mlxlink';

/** One port to read: a device of /sys/class/infiniband and its port number. */
export interface ModuleTarget {
  device: string;
  port: number;
}

/** An item that could not be read; the collector reports it. */
export type ModuleReadError = ItemError;

export interface ModuleSourceReading {
  /** One per port the tool answered for, in the order of the targets. */
  readings: ModuleReading[];
  /** Ports not read, and what was refused in the readings (more lanes than a module has, thresholds out of order). */
  errors: ModuleReadError[];
  /** Commands killed at the time limit (for infiniband_exporter_command_timeouts_total{command}). */
  timeouts: number;
  /** The tool refused for want of privileges (not root, no access to the device): turn the collector off. */
  accessDenied: boolean;
}

/** What to ask the tool for beside the module and counters. */
export interface ModuleQuery {
  /** The FEC histogram (only where the tool has the options: `fecHistogramSupport`). */
  fecHistogram: boolean;
}

export const FEC_HISTOGRAM_OPTIONS = ['--rx_fec_histogram', '--show_histogram'] as const;

/** The arguments for one port: module and counters (and the FEC histogram where asked), as JSON. */
export function moduleToolArguments(target: ModuleTarget, query: ModuleQuery = { fecHistogram: false }): string[] {
  return ['-d', target.device, '-p', String(target.port), '-m', '-c', ...(query.fecHistogram ? FEC_HISTOGRAM_OPTIONS : []), '--json'];
}

/** The tool reads the FEC histogram, or why not (for one log line). */
export type FecHistogramSupport = { supported: true } | { supported: false; why: string; final: boolean };

/**
 * Whether the tool has the FEC histogram options, from its `--help` (one command, run once by
 * each collector). `final` is false when the answer may differ next time (the command timed out
 * or was stopped). Never throws.
 */
export async function fecHistogramSupport(
  runner: CommandRunner<ModuleTool>,
  tool: ModuleTool,
  signal?: AbortSignal,
): Promise<FecHistogramSupport> {
  let result: CommandResult;
  try {
    result = await runner.run(tool, ['--help'], signal);
  } catch (error) {
    return { supported: false, why: `${tool} --help: ${error instanceof Error ? error.message : String(error)}`, final: false };
  }
  const help = `${result.stdout}\n${result.stderr}`;
  if (FEC_HISTOGRAM_OPTIONS.every((option) => new RegExp(`${option}\\b`).test(help))) return { supported: true };
  if (result.outcome !== 'exited')
    return { supported: false, why: `${tool} --help: ${commandFailure(result) ?? result.outcome}`, final: false };
  return {
    supported: false,
    why: `${tool} --help lists no ${FEC_HISTOGRAM_OPTIONS.join(' ')}${result.exitCode === 0 ? '' : ` (${commandFailure(result) ?? `exit code ${result.exitCode}`})`}`,
    final: true,
  };
}

const ACCESS_DENIED = /Permission denied|Operation not permitted|must be root|root privileges/i;

/** A reading, with what was refused in it (each a read error of the port), or why there is none. */
type PortOutcome =
  | { reading: ModuleReading; refused: ModuleReadError[] }
  | { error: ModuleReadError; timeout: boolean; accessDenied: boolean };

/** Judge one command's result: a reading, or why there is none. Pure (exported for the tests). */
export function judgeModuleResult(target: ModuleTarget, result: CommandResult): PortOutcome {
  const item = commandLine(result);
  const json = parseMlxlinkJson(result.stdout);
  // Exit status 1 for a histogram the port cannot give (link down, no RS-FEC) and nothing else: the rest is read.
  const errors = result.outcome === 'exited' && result.exitCode === 1 ? unhandledErrors(result.stdout, json) : undefined;
  const histogramOnly = errors?.histogram !== undefined && errors.rest === '';
  const failure = histogramOnly ? undefined : commandFailure(result);
  const text = `${result.stdout}\n${result.stderr}`;
  if (failure !== undefined) {
    return {
      error: { item, message: failure },
      timeout: result.outcome === 'timeout',
      accessDenied: result.outcome === 'exited' && ACCESS_DENIED.test(text),
    };
  }
  const sections = json?.sections ?? parseMlxlinkText(result.stdout);
  if (json && json.status.code !== undefined && json.status.code !== 0 && !histogramOnly) {
    return {
      error: { item, message: `status ${json.status.code}: ${json.status.message ?? 'no message'}` },
      timeout: false,
      accessDenied: ACCESS_DENIED.test(json.status.message ?? ''),
    };
  }
  if (!sections.has('Module Info') && !sections.has('Physical Counters and BER Info')) {
    return {
      error: { item, message: `no module or counters section in the output (${result.stdout.length} bytes)` },
      timeout: false,
      accessDenied: false,
    };
  }
  const problems: string[] = [];
  const reading: ModuleReading = { device: target.device, port: target.port, ...interpretMlxlink(sections, problems) };
  return { reading, refused: problems.map((message) => ({ item, message })) };
}

/**
 * Read the module of every target with `tool`. Never throws: a port whose command fails, times
 * out or prints something unreadable is one error, the others are read. The entry point of the
 * `module` collector, called every --module.interval with the ports of the devices that pass the
 * device filter (mlx5 ports; the tools do not read ConnectX-3 and older).
 */
export async function readModules(
  runner: CommandRunner<ModuleTool>,
  tool: ModuleTool,
  targets: readonly ModuleTarget[],
  signal?: AbortSignal,
  query?: ModuleQuery,
): Promise<ModuleSourceReading> {
  const outcomes = await Promise.all(
    targets.map(async (target): Promise<PortOutcome> => {
      try {
        return judgeModuleResult(target, await runner.run(tool, moduleToolArguments(target, query), signal));
      } catch (error) {
        return {
          error: {
            item: commandLine({ command: tool, args: moduleToolArguments(target, query) }),
            message: error instanceof Error ? error.message : String(error),
          },
          timeout: false,
          accessDenied: false,
        };
      }
    }),
  );
  const reading: ModuleSourceReading = { readings: [], errors: [], timeouts: 0, accessDenied: false };
  for (const outcome of outcomes) {
    if ('reading' in outcome) {
      reading.readings.push(outcome.reading);
      // Counted, and logged once per port while it lasts (log/recurring-errors.ts), not every cycle.
      reading.errors.push(...outcome.refused);
      continue;
    }
    reading.errors.push(outcome.error);
    if (outcome.timeout) reading.timeouts++;
    if (outcome.accessDenied) reading.accessDenied = true;
  }
  return reading;
}
