// The fabric_module collector: the PHY detail of switch ports, in-band, from mstlink (or mlxlink)
// `-d lid-<LID> -p <port> -m -c [--rx_fec_histogram --show_histogram] --json` where the tool
// reaches the switches: the errors of each lane, the module's lane flags, the FEC histogram, and
// for the bad-links verdict the module's temperature and the PHY's effective BER. It reads in rounds of --fabric.module-interval on its own
// cycle, never holding the ports cycle: each round reads the ports whose errors rose in the last
// ports cycle first, then the next ports in turn, as many as the round's time allows at
// --fabric.max-concurrent commands at once (interval / --diag.timeout commands per slot), so that
// every port of a large fabric is read over successive rounds and each reading is kept until the
// port is read again. Off with one log line where the tool is absent, or where a whole round could
// not reach a single switch (no in-band access: an unmanaged switch, a tool without it).
import { DURATION, flag } from '../../config/flags.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import { fabricPortKey } from '../../model/fabric.js';
import { LANE_FAULT_KINDS } from '../../model/optical-module.js';
import type { Snapshot } from '../../model/snapshot.js';
import { ExecaRunner, type CommandRunner } from '../../sources/command-runner.js';
import { readModules, type ModuleTarget, type ModuleTool } from '../../sources/module/module-tools.js';
import {
  defineCollector,
  type Collector,
  type CollectorContext,
  type Cycle,
  type Off,
  type Reader,
  type Reading,
} from '../../collection/collector.js';
import { DIAG_TIMEOUT } from '../infiniband-diags.js';
import { findModuleTool, MODULE_TOOLS, ModuleQueryOfTool, MSTLINK_PATH } from '../module-tool.js';
import { FABRIC_DISCOVERY_PART, FABRIC_MODULE_PART, FABRIC_PORTS_PART, type FabricModulePart, type FabricPhyReading } from '../parts.js';
import { FABRIC_MAX_CONCURRENT, FABRIC_PORTS_CYCLE, FABRIC_SWITCH } from './fabric-mode.js';

export const FABRIC_MODULE_INTERVAL = flag(DURATION, {
  name: 'fabric.module-interval',
  key: 'fabric.module_interval',
  default: '5m',
  help: 'Length of one round of in-band mstlink readings of switch ports (lane errors, module lane flags, FEC histogram, module temperature and effective BER): ports with rising errors first, then the others in turn.',
});

const FABRIC_MODULE_CYCLE: Cycle = {
  name: 'fabric module',
  interval: (settings) => settings.get(FABRIC_MODULE_INTERVAL),
  deadline: (settings) => settings.get(FABRIC_MODULE_INTERVAL),
  // The ports to read are the ports cycle's; its first run is waited for, never held.
  after: { cycle: FABRIC_PORTS_CYCLE, fresh: false },
};

export type { FabricModulePart, FabricPhyReading };

/** The ports of a round, in order: rising errors first, then from `cursor` on in turn. */
export function roundTargets(
  all: readonly string[],
  rising: ReadonlySet<string>,
  cursor: number,
  size: number,
): { keys: string[]; cursor: number } {
  const keys = all.filter((key) => rising.has(key)).slice(0, size);
  let next = cursor % Math.max(1, all.length);
  for (let seen = 0; keys.length < size && seen < all.length; seen++) {
    const key = all[next]!;
    next = (next + 1) % all.length;
    if (!rising.has(key)) keys.push(key);
  }
  return { keys, cursor: next };
}

class FabricModuleReader implements Reader<FabricModulePart> {
  private readonly ports = new Map<string, FabricPhyReading>();
  private cursor = 0;
  private turnedOff = false;
  private readonly query: ModuleQueryOfTool;

  constructor(
    private readonly context: CollectorContext,
    private readonly runner: CommandRunner<ModuleTool>,
    private readonly tool: ModuleTool,
  ) {
    this.query = new ModuleQueryOfTool(runner, tool, context.logger, FABRIC_MODULE_PART.name, FABRIC_MODULE_METRICS.fecHistogram.name);
  }

