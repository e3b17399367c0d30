// What fabric mode's collectors (fabric_discovery, fabric_ports, fabric_sa, fabric_cabling) share:
// the --collector.fabric switch, the fabric flags, the tools behind one runner, this instance's
// shard, the discovery and ports cycles, and why a fabric command fails. Not a collector. Their sources (sources/fabric/) are loaded only when fabric mode is on.
import { BOOLEAN, COUNT, DURATION, STRING, collectorSwitch, flag, formatted, optionalFlag } from '../../config/flags.js';
import { UsageError } from '../../config/errors.js';
import { parseNodeNameMap } from '../../config/node-name-map.js';
import type { Shard } from '../../model/fabric.js';
import { FileRefused, NODE_NAME_MAP_FILE, readBoundedText } from '../../files/bounded-file.js';
import { ExecaRunner, locateTools, type CommandRunner } from '../../sources/command-runner.js';
import type { FabricCommand } from '../../sources/fabric/commands.js';
import type { CollectorContext, Cycle, ToolGroup } from '../../collection/collector.js';
import { DIAG_TIMEOUT, PERFQUERY_PATH, SMINFO_PATH } from '../infiniband-diags.js';

/** `--fabric.shard` text: `i/n` with 1 ≤ i ≤ n. */
export function parseShard(text: string): Shard | undefined {
  const match = /^(\d{1,4})\/(\d{1,4})$/.exec(text.trim());
  if (!match) return undefined;
  const index = Number(match[1]);
  const count = Number(match[2]);
  return index >= 1 && index <= count ? { index, count } : undefined;
}

/** The node-name-map must be readable and well-formed at start (the tools would ignore a bad one whole). */
function checkedNodeNameMap(file: string): string | undefined {
  let text: string;
  try {
    text = readBoundedText(file, NODE_NAME_MAP_FILE);
  } catch (error) {
    throw new UsageError(`--fabric.node-name-map: ${file} ${error instanceof FileRefused ? error.reason : (error as Error).message}`);
  }
  const bad = parseNodeNameMap(text).errors[0];
  if (bad)
    throw new UsageError(
      `node-name-map ${file}:${bad.line}: expected a GUID then a name in quotes (0x0002c90200400000 "leaf-1"), got ${JSON.stringify(bad.text)}`,
    );
  return file;
}

export const FABRIC_SWITCH = collectorSwitch(
  'fabric',
  'fabric',
  false,
  'Fabric mode: every switch port, link, subnet manager and multicast group of the subnet, from this host (run it on one or two hosts per subnet, e.g. the subnet manager hosts).',
);
export const FABRIC_INTERVAL = flag(DURATION, {
  name: 'fabric.interval',
  key: 'fabric.interval',
  default: '60s',
  help: "How often fabric mode reads the state and PMA counters of every switch port, and the subnet administrator's records.",
  check: true,
});
export const FABRIC_DISCOVERY_INTERVAL = flag(DURATION, {
  name: 'fabric.discovery-interval',
  key: 'fabric.discovery_interval',
  default: '10m',
  help: 'How often fabric mode discovers the topology (ibnetdiscover); also at start, and early when the fabric changed.',
});
export const FABRIC_MAX_CONCURRENT = flag(COUNT, {
  name: 'fabric.max-concurrent',
  key: 'fabric.max_concurrent',
  default: '8',
  help: 'Fabric-mode commands run at once (each bounded by --diag.timeout).',
  check: true,
});
export const FABRIC_NODE_NAME_MAP = optionalFlag(
  {
    ...STRING,
    check: (value) =>
      typeof value === 'string' && value.length > 0 ? { ok: true, value: checkedNodeNameMap(value)! } : STRING.check(value),
  },
  {
    name: 'fabric.node-name-map',
    key: 'fabric.node_name_map',
    help: 'node-name-map file (infiniband-diags/opensm format: 0xGUID "name" per line) naming fabric nodes.',
    check: true,
  },
);
export const FABRIC_HCA_PORTS = flag(BOOLEAN, {
  name: 'fabric.hca-ports',
  key: 'fabric.hca_ports',
  default: false,
  help: 'Fabric mode also reads CA ports (for hosts that run no exporter of their own).',
  check: true,
});
export const FABRIC_SHARD = flag(
  formatted('shard', 'shard', "a shard such as 1/2 (this instance's number, from 1, then the number of instances)", parseShard),
  {
    name: 'fabric.shard',
    key: 'fabric.shard',
    default: '1/1',
    help: 'i/n: read only the nodes whose GUID hashes to shard i of n, so that n instances split a fabric.',
    check: true,
  },
);
const toolPath = (tool: string): ReturnType<typeof optionalFlag<string>> =>
  optionalFlag(STRING, {
    name: `${tool}.path`,
    key: `fabric.${tool}_path`,
    help: `${tool} executable (default: found on PATH).`,
    check: true,
  });
