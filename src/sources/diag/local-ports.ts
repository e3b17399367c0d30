// The diag source: what sysfs cannot tell, asked of the fabric with infiniband-diags for every
// local InfiniBand port whose physical link is up. Per port:
//   sminfo                      is the subnet manager at the port's SM LID alive, and which is it
//   smpquery -D portinfo 0 P    the local port's supported/enabled/active width and speed
//   smpquery -D nodeinfo 0,P    the node at the other end of the cable (direct route: no SM needed)
//   smpquery -D nodedesc 0,P    … its description
//   smpquery -D portinfo 0,P N  … its port N (and port 0 of a switch, which holds the switch's LID)
//   perfquery <lid> <N>         … that port's error counters (needs LIDs, i.e. an SM)
//   perfquery [-x]              the local port's counters, only those sysfs does not provide
// Ethernet (RoCE) ports are never sent a MAD. A command that fails is recorded against its
// collector and its values are left out: nothing from a previous cycle is carried over.
import { performance } from 'node:perf_hooks';
import { PMA_COUNTERS } from '../../infiniband/pma-counters.js';
import { physicalLinkIsUp } from '../../infiniband/port-state.js';
import { portKey, type CollectorName, type Device, type DiagCommand, type DiagPort, type LinkPeer, type Port, type ReadError, type SubnetManagerReading } from '../../snapshot/types.js';
import { countersFromPerfquery, missingCounters, parsePerfquery, type PerfqueryReading } from './perfquery.js';
import { commandFailure, commandLine, type CommandResult, type CommandRunner } from '../command-runner.js';
import { isSubnetManagerUnreachable, parseSminfo } from './sminfo.js';
import { bestCommonEnabled, parseNodeDescription, parseNodeInfo, parsePortInfo, type PortInfo } from './smpquery.js';

const PORT_STATE_ACTIVE = 4;
const CAP_IS_SM = 0x2;

export interface DiagOptions {
  runner: CommandRunner<DiagCommand>;
  /** Tools that were found; commands of the others are skipped. */
  tools: ReadonlySet<DiagCommand>;
  /** The runner's time limit per command, for messages. */
  timeoutMs: number;
  /**
   * Per-MAD timeout handed to the tools (`-t`): they make 3 tries, so a tool whose peer does not
   * answer gives up by itself (and says so) before the runner has to kill it.
   */
  madTimeoutMs: number;
  signal?: AbortSignal;
}

export interface DiagCollectorResult {
  errors: ReadError[];
  /** The commands run, as their errors name them (the items this cycle read). */
  ran: Set<string>;
  /** Commands killed at the time limit. */
  timeouts: number;
  /** From the start of the cycle to the end of this collector's last command. */
  durationSeconds: number;
}

export interface DiagReading {
  ports: DiagPort[];
  collectors: Map<DiagCommand, DiagCollectorResult>;
}

/** A port that diag queries: InfiniBand link layer (or unknown: old kernels lack the file) with its physical link up. */
export function isQueriedPort(port: Port): boolean {
  const layer = port.linkLayer;
  return (layer === undefined || layer === 'InfiniBand') && physicalLinkIsUp(port.physicalState?.id);
}

/** Bookkeeping of one diag cycle: runs commands, records failures per collector. */
class DiagCycle {
  private readonly started = performance.now();
  readonly results = new Map<DiagCommand, DiagCollectorResult>();

  constructor(private readonly options: DiagOptions) {
    for (const tool of options.tools) this.results.set(tool, { errors: [], ran: new Set(), timeouts: 0, durationSeconds: 0 });
  }

  /** Run a command; undefined when the tool is absent or the command failed (already recorded). */
  async run(tool: DiagCommand, args: string[], accept?: (result: CommandResult<DiagCommand>) => boolean): Promise<CommandResult<DiagCommand> | undefined> {
    const entry = this.results.get(tool);
    if (!entry) return undefined;
    const result = await this.options.runner.run(tool, args, this.options.signal);
    entry.ran.add(commandLine(result));
    entry.durationSeconds = Math.max(entry.durationSeconds, (performance.now() - this.started) / 1000);
    if (result.outcome === 'exited' && (result.exitCode === 0 || accept?.(result))) return result;
    if (result.outcome === 'timeout') entry.timeouts += 1;
    this.fail(tool, commandLine(result), commandFailure(result, this.options.timeoutMs, '--diag.timeout') ?? 'failed');
    return undefined;
  }

  /** Parse a successful command's output; unexpected output is recorded as an error. */
  parse<T>(tool: DiagCommand, result: CommandResult | undefined, parser: (stdout: string) => T | undefined): T | undefined {
    if (!result) return undefined;
    const value = parser(result.stdout);
    if (value === undefined) {
      const head = result.stdout.trim().split('\n')[0] ?? '';
      this.fail(tool, commandLine(result), `unexpected output ${JSON.stringify(head.slice(0, 80))}`);
    }
    return value;
  }

  private fail(tool: CollectorName & DiagCommand, item: string, message: string): void {
    this.results.get(tool)?.errors.push({ collector: tool, item, message });
  }
}

/**
 * Query the linked InfiniBand ports of `devices`; with `reachable`, only those whose
 * `portKey(device, port)` it holds (the ports with a umad device: see umad.ts).
 */
export async function readDiag(devices: readonly Device[], options: DiagOptions, reachable?: ReadonlySet<string>): Promise<DiagReading> {
  const cycle = new DiagCycle(options);
  const targets = devices.flatMap((device) =>
    device.ports.filter((port) => isQueriedPort(port) && (reachable === undefined || reachable.has(portKey(device.name, port.port)))).map((port) => ({ device, port })),
  );
  // The runner's semaphore bounds the commands in flight; ports are walked concurrently.
  const ports = await Promise.all(targets.map(({ device, port }) => readPort(cycle, options, device, port)));
  return { ports, collectors: cycle.results };
}

