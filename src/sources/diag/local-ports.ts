// The diag sources: what sysfs cannot tell, asked of the fabric with infiniband-diags for every
// local InfiniBand port whose physical link is up. Per port, one reader per tool:
//   readSubnetManagers  sminfo                      is the SM at the port's SM LID alive, and which is it
//   readLinks           smpquery -D portinfo 0 P    the local port's supported/enabled/active width and speed
//                       smpquery -D nodeinfo 0,P    the node at the other end of the cable (direct route: no SM needed)
//                       smpquery -D nodedesc 0,P    … its description
//                       smpquery -D portinfo 0,P N  … its port N (and port 0 of a switch, which holds the switch's LID)
//   readPortCounters    perfquery <lid> <N>         … that port's error counters (needs LIDs, i.e. an SM)
//                       perfquery [-x]              the local port's counters, only those sysfs does not provide
// Ethernet (RoCE) ports are never sent a MAD. A command that fails is recorded and its values are
// left out: nothing from a previous cycle is carried over.
import { defaultTick, deviceTick, type XmitWaitTick } from '../../model/congestion.js';
import { PMA_COUNTERS } from '../../model/pma-counters.js';
import { parsePortSamplesControl } from './port-samples-control.js';
import { physicalLinkIsUp } from '../../model/port-state.js';
import {
  portKey,
  type Device,
  type LinkPeer,
  type Port,
  type PortLink,
  type PortPma,
  type SubnetManagerReading,
} from '../../model/host.js';
import type { ItemError } from '../../model/snapshot.js';
import { countersFromPerfquery, missingCounters, parsePerfquery, type PerfqueryReading } from './perfquery.js';
import { commandFailure, commandLine, type CommandResult, type CommandRunner } from '../command-runner.js';
import { isSubnetManagerUnreachable, parseSminfo } from './sminfo.js';
import { bestCommonEnabled, parseNodeDescription, parseNodeInfo, parsePortInfo, type PortInfo } from './smpquery.js';

export const DIAG_COMMANDS = ['perfquery', 'sminfo', 'smpquery'] as const;
export type DiagCommand = (typeof DIAG_COMMANDS)[number];

const PORT_STATE_ACTIVE = 4;
const CAP_IS_SM = 0x2;

export interface DiagOptions {
  runner: CommandRunner<DiagCommand>;
  /** The runner's time limit per command, for messages. */
  timeoutMs: number;
  /**
   * Per-MAD timeout handed to the tools (`-t`): they make 3 tries, so a tool whose peer does not
   * answer gives up by itself (and says so) before the runner has to kill it.
   */
  madTimeoutMs: number;
  signal?: AbortSignal;
}

/** What one tool's pass over the ports read, and what went wrong. */
export interface DiagReading<T> {
  /** By `portKey(device, port)`: every queried port that gave an answer. */
  ports: Map<string, T>;
  errors: ItemError[];
  /** The commands run, as their errors name them (the items this pass read). */
  ran: ReadonlySet<string>;
  /** Commands killed at the time limit. */
  timeouts: number;
}

/** A port that diag queries: InfiniBand link layer (or unknown: old kernels lack the file) with its physical link up. */
export function isQueriedPort(port: Port): boolean {
  const layer = port.linkLayer;
  return (layer === undefined || layer === 'InfiniBand') && physicalLinkIsUp(port.physicalState?.id);
}

/** One tool's commands in one pass: runs them, records their failures. */
class ToolPass {
  readonly errors: ItemError[] = [];
  readonly ran = new Set<string>();
  timeouts = 0;

  constructor(
    private readonly tool: DiagCommand,
    private readonly options: DiagOptions,
  ) {}

  /** Run a command; undefined when it failed (recorded). */
  async run(args: string[], accept?: (result: CommandResult<DiagCommand>) => boolean): Promise<CommandResult<DiagCommand> | undefined> {
    const result = await this.options.runner.run(this.tool, args, this.options.signal);
    this.ran.add(commandLine(result));
    if (result.outcome === 'exited' && (result.exitCode === 0 || accept?.(result))) return result;
    if (result.outcome === 'timeout') this.timeouts += 1;
    this.errors.push({ item: commandLine(result), message: commandFailure(result, this.options.timeoutMs, '--diag.timeout') ?? 'failed' });
    return undefined;
  }

  /** Parse a successful command's output; unexpected output is recorded as an error. */
  parse<T>(result: CommandResult | undefined, parser: (stdout: string) => T | undefined): T | undefined {
    if (!result) return undefined;
    const value = parser(result.stdout);
    if (value === undefined) {
      const head = result.stdout.trim().split('\n')[0] ?? '';
      this.errors.push({ item: commandLine(result), message: `unexpected output ${JSON.stringify(head.slice(0, 80))}` });
    }
    return value;
  }
}

