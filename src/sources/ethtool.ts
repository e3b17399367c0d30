// The offload source: whether TCP segmentation offload is on for an IPoIB interface, from
// `ethtool -k <interface>`. Asked only where it matters (adapters with the TSO erratum, see
// model/tso-erratum.ts) and only through the command runner, with its time and output limits.
import type { TsoReading } from '../model/host.js';
import type { ItemError } from '../model/snapshot.js';
import { commandFailure, commandLine, type CommandRunner } from './command-runner.js';

export type EthtoolCommand = 'ethtool';

/** `ethtool -k` answers from one ioctl or netlink request: a second is plenty. */
export const ETHTOOL_TIMEOUT_MS = 2000;
/** Its output is about 2 KiB; anything much larger is not ethtool. */
export const ETHTOOL_MAX_OUTPUT_BYTES = 64 * 1024;

export interface OffloadFeature {
  enabled: boolean;
  /** The kernel does not let it change (`[fixed]`). */
  fixed: boolean;
}

// "tcp-segmentation-offload: on", "\ttx-tcp-segmentation: off [fixed]", "rx-checksumming: off
// [requested on]"; ethtool of 2007 wrote "tcp segmentation offload: on".
const FEATURE_LINE = /^\s*([a-z0-9][a-z0-9 _-]*?)\s*:\s*(on|off)\b(.*)$/i;

/**
 * Parse `ethtool -k` (any version): feature name (spaces as in old ethtool become dashes) → state.
 * Undefined when no feature line is there at all (an error text, not a feature list).
 */
export function parseOffloadFeatures(stdout: string): Map<string, OffloadFeature> | undefined {
  const features = new Map<string, OffloadFeature>();
  for (const line of stdout.split('\n')) {
    const match = FEATURE_LINE.exec(line);
    if (!match) continue;
    const name = match[1]!.toLowerCase().replace(/[ _]+/g, '-');
    features.set(name, { enabled: match[2]!.toLowerCase() === 'on', fixed: /\[fixed\]/i.test(match[3] ?? '') });
  }
  return features.size === 0 ? undefined : features;
}

/**
 * TSO for IPv4 TCP, the one the erratum concerns: `tx-tcp-segmentation` where ethtool lists
 * sub-features (since 2011), else the summary line `tcp-segmentation-offload`.
 */
export function tcpSegmentationOffload(features: ReadonlyMap<string, OffloadFeature>): OffloadFeature | undefined {
  return features.get('tx-tcp-segmentation') ?? features.get('tcp-segmentation-offload');
}

export interface TsoSourceReading {
  /** Keyed by interface name; every interface asked for has a reading. */
  readings: Map<string, TsoReading>;
  errors: ItemError[];
  /** The commands run, as their errors name them (the items this reading read). */
  ran: Set<string>;
}

/** Read TSO of `interfaces` one after the other; without a runner (ethtool not installed) every reading is unknown. */
export async function readTcpSegmentationOffload(
  runner: CommandRunner<EthtoolCommand> | undefined,
  interfaces: readonly string[],
  signal?: AbortSignal,
): Promise<TsoSourceReading> {
  const readings = new Map<string, TsoReading>();
  const errors: ItemError[] = [];
  const ran = new Set<string>();
  for (const name of interfaces) {
    if (!runner) {
      readings.set(name, { state: 'unknown', reason: 'ethtool is not installed' });
      continue;
    }
    const result = await runner.run('ethtool', ['-k', name], signal);
    ran.add(commandLine(result));
    const failure = commandFailure(result, ETHTOOL_TIMEOUT_MS);
    const tso = failure === undefined ? tcpSegmentationOffload(parseOffloadFeatures(result.stdout) ?? new Map()) : undefined;
    if (tso) {
      readings.set(name, { state: tso.enabled ? 'on' : 'off', fixed: tso.fixed });
      continue;
    }
    const message = (
      failure ??
      `no tcp-segmentation-offload line in the output: ${JSON.stringify(result.stdout.trim().split('\n').at(-1)?.slice(0, 80) ?? '')}`
    ).replace(/\s*\n\s*/g, ' | ');
    errors.push({ item: commandLine(result), message });
    readings.set(name, { state: 'unknown', reason: `${commandLine(result)}: ${message}` });
  }
  return { readings, errors, ran };
}
