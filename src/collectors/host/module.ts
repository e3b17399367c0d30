// The module collector: the cable and optical module of each InfiniBand port — identity,
// temperature, voltage, per-lane Rx/Tx power and bias with the module's own thresholds, the PHY's
// raw/effective BER, errors per lane, the FEC histogram (where the tool has it) and the firmware's
// link-down reason — from mstlink (Debian's mstflint) or
// NVIDIA's mlxlink, one command per port through the command runner, every --module.interval
// (reading a module goes over I2C in the firmware: hundreds of ms a port). The tools need root or
// the device's access: without the tool or the access the collector turns itself off with one log
// line.
import { DURATION, collectorSwitch, flag } from '../../config/flags.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { counter, gauge, type MetricSpec } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import { BIT_ERROR_RATE_THRESHOLD } from '../../model/bit-error-rate.js';
import type { Finding } from '../../model/finding.js';
import {
  LANE_FAULT_KINDS,
  MODULE_MEASURES,
  PHY_BER_KINDS,
  THRESHOLD_LEVELS,
  lanesWithLowRxPower,
  moduleTooHot,
  type ModuleReading,
} from '../../model/optical-module.js';
import type { Snapshot } from '../../model/snapshot.js';
import { ExecaRunner, type CommandRunner } from '../../sources/command-runner.js';
import { readModules, type ModuleTool } from '../../sources/module/module-tools.js';
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
import { HOST_READING } from './host-reading.js';

const PORT = ['device', 'port'] as const;

export const MODULE_SWITCH = collectorSwitch(
  'module',
  'module',
  true,
  "Read each port's cable and optical module with mstlink or mlxlink (needs root; off with one log line without the tool or the access).",
);
export const MODULE_INTERVAL = flag(DURATION, {
  name: 'module.interval',
  key: 'module.interval',
  default: '5m',
  help: "How often the modules are read (each port's module takes the firmware hundreds of ms).",
});
export { MODULE_TOOLS, MSTLINK_PATH };

const MODULE_CYCLE: Cycle = {
  name: 'module',
  interval: (settings) => settings.get(MODULE_INTERVAL),
  // One command per port, run side by side within the runner's limit: a few time limits at most.
  deadline: (settings) => Math.max(settings.get(MODULE_INTERVAL), 4 * settings.get(DIAG_TIMEOUT)),
  // The ports to read are the host reading's.
  after: { cycle: HOST_READING, fresh: false },
};

/** Devices the tools read: Mellanox/NVIDIA adapters of the mlx5 driver (ConnectX-4 and later). */
const READABLE = /^mlx5_/;

class ModuleReader implements Reader<readonly ModuleReading[]> {
  private turnedOff = false;
  private readonly query: ModuleQueryOfTool;

  constructor(
    private readonly context: CollectorContext,
    private readonly runner: CommandRunner<ModuleTool>,
    private readonly tool: ModuleTool,
  ) {
    this.query = new ModuleQueryOfTool(runner, tool, context.logger, 'module', MODULE_METRICS.fecHistogram.name);
  }

  async read(snapshot: Snapshot, signal: AbortSignal): Promise<Reading<readonly ModuleReading[]>> {
    if (this.turnedOff) return { part: [] };
    const targets = snapshot.devices
      .filter((device) => READABLE.test(device.name))
      .flatMap((device) => device.ports.map((port) => ({ device: device.name, port: port.port })));
    if (targets.length === 0) return { part: [] };
    const reading = await readModules(this.runner, this.tool, targets, signal, await this.query.of(signal));
    if (reading.accessDenied) {
      // Not an error of every port at every interval: the collector is off, once, with its reason.
      this.turnedOff = true;
      this.context.logger.warn(
        { tool: this.tool, error: reading.errors[0]?.message },
        `module collector off: ${this.tool} needs root or access to the adapters (run as root, or give the exporter's user the device's access; --no-collector.module silences this)`,
      );
      return { part: [], failure: `${this.tool}: access denied; the collector is off until the exporter restarts with the access` };
    }
    return { part: reading.readings, errors: reading.errors, timeouts: Array.from({ length: reading.timeouts }, () => this.tool) };
  }
}