interface Target {
  device: Device;
  port: Port;
  /** -C/-P send every MAD through this very port: on a multi-rail host each rail has its own SM. */
  via: string[];
  /**
   * PMA queries are addressed by LID: without an SM (LID 0) they cannot work, and their failure
   * would say nothing about the counters.
   */
  addressed: boolean;
}

/**
 * The ports to query: the linked InfiniBand ports of `devices`; with `reachable`, only those whose
 * `portKey(device, port)` it holds (the ports with a umad device: see umad.ts).
 */
export function diagTargets(devices: readonly Device[], options: DiagOptions, reachable?: ReadonlySet<string>): Target[] {
  return devices.flatMap((device) =>
    device.ports
      .filter((port) => isQueriedPort(port) && (reachable === undefined || reachable.has(portKey(device.name, port.port))))
      .map((port) => ({
        device,
        port,
        via: ['-C', device.name, '-P', String(port.port), '-t', String(options.madTimeoutMs)],
        addressed: port.state?.id === PORT_STATE_ACTIVE && (port.lid ?? 0) > 0,
      })),
  );
}

/** Every target at once (the runner's semaphore bounds the commands in flight). */
async function eachTarget<T>(
  tool: DiagCommand,
  targets: readonly Target[],
  options: DiagOptions,
  read: (pass: ToolPass, target: Target) => Promise<T | undefined>,
): Promise<DiagReading<T>> {
  const pass = new ToolPass(tool, options);
  const ports = new Map<string, T>();
  await Promise.all(
    targets.map(async (target) => {
      const value = await read(pass, target);
      if (value !== undefined) ports.set(portKey(target.device.name, target.port.port), value);
    }),
  );
  // Map order: that of the targets, not of the answers.
  const ordered = new Map<string, T>();
  for (const target of targets) {
    const key = portKey(target.device.name, target.port.port);
    if (ports.has(key)) ordered.set(key, ports.get(key)!);
  }
  return { ports: ordered, errors: pass.errors, ran: pass.ran, timeouts: pass.timeouts };
}

/** sminfo from each target: is its subnet manager alive, and which is it. */
export function readSubnetManagers(targets: readonly Target[], options: DiagOptions): Promise<DiagReading<SubnetManagerReading>> {
  return eachTarget('sminfo', targets, options, async (pass, { port, via }) => {
    const unreachable = (result: CommandResult): boolean => isSubnetManagerUnreachable(result.stdout, result.exitCode);
    // An SM running on this port that the port does not follow (a STANDBY) is asked directly too.
    const lid = port.lid ?? 0;
    const runsLocalSm = (port.capabilityMask ?? 0) & CAP_IS_SM && lid > 0 && lid !== port.smLid;
    const [master, local] = await Promise.all([
      pass.run(via, unreachable),
      runsLocalSm ? pass.run([...via, String(lid)], unreachable) : Promise.resolve(undefined),
    ]);
    if (!master) return undefined;
    const reachable = master.exitCode === 0;
    const localInfo = local?.exitCode === 0 ? pass.parse(local, parseSminfo) : undefined;
    if (!reachable) return { reachable, master: undefined, local: localInfo };
    const masterInfo = pass.parse(master, parseSminfo);
    return masterInfo ? { reachable, master: masterInfo, local: localInfo } : undefined;
  });
}

/** smpquery by direct route from each target: the peer at the other end of its cable, and what both ends enable. */
export function readLinks(targets: readonly Target[], options: DiagOptions): Promise<DiagReading<PortLink>> {
  return eachTarget('smpquery', targets, options, async (pass, { port, via }) => {
    const toPeer = `0,${port.port}`;
    const [localInfo, node] = await Promise.all([
      pass.run([...via, '-D', 'portinfo', '0', String(port.port)]).then((r) => pass.parse(r, parsePortInfo)),
      pass.run([...via, '-D', 'nodeinfo', toPeer]).then((r) => pass.parse(r, parseNodeInfo)),
    ]);
    if (!node || node.nodeGuid === undefined || node.localPort === undefined) return { enabledCapability: undefined, peer: undefined };
    const peerPort = node.localPort;
    const isSwitch = node.nodeType === 'Switch';
    const [description, peerInfo, switchInfo] = await Promise.all([
      pass.run([...via, '-D', 'nodedesc', toPeer]).then((r) => pass.parse(r, parseNodeDescription)),
      pass.run([...via, '-D', 'portinfo', toPeer, String(peerPort)]).then((r) => pass.parse(r, parsePortInfo)),
      // A switch answers at the LID of its management port 0; its external ports carry none.
      isSwitch ? pass.run([...via, '-D', 'portinfo', toPeer, '0']).then((r) => pass.parse(r, parsePortInfo)) : Promise.resolve(undefined),
    ]);
    const lidSource: PortInfo | undefined = isSwitch ? switchInfo : peerInfo;
    const lid = lidSource?.lid !== undefined && lidSource.lid > 0 ? lidSource.lid : undefined;
    const enabledCapability = localInfo && peerInfo ? bestCommonEnabled(localInfo, peerInfo) : undefined;
    const peer: LinkPeer = { guid: node.nodeGuid, port: peerPort, lid, nodeType: node.nodeType, description };
    return { enabledCapability, peer };
  });
}