  async read(snapshot: Snapshot, signal: AbortSignal): Promise<Reading<FabricModulePart>> {
    const topology = FABRIC_DISCOVERY_PART.of(snapshot)?.topology;
    const read = FABRIC_PORTS_PART.of(snapshot);
    if (this.turnedOff || !topology || !read) return { part: { ports: this.ports } };
    const lids = new Map<string, number>();
    const all: string[] = [];
    for (const reading of read.ports.values()) {
      const node = topology.nodes.get(reading.nodeGuid);
      if (node?.type !== 'switch' || node.lid === undefined || reading.port === 0) continue;
      lids.set(reading.nodeGuid, node.lid);
      all.push(fabricPortKey(reading.nodeGuid, reading.port));
    }
    for (const key of [...this.ports.keys()]) if (!read.ports.has(key)) this.ports.delete(key);
    if (all.length === 0) return { part: { ports: this.ports } };
    const settings = this.context.settings;
    const slots = Math.max(1, Math.floor(settings.get(FABRIC_MODULE_INTERVAL) / settings.get(DIAG_TIMEOUT)) - 1);
    const round = roundTargets(all, read.trend.risingErrors, this.cursor, slots * settings.get(FABRIC_MAX_CONCURRENT));
    this.cursor = round.cursor;
    const targets: ModuleTarget[] = round.keys.map((key) => {
      const reading = read.ports.get(key)!;
      return { device: `lid-${lids.get(reading.nodeGuid)}`, port: reading.port };
    });
    const byTarget = new Map(round.keys.map((key, i) => [`${targets[i]!.device}/${targets[i]!.port}`, key]));
    const result = await readModules(this.runner, this.tool, targets, signal, await this.query.of(signal));
    if (result.readings.length === 0 && (result.accessDenied || result.errors.length > 0)) {
      this.turnedOff = true;
      this.context.logger.warn(
        { tool: this.tool, error: result.errors[0]?.message },
        `fabric_module collector off: ${this.tool} reached none of ${targets.length} switch ports in-band (-d lid-<LID>); the switches' PHY detail is not read`,
      );
      return { part: { ports: this.ports }, failure: `${this.tool} reached no switch in-band; off until the exporter restarts` };
    }
    const readAt = this.context.now();
    for (const reading of result.readings) {
      const key = byTarget.get(`${reading.device}/${reading.port}`);
      if (key === undefined) continue;
      const [nodeGuid] = key.split('/');
      const celsius = reading.temperatureCelsius;
      this.ports.set(key, {
        nodeGuid: nodeGuid!,
        port: reading.port,
        readAt,
        laneErrors: reading.laneErrors ?? [],
        laneFaults: reading.laneFaults ?? {},
        fecHistogram: reading.fecHistogram ?? [],
        ...(celsius !== undefined && { temperature: { celsius, alarmCelsius: reading.thresholds.temperature?.high_alarm } }),
        ...(reading.ber.effective !== undefined && { effectiveBer: reading.ber.effective }),
      });
    }
    return {
      part: { ports: new Map(this.ports) },
      errors: result.errors,
      timeouts: Array.from({ length: result.timeouts }, () => this.tool),
    };
  }
}

function setUp(context: CollectorContext): Reader<FabricModulePart> | Off {
  const injected = context.runner(MODULE_TOOLS);
  if (injected === 'not-installed') return { off: 'neither mstlink nor mlxlink is installed' };
  if (injected !== undefined) {
    context.countCommands(['mstlink']);
    return new FabricModuleReader(context, injected, 'mstlink');
  }
  const located = findModuleTool(context.settings);
  if ('why' in located) {
    context.logger.info(`fabric_module collector off: ${located.why}`);
    return { off: located.why };
  }
  context.countCommands([located.tool]);
  const runner = new ExecaRunner({
    paths: { [located.tool]: located.path } as Record<ModuleTool, string>,
    timeoutMs: context.settings.get(DIAG_TIMEOUT),
    maxConcurrent: context.settings.get(FABRIC_MAX_CONCURRENT),
  });
  return new FabricModuleReader(context, runner, located.tool);
}