/** The tool, or why the collector is off (said once in the log). */
function setUp(context: CollectorContext): Reader<readonly ModuleReading[]> | Off {
  const injected = context.runner(MODULE_TOOLS);
  if (injected === 'not-installed') return { off: 'neither mstlink nor mlxlink is installed' };
  if (injected !== undefined) {
    context.countCommands(['mstlink']);
    return new ModuleReader(context, injected, 'mstlink');
  }
  const located = findModuleTool(context.settings);
  if ('why' in located) {
    context.logger.info(`module collector off: ${located.why} (--no-collector.module silences this)`);
    return { off: located.why };
  }
  const { tool } = located;
  if (context.mode === 'serve' && process.getuid?.() !== 0)
    context.logger.info({ tool }, 'module collector: not running as root; the tool will say whether the adapters are accessible');
  context.countCommands([tool]);
  const runner = new ExecaRunner({
    paths: { [tool]: located.path } as Record<ModuleTool, string>,
    timeoutMs: context.settings.get(DIAG_TIMEOUT),
    maxConcurrent: 2,
  });
  return new ModuleReader(context, runner, tool);
}

/** The cable and module of each port (collector `module`, mstlink or mlxlink). */
export const MODULE_METRICS = {
  info: gauge(
    'infiniband_port_module_info',
    [...PORT, 'vendor', 'part_number', 'serial', 'cable_type', 'length_meters'],
    'The cable or transceiver in the port, from its EEPROM (value always 1): vendor, part number, serial number, cable type (passive copper, active copper, optical) and length in metres (empty when unknown). Absent for an empty cage.',
  ),
  temperature: gauge(
    'infiniband_port_module_temperature_celsius',
    PORT,
    'Temperature the module reports. Compare with infiniband_port_module_threshold{measure="temperature"}: a module at its own high threshold drifts out of spec. Absent for cables without a sensor (passive copper).',
  ),
  voltage: gauge('infiniband_port_module_voltage_volts', PORT, 'Supply voltage the module reports. Absent for cables without a sensor.'),
  rxPower: gauge(
    'infiniband_port_module_rx_power_dbm',
    [...PORT, 'lane'],
    'Optical power the module receives on each lane, in dBm (0 dBm = 1 mW; -40 means no light). At or below infiniband_port_module_threshold{measure="rx_power",level=~"low_.*"}: a dirty connector or fibre, or a failing transmitter at the other end. Absent for copper.',
  ),
  txPower: gauge(
    'infiniband_port_module_tx_power_dbm',
    [...PORT, 'lane'],
    'Optical power the module transmits on each lane, in dBm. Absent for copper.',
  ),
  txBias: gauge(
    'infiniband_port_module_tx_bias_amperes',
    [...PORT, 'lane'],
    'Laser bias current of each lane of the module: rising bias at steady power is an ageing laser. Absent for copper.',
  ),
  threshold: gauge(
    'infiniband_port_module_threshold',
    [...PORT, 'measure', 'level'],
    'Thresholds the module stores in its own EEPROM, in the unit of each measure (temperature C, voltage V, rx_power/tx_power dBm, tx_bias A): level high_alarm, high_warning, low_warning, low_alarm as the tool reports them (mstlink -m gives the alarm levels). Absent when the module reports none.',
  ),
  phyBer: gauge(
    'infiniband_port_phy_ber',
    [...PORT, 'kind'],
    'Bit error rate the adapter\'s PHY computed since its counters were last cleared: kind="raw" before forward error correction (high by design on HDR/NDR), "effective" after it, "symbol" after FEC and the link layer (what the SymbolErrorCounter counts). Absent while the link is down.',
  ),
  phyLaneErrors: counter(
    'infiniband_port_phy_lane_errors_total',
    [...PORT, 'lane'],
    'Raw physical errors of each lane of the link, before forward error correction, since the PHY counters were last cleared (mstlink/mlxlink -c "Raw Physical Errors Per Lane"): one lane far above the others is one bad lane of the cable or module, which FEC hides until it cannot. Absent where the tool reports none.',
  ),
  fecHistogram: counter(
    'infiniband_port_fec_histogram_blocks_total',
    [...PORT, 'bin'],
    'FEC blocks the port received in each bin of its FEC histogram since the histogram was last cleared (mstlink/mlxlink --rx_fec_histogram --show_histogram, where the tool has it): on KP4 RS-FEC (HDR/NDR) bin N counts the blocks that arrived with N errored symbols (the code corrects up to 15). Blocks moving into the higher bins are a link decaying below the FEC layer while its symbol errors still read 0. Absent where the tool or the link gives none (link down, no RS-FEC).',
  ),
  moduleLaneFault: gauge(
    'infiniband_port_module_lane_fault',
    [...PORT, 'lane', 'kind'],
    '1 while the module raises the flag on the lane, 0 while clear (mstlink/mlxlink -m "[per lane]" flags): kind="tx_fault" (its transmitter failed), "rx_los" (no signal received: the far end, the fibre or a connector), "tx_los" (no signal from the adapter into the module), "cdr_lol" (a clock and data recovery circuit, transmit or receive side, lost lock). Absent for what the module does not report (passive copper).',
  ),
  linkDownReason: gauge(
    'infiniband_port_link_down_reason_info',
    [...PORT, 'reason'],
    'Why the firmware says the link is not healthy (value always 1): its troubleshooting recommendation, e.g. a cable that was unplugged or a peer that did not answer. Present only while that status is not "No issue was observed".',
  ),
} as const;