async function readPort(cycle: DiagCycle, options: DiagOptions, device: Device, port: Port): Promise<DiagPort> {
  // -C/-P send every MAD through this very port: on a multi-rail host each rail has its own SM.
  const via = ['-C', device.name, '-P', String(port.port), '-t', String(options.madTimeoutMs)];
  // PMA queries are addressed by LID: without an SM (LID 0) they cannot work, and their failure
  // would say nothing about the counters.
  const addressed = port.state?.id === PORT_STATE_ACTIVE && (port.lid ?? 0) > 0;
  const [subnetManager, link, counters] = await Promise.all([
    readSubnetManager(cycle, via, port),
    readLink(cycle, via, port, addressed),
    addressed ? readLocalCounters(cycle, via, port) : Promise.resolve([]),
  ]);
  return { device: device.name, port: port.port, subnetManager, ...link, counters };
}

async function readSubnetManager(cycle: DiagCycle, via: string[], port: Port): Promise<SubnetManagerReading | undefined> {
  const unreachable = (result: CommandResult): boolean => isSubnetManagerUnreachable(result.stdout, result.exitCode);
  // An SM running on this port that the port does not follow (a STANDBY) is asked directly too.
  const lid = port.lid ?? 0;
  const runsLocalSm = (port.capabilityMask ?? 0) & CAP_IS_SM && lid > 0 && lid !== port.smLid;
  const [master, local] = await Promise.all([
    cycle.run('sminfo', via, unreachable),
    runsLocalSm ? cycle.run('sminfo', [...via, String(lid)], unreachable) : Promise.resolve(undefined),
  ]);
  if (!master) return undefined;
  const reachable = master.exitCode === 0;
  const localInfo = local?.exitCode === 0 ? cycle.parse('sminfo', local, parseSminfo) : undefined;
  if (!reachable) return { reachable, master: undefined, local: localInfo };
  const masterInfo = cycle.parse('sminfo', master, parseSminfo);
  return masterInfo ? { reachable, master: masterInfo, local: localInfo } : undefined;
}

async function readLink(
  cycle: DiagCycle,
  via: string[],
  port: Port,
  addressed: boolean,
): Promise<Pick<DiagPort, 'enabledCapability' | 'peer'>> {
  const toPeer = `0,${port.port}`;
  const [localInfo, node] = await Promise.all([
    cycle.run('smpquery', [...via, '-D', 'portinfo', '0', String(port.port)]).then((r) => cycle.parse('smpquery', r, parsePortInfo)),
    cycle.run('smpquery', [...via, '-D', 'nodeinfo', toPeer]).then((r) => cycle.parse('smpquery', r, parseNodeInfo)),
  ]);
  if (!node || node.nodeGuid === undefined || node.localPort === undefined) return { enabledCapability: undefined, peer: undefined };
  const peerPort = node.localPort;
  const isSwitch = node.nodeType === 'Switch';
  const [description, peerInfo, switchInfo] = await Promise.all([
    cycle.run('smpquery', [...via, '-D', 'nodedesc', toPeer]).then((r) => cycle.parse('smpquery', r, parseNodeDescription)),
    cycle.run('smpquery', [...via, '-D', 'portinfo', toPeer, String(peerPort)]).then((r) => cycle.parse('smpquery', r, parsePortInfo)),
    // A switch answers at the LID of its management port 0; its external ports carry none.
    isSwitch
      ? cycle.run('smpquery', [...via, '-D', 'portinfo', toPeer, '0']).then((r) => cycle.parse('smpquery', r, parsePortInfo))
      : Promise.resolve(undefined),
  ]);
  const lidSource: PortInfo | undefined = isSwitch ? switchInfo : peerInfo;
  const lid = lidSource?.lid !== undefined && lidSource.lid > 0 ? lidSource.lid : undefined;
  const enabledCapability = localInfo && peerInfo ? bestCommonEnabled(localInfo, peerInfo) : undefined;
  let counters: LinkPeer['counters'] = [];
  if (addressed && lid !== undefined) {
    const result = await cycle.run('perfquery', [...via, String(lid), String(peerPort)]);
    const reading = cycle.parse('perfquery', result, parsePerfquery);
    if (reading) counters = countersFromPerfquery(reading, undefined).filter((counter) => ERROR_COUNTERS.has(counter.name));
  }
  const peer: LinkPeer = { guid: node.nodeGuid, port: peerPort, lid, nodeType: node.nodeType, description, counters };
  return { enabledCapability, peer };
}

/** The counters exported for the link peer: every PMA error counter and PortXmitWait. */
export const ERROR_COUNTERS: ReadonlySet<string> = new Set(PMA_COUNTERS.filter((counter) => counter.error).map((counter) => counter.name));

async function readLocalCounters(cycle: DiagCycle, via: string[], port: Port): Promise<DiagPort['counters']> {
  const present = new Set(port.counters.map((counter) => counter.name));
  const missing = missingCounters(present);
  if (!missing.errors && !missing.traffic) return [];
  const [basic, extended] = await Promise.all([
    missing.errors ? query(cycle, via, []) : Promise.resolve(undefined),
    missing.traffic ? query(cycle, via, ['-x']) : Promise.resolve(undefined),
  ]);
  return countersFromPerfquery(basic, extended).filter((counter) => !present.has(counter.name));
}

async function query(cycle: DiagCycle, via: string[], extra: string[]): Promise<PerfqueryReading | undefined> {
  return cycle.parse('perfquery', await cycle.run('perfquery', [...via, ...extra]), parsePerfquery);
}