/** The counters exported for the link peer: every PMA error counter and PortXmitWait. */
export const ERROR_COUNTERS: ReadonlySet<string> = new Set(PMA_COUNTERS.filter((counter) => counter.error).map((counter) => counter.name));

/**
 * perfquery from each target: its own counters that sysfs lacks, and its link peer's error
 * counters (by the LID `links` found for it).
 */
export function readPortCounters(
  targets: readonly Target[],
  links: ReadonlyMap<string, PortLink> | undefined,
  options: DiagOptions,
  ticks: KnownTicks = new Map(),
): Promise<DiagReading<PortPma>> {
  return eachTarget('perfquery', targets, options, async (pass, { device, port, via, addressed }) => {
    if (!addressed) return undefined;
    const peer = links?.get(portKey(device.name, port.port))?.peer;
    const [tick, counters, peerCounters] = await Promise.all([
      readTick(pass, via, device, port, ticks),
      readLocalCounters(pass, via, port),
      peer?.lid === undefined
        ? Promise.resolve([])
        : pass.run([...via, String(peer.lid), String(peer.port)]).then((result) => {
            const reading = pass.parse(result, parsePerfquery);
            return reading ? countersFromPerfquery(reading, undefined).filter((counter) => ERROR_COUNTERS.has(counter.name)) : [];
          }),
    ]);
    return { counters, peerCounters, tick };
  });
}

/** Ticks read so far, by `portKey`, with the node GUID of the device they were read from. */
export type KnownTicks = Map<string, { nodeGuid: string | undefined; tick: XmitWaitTick }>;

/** The adapter's PCI device ID from its hca_type (`MT4123` is ConnectX-6, 0x101b), for its generation's tick. */
export function deviceIdOf(device: Device): number | undefined {
  const match = /^MT(\d{1,5})$/.exec(device.hcaType ?? '');
  return match ? Number(match[1]) : undefined;
}

/**
 * The port's PortXmitWait tick: `perfquery -c` once per port, again only when the device changes
 * (another node GUID); the generation's documented tick where the adapter does not answer
 * PortSamplesControl (any exit status: that is no error). A query that could not run is asked again.
 */
async function readTick(pass: ToolPass, via: string[], device: Device, port: Port, ticks: KnownTicks): Promise<XmitWaitTick> {
  const key = portKey(device.name, port.port);
  const known = ticks.get(key);
  if (known && known.nodeGuid === device.nodeGuid) return known.tick;
  const deviceId = deviceIdOf(device);
  const result = await pass.run(['-c', ...via], () => true);
  if (!result) return defaultTick(deviceId);
  const reading = parsePortSamplesControl(`${result.stdout}\n${result.stderr}`);
  const tick = 'tick' in reading ? deviceTick(reading.tick, deviceId) : defaultTick(deviceId);
  ticks.set(key, { nodeGuid: device.nodeGuid, tick });
  return tick;
}

async function readLocalCounters(pass: ToolPass, via: string[], port: Port): Promise<PortPma['counters']> {
  const present = new Set(port.counters.map((counter) => counter.name));
  const missing = missingCounters(present);
  if (!missing.errors && !missing.traffic) return [];
  const query = async (extra: string[]): Promise<PerfqueryReading | undefined> =>
    pass.parse(await pass.run([...via, ...extra]), parsePerfquery);
  const [basic, extended] = await Promise.all([
    missing.errors ? query([]) : Promise.resolve(undefined),
    missing.traffic ? query(['-x']) : Promise.resolve(undefined),
  ]);
  return countersFromPerfquery(basic, extended).filter((counter) => !present.has(counter.name));
}