const FAMILIES: readonly MetricSpec[] = Object.values(MODULE_METRICS);

/** The samples of the `module` collector: one reading per port the tool answered for. */
export function moduleSamples(readings: readonly ModuleReading[]): Samples {
  const samples = new Samples();
  const M = MODULE_METRICS;
  const id = (r: ModuleReading) => ({ device: r.device, port: String(r.port) });
  for (const r of readings) {
    const identity = r.identity;
    if (!identity) continue;
    samples.add(
      M.info,
      {
        ...id(r),
        vendor: identity.vendor ?? '',
        part_number: identity.partNumber ?? '',
        serial: identity.serial ?? '',
        cable_type: identity.cableType ?? '',
        length_meters: identity.lengthMeters === undefined ? '' : String(identity.lengthMeters),
      },
      1,
    );
  }
  for (const r of readings) samples.add(M.temperature, id(r), r.temperatureCelsius);
  for (const r of readings) samples.add(M.voltage, id(r), r.voltageVolts);
  const lanes = (spec: MetricSpec, values: (r: ModuleReading) => readonly (number | undefined)[]) => {
    for (const r of readings) values(r).forEach((value, i) => samples.add(spec, { ...id(r), lane: String(i + 1) }, value));
  };
  lanes(M.rxPower, (r) => r.rxPowerDbm);
  lanes(M.txPower, (r) => r.txPowerDbm);
  lanes(M.txBias, (r) => r.txBiasAmperes);
  for (const r of readings) {
    for (const measure of MODULE_MEASURES) {
      for (const level of THRESHOLD_LEVELS) samples.add(M.threshold, { ...id(r), measure, level }, r.thresholds[measure]?.[level]);
    }
  }
  for (const r of readings) for (const kind of PHY_BER_KINDS) samples.add(M.phyBer, { ...id(r), kind }, r.ber[kind]);
  lanes(M.phyLaneErrors, (r) => r.laneErrors ?? []);
  for (const r of readings) r.fecHistogram?.forEach((blocks, bin) => samples.add(M.fecHistogram, { ...id(r), bin: String(bin) }, blocks));
  for (const r of readings) {
    for (const kind of LANE_FAULT_KINDS) {
      r.laneFaults?.[kind]?.forEach((raised, i) =>
        samples.add(M.moduleLaneFault, { ...id(r), lane: String(i + 1), kind }, raised === undefined ? undefined : raised ? 1 : 0),
      );
    }
  }
  for (const r of readings) if (r.linkDownReason) samples.add(M.linkDownReason, { ...id(r), reason: r.linkDownReason.reason }, 1);
  return samples;
}

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  moduleSamples(MODULE.of(snapshot) ?? []).writeTo(FAMILIES, out);
}

function moduleName(reading: ModuleReading): string {
  const identity = reading.identity;
  const name = [identity?.vendor, identity?.partNumber].filter(Boolean).join(' ');
  return `the module in ${reading.device}/${reading.port}${name ? ` (${name}${identity?.serial ? `, serial ${identity.serial}` : ''})` : ''}`;
}

const levelName = (level: string): string => level.replace('_', ' ');

/**
 * The findings of the cables and modules: too hot or receiving too little light at the module's
 * own thresholds (warnings, as InfiniBandModuleTemperatureHigh and InfiniBandModuleOpticalPowerLow),
 * a post-FEC BER above 10^-12 since the PHY counters were cleared (as InfiniBandLinkBitErrorRateHigh),
 * and the firmware's link-down reason (info). The entry point for the `module` collector's findings.
 */