const FABRIC_PORT = ['node_guid', 'port'] as const;

export const FABRIC_MODULE_METRICS = {
  laneErrors: counter(
    'infiniband_fabric_port_phy_lane_errors_total',
    [...FABRIC_PORT, 'lane'],
    'Raw physical errors of each lane of a switch port, before forward error correction, since its PHY counters were last cleared (mstlink -d lid-<LID> -c, in rounds of --fabric.module-interval): one lane far above the others is one bad lane of the cable or module. Absent for ports not read yet.',
  ),
  fecHistogram: counter(
    'infiniband_fabric_port_fec_histogram_blocks_total',
    [...FABRIC_PORT, 'bin'],
    'FEC blocks a switch port received in each bin of its FEC histogram since the histogram was last cleared (mstlink -d lid-<LID> --rx_fec_histogram --show_histogram, in rounds of --fabric.module-interval, where the tool has it): on KP4 RS-FEC (HDR/NDR) bin N counts the blocks with N errored symbols (as infiniband_port_fec_histogram_blocks_total). Only the bins that counted a block are served (an absent bin has counted none); absent for ports not read yet and where the tool or the link gives none.',
  ),
  laneFault: gauge(
    'infiniband_fabric_port_module_lane_fault',
    [...FABRIC_PORT, 'lane', 'kind'],
    '1 while the module in a switch port raises the flag on the lane: kind="tx_fault", "rx_los", "tx_los", "cdr_lol" (as infiniband_port_module_lane_fault), as last read in-band. Served only while raised (absent while clear, and for what the module does not report): four kinds of four lanes at every switch port would be millions of series of 0.',
  ),
} as const;

const FAMILIES: readonly MetricSpec[] = Object.values(FABRIC_MODULE_METRICS);

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const samples = new Samples();
  const readings = [...(FABRIC_MODULE.of(snapshot)?.ports.values() ?? [])];
  const id = (r: FabricPhyReading) => ({ node_guid: r.nodeGuid, port: String(r.port) });
  for (const r of readings)
    r.laneErrors.forEach((value, i) => samples.add(FABRIC_MODULE_METRICS.laneErrors, { ...id(r), lane: String(i + 1) }, value));
  // Only the bins that counted a block: 16 bins of 120 000 switch ports are 2 million series, nearly all 0.
  for (const r of readings)
    r.fecHistogram.forEach((blocks, bin) => {
      if (blocks !== undefined && blocks > 0) samples.add(FABRIC_MODULE_METRICS.fecHistogram, { ...id(r), bin: String(bin) }, blocks);
    });
  // Only the raised flags: four kinds of four lanes at 120 000 switch ports are 2 million series of 0.
  for (const r of readings) {
    for (const kind of LANE_FAULT_KINDS)
      r.laneFaults[kind]?.forEach((raised, i) => {
        if (raised) samples.add(FABRIC_MODULE_METRICS.laneFault, { ...id(r), lane: String(i + 1), kind }, 1);
      });
  }
  samples.writeTo(FAMILIES, out);
}

export const FABRIC_MODULE: Collector<FabricModulePart> = defineCollector({
  name: FABRIC_MODULE_PART.name,
  checks: "the switch ports' lane errors, module lane flags and FEC histograms (in-band mstlink)",
  enabledBy: FABRIC_SWITCH,
  flags: [FABRIC_MODULE_INTERVAL, MSTLINK_PATH, FABRIC_MAX_CONCURRENT, DIAG_TIMEOUT],
  scope: 'fabric',
  schedule: { cycle: FABRIC_MODULE_CYCLE },
  onOverrun: 'keep',
  setUp,
  metrics: { families: FAMILIES, write: writeMetrics },
  failure: {
    consequence: "the switch ports' lane errors, module lane flags, FEC histograms and module temperatures are not read",
    meaning: 'A bad lane or a module raising its loss-of-signal flags on a switch port would show only as errors of the whole port.',
    cause:
      'mstlink cannot reach the switches in-band (-d lid-<LID>): switches without in-band access, a tool version without it, or the commands timing out.',
  },
});