export const IBNETDISCOVER_PATH = toolPath('ibnetdiscover');
export const IBLINKINFO_PATH = toolPath('iblinkinfo');
export const IBQUERYERRORS_PATH = toolPath('ibqueryerrors');
export const SAQUERY_PATH = toolPath('saquery');

/** Every flag the fabric collectors read. */
export const FABRIC_FLAGS = [
  FABRIC_SWITCH,
  FABRIC_INTERVAL,
  FABRIC_DISCOVERY_INTERVAL,
  FABRIC_MAX_CONCURRENT,
  FABRIC_NODE_NAME_MAP,
  FABRIC_HCA_PORTS,
  FABRIC_SHARD,
  IBNETDISCOVER_PATH,
  IBLINKINFO_PATH,
  IBQUERYERRORS_PATH,
  SAQUERY_PATH,
  DIAG_TIMEOUT,
  SMINFO_PATH,
  PERFQUERY_PATH,
];

export const FABRIC_TOOLS: ToolGroup<FabricCommand> = {
  key: 'fabric',
  tools: ['ibnetdiscover', 'iblinkinfo', 'ibqueryerrors', 'saquery', 'sminfo', 'perfquery'],
};

/** Fabric-mode commands print up to a few MB per sweep at 2 000 nodes; much more is not a sweep. */
export const FABRIC_MAX_OUTPUT_BYTES = 64 * 1024 * 1024;

const RUNNER = {};

/** Fabric mode's runner, shared by its three collectors: the real tools, or a test's; a missing tool makes its commands fail visibly. */
export function fabricRunner(context: CollectorContext): CommandRunner<FabricCommand> {
  return context.shared(RUNNER, () => {
    context.countCommands(FABRIC_TOOLS.tools);
    const injected = context.runner(FABRIC_TOOLS);
    if (injected !== undefined && injected !== 'not-installed') return injected;
    return realRunner(context);
  });
}

function realRunner(context: CollectorContext): CommandRunner<FabricCommand> {
  const { settings, logger } = context;
  const { found, missing } = locateTools(FABRIC_TOOLS.tools, {
    ibnetdiscover: settings.get(IBNETDISCOVER_PATH),
    iblinkinfo: settings.get(IBLINKINFO_PATH),
    ibqueryerrors: settings.get(IBQUERYERRORS_PATH),
    saquery: settings.get(SAQUERY_PATH),
    sminfo: settings.get(SMINFO_PATH),
    perfquery: settings.get(PERFQUERY_PATH),
  });
  if (missing.length > 0)
    logger.error({ missing }, `fabric mode cannot run every tool (install infiniband-diags or set --<tool>.path): ${missing.join('; ')}`);
  const paths = Object.fromEntries(FABRIC_TOOLS.tools.map((tool) => [tool, found[tool] ?? tool])) as Record<FabricCommand, string>;
  return new ExecaRunner({
    paths,
    timeoutMs: settings.get(DIAG_TIMEOUT),
    maxConcurrent: settings.get(FABRIC_MAX_CONCURRENT),
    maxOutputBytes: FABRIC_MAX_OUTPUT_BYTES,
  });
}

export const DISCOVERY_CYCLE: Cycle = {
  name: 'fabric discovery',
  interval: (settings) => settings.get(FABRIC_DISCOVERY_INTERVAL),
  // One command, bounded by the time limit: the cycle's own deadline is never shorter.
  deadline: (settings) => Math.max(settings.get(FABRIC_DISCOVERY_INTERVAL), settings.get(DIAG_TIMEOUT) + 1000),
};

export const FABRIC_PORTS_CYCLE: Cycle = {
  name: 'fabric ports',
  interval: (settings) => settings.get(FABRIC_INTERVAL),
  // Two commands in a row (the scan beside the sweeps, then perfquery where they cannot run).
  deadline: (settings) => Math.max(settings.get(FABRIC_INTERVAL), 2 * settings.get(DIAG_TIMEOUT) + 1000),
  // It reads through a topology: it starts once the first discovery is over.
  after: { cycle: DISCOVERY_CYCLE, fresh: false },
};

/** Why a fabric-mode command fails, in the words of the collector-failing findings. */
export const COMMANDS_FAIL =
  'no access to /dev/infiniband/umad* (not root), ib_umad not loaded or the local port down, a command past --diag.timeout on a large fabric, the tool not installed (--<tool>.path), or its output cut short or garbled on its way (a wrapper script, a tool of another version: the read errors name the lines)';