export function moduleFindings(readings: readonly ModuleReading[]): Finding[] {
  const findings: Finding[] = [];
  for (const reading of readings) {
    const subject = { kind: 'port', device: reading.device, port: reading.port } as const;
    const hot = moduleTooHot(reading);
    if (hot) {
      findings.push({
        condition: 'module-temperature-high',
        severity: 'warning',
        subject,
        summary: `${moduleName(reading)} is at ${hot.celsius} °C, at or above its own ${levelName(hot.threshold.level)} threshold of ${hot.threshold.value} °C`,
        meaning:
          'A hot module drifts out of its optical specification: its link starts counting errors, and past its alarm threshold it may turn its laser off.',
        cause:
          'Poor airflow at the adapter or the switch (a failed fan, a missing blank, cables in front of the vents), a module drawing more power than the cage is cooled for, or a failing module.',
        remedy:
          'restore the airflow; compare with the other ports (all hot: cooling; one hot: the module) and replace the module if it stays hot',
        runbook: 'infinibandmoduletemperaturehigh',
        alert: 'InfiniBandModuleTemperatureHigh',
      });
    }
    const dark = lanesWithLowRxPower(reading);
    if (dark) {
      const lanes = dark.lanes.map(({ lane, dbm }) => `${dbm} dBm on lane ${lane}`).join(', ');
      findings.push({
        condition: 'module-optical-power-low',
        severity: 'warning',
        subject,
        summary: `${moduleName(reading)} receives ${lanes}: at or below its own ${levelName(dark.threshold.level)} threshold of ${dark.threshold.value} dBm`,
        meaning: 'The receiver is close to where it cannot tell ones from zeros: bit errors follow, then the lane or the link drops.',
        cause:
          'A dirty connector (most often), a damaged or tightly bent fibre, a failing transmitter at the other end, a fibre too long for the module.',
        remedy:
          'clean both connectors of the fibre and reseat; then replace the fibre, the module at the other end (check its Tx power and bias), then this module',
        runbook: 'infinibandmoduleopticalpowerlow',
        alert: 'InfiniBandModuleOpticalPowerLow',
      });
    }
    const ber = reading.ber.symbol ?? reading.ber.effective;
    if (ber !== undefined && ber > BIT_ERROR_RATE_THRESHOLD) {
      const since =
        reading.minutesSinceClear === undefined
          ? 'since its counters were cleared'
          : `in the ${Math.round(reading.minutesSinceClear)} minutes since its counters were cleared`;
      findings.push({
        condition: 'link-bit-error-rate-high',
        severity: 'warning',
        subject,
        summary: `port ${reading.device}/${reading.port}: the adapter's PHY measured ${reading.ber.symbol !== undefined ? 'a symbol' : 'an effective (post-FEC)'} BER of ${ber.toExponential(1)} ${since}, above 10^-12`,
        meaning: 'Errors forward error correction could not fix reach the link layer: every one is a packet dropped and resent.',
        cause: 'A dirty connector, a damaged cable, a failing transceiver, a cable not rated for the speed.',
        remedy: `reseat and clean the cable at both ends, then swap it; mstlink -d ${reading.device} -p ${reading.port} -c shows the errors per lane, --pc clears them`,
        runbook: 'infinibandlinkbiterrorratehigh',
        alert: 'InfiniBandLinkBitErrorRateHigh',
      });
    }
    if (reading.linkDownReason) {
      findings.push({
        condition: 'link-down-reason',
        severity: 'info',
        subject,
        summary: `port ${reading.device}/${reading.port}: the adapter's firmware reports "${reading.linkDownReason.reason}" (status ${reading.linkDownReason.opcode})`,
        meaning: "The firmware's own diagnosis of the link: why it is down or not at its best.",
        cause:
          'What the recommendation says: an unplugged cable, a peer that does not answer, a cable not supported at the speed, a training failure.',
        remedy: `follow the recommendation; mstlink -d ${reading.device} -p ${reading.port} shows it with the link's state`,
        runbook: 'infinibandportlinkdown',
        alert: undefined,
      });
    }
  }
  return findings;
}

export const MODULE: Collector<readonly ModuleReading[]> = defineCollector({
  name: 'module',
  checks: 'cables and optical modules',
  enabledBy: MODULE_SWITCH,
  flags: [MODULE_SWITCH, MODULE_INTERVAL, MSTLINK_PATH, DIAG_TIMEOUT],
  scope: 'host',
  schedule: { cycle: MODULE_CYCLE },
  onOverrun: 'keep',
  setUp,
  metrics: { families: FAMILIES, write: writeMetrics },
  findings: (snapshot) => moduleFindings(MODULE.of(snapshot) ?? []),
  failure: {
    consequence: "the cables' and modules' temperatures, powers and error rates are unknown",
    meaning: 'A module running hot or losing receive power would not show before its link fails.',
    cause: 'No root or device access for mstlink/mlxlink, a module that does not answer over I2C, or a command past --diag.timeout.',
  },
});
