// The cable in a port: its module's identity, its digital diagnostics (temperature, supply voltage,
// per-lane receive and transmit power and laser bias) with the thresholds the module stores in its
// own EEPROM, and the physical-layer error rates and link-down reason the adapter's firmware keeps,
// as mstlink (mstflint) or NVIDIA's mlxlink read them. Plain data and pure judgments: the parsers
// are in sources/module/, the reader in sources/module/module-tools.ts.

/** What a module measures; each has a metric of its own and thresholds in `_threshold{measure}`. */
export const MODULE_MEASURES = ['temperature', 'voltage', 'rx_power', 'tx_power', 'tx_bias'] as const;
export type ModuleMeasure = (typeof MODULE_MEASURES)[number];

/**
 * Threshold levels as SFF-8636/CMIS name them. `mstlink -m` prints one pair per measure, the
 * module's alarm thresholds (the PDDR module-info page calls them "Alarm high/low ... threshold"):
 * `high_alarm` and `low_alarm`. Warning levels appear where a tool reports them.
 */
export const THRESHOLD_LEVELS = ['high_alarm', 'high_warning', 'low_warning', 'low_alarm'] as const;
export type ThresholdLevel = (typeof THRESHOLD_LEVELS)[number];

export type ModuleThresholds = Partial<Record<ModuleMeasure, Partial<Record<ThresholdLevel, number>>>>;

/** Lanes of one module at most: an OSFP or QSFP-DD has 8 (CMIS), a QSFP 4, an SFP 1. */
export const MAX_MODULE_LANES = 8;

/**
 * Bins of an FEC histogram at most: the PPHCR register the tools read it from has 16 bin ranges
 * (bin N counts the FEC blocks received with N errored symbols on KP4 RS-FEC (544,514), 0 to 15).
 */
export const MAX_FEC_HISTOGRAM_BINS = 16;

/**
 * Whether one measure's levels are in their order: low alarm below high alarm, and each warning
 * within the alarms (low alarm ≤ low warning ≤ high warning ≤ high alarm, where present). Levels
 * out of order are an EEPROM that cannot be believed, and would judge every reading wrong.
 */
export function thresholdsInOrder(levels: Partial<Record<ThresholdLevel, number>>): boolean {
  const ordered = (['low_alarm', 'low_warning', 'high_warning', 'high_alarm'] as const)
    .map((level) => levels[level])
    .filter((value) => value !== undefined);
  if (levels.low_alarm !== undefined && levels.high_alarm !== undefined && !(levels.low_alarm < levels.high_alarm)) return false;
  return ordered.every((value, i) => i === 0 || ordered[i - 1]! <= value);
}

/** Units of the exported values: temperature °C, voltage V, power dBm, bias A. */
export interface ModuleIdentity {
  /** SFF-8024 identifier as the tool names it: QSFP28, QSFP-DD, OSFP, SFP28. */
  identifier: string | undefined;
  vendor: string | undefined;
  partNumber: string | undefined;
  serial: string | undefined;
  /** "Passive copper cable", "Optical Module (separated)", "Active copper cable", … */
  cableType: string | undefined;
  /** Length in metres for cables, reach for transceivers ("Transfer Distance [m]"). */
  lengthMeters: number | undefined;
}

export const PHY_BER_KINDS = ['raw', 'effective', 'symbol'] as const;
/**
 * `raw`: before forward error correction ("Raw Physical BER"); `effective`: after it ("Effective
 * Physical BER"); `symbol`: after FEC and the link layer's own check, InfiniBand only ("Symbol
 * BER"), the rate of the errors the PMA SymbolErrorCounter counts.
 */
export type PhyBerKind = (typeof PHY_BER_KINDS)[number];

export interface ModuleReading {
  device: string;
  port: number;
  /** Undefined for an empty cage: nothing is plugged in. */
  identity: ModuleIdentity | undefined;
  /** Measurements the module reports; absent ones (copper, no diagnostics) are undefined or empty. */
  temperatureCelsius: number | undefined;
  voltageVolts: number | undefined;
  /** Per lane, lane 1 first (at most MAX_MODULE_LANES); undefined for a lane the tool printed no value for. */
  rxPowerDbm: readonly (number | undefined)[];
  txPowerDbm: readonly (number | undefined)[];
  txBiasAmperes: readonly (number | undefined)[];
  thresholds: ModuleThresholds;
  /** Where the tool reported them (link up). */
  ber: Partial<Record<PhyBerKind, number>>;
  /** Errors and the minutes since the physical counters were last cleared, for a BER since then. */
  symbolErrors: number | undefined;
  minutesSinceClear: number | undefined;
  /** The firmware's troubleshooting status when it is not 0 ("No issue was observed"). */
  linkDownReason: { opcode: number; reason: string } | undefined;
  /** Raw physical (pre-FEC) errors of each lane since the counters were last cleared, lane 1 first; absent where the tool printed none. */
  laneErrors?: readonly (number | undefined)[];
  /** The module's latched lane flags, per kind and lane (lane 1 first): true raised, false clear, undefined not reported. */
  laneFaults?: Partial<Record<LaneFaultKind, readonly (boolean | undefined)[]>>;
  /**
   * FEC blocks received in each bin of the FEC histogram since it was last cleared, bin 0 first
   * (at most MAX_FEC_HISTOGRAM_BINS); undefined for a bin the tool printed unreadably; absent where
   * the histogram was not asked for or the port has none (link down, no RS-FEC).
   */
  fecHistogram?: readonly (number | undefined)[];
}

/**
 * A module's lane flags (CMIS/SFF-8636, as mstlink/mlxlink -m print them "[per lane]"): tx_fault
 * (the transmitter failed), rx_los and tx_los (no signal in), cdr_lol (a clock and data recovery
 * circuit lost lock, on the transmit or the receive side).
 */
export const LANE_FAULT_KINDS = ['tx_fault', 'rx_los', 'tx_los', 'cdr_lol'] as const;
export type LaneFaultKind = (typeof LANE_FAULT_KINDS)[number];

/** The threshold to judge `measure` against on its high (or low) side: the warning level, else the alarm level. */
export function judgingThreshold(
  thresholds: ModuleThresholds,
  measure: ModuleMeasure,
  side: 'high' | 'low',
): { level: ThresholdLevel; value: number } | undefined {
  const levels = thresholds[measure];
  if (!levels) return undefined;
  for (const level of side === 'high' ? (['high_warning', 'high_alarm'] as const) : (['low_warning', 'low_alarm'] as const)) {
    const value = levels[level];
    if (value !== undefined) return { level, value };
  }
  return undefined;
}

/** The module is at or above its own high-temperature threshold (as InfiniBandModuleTemperatureHigh judges it). */
export function moduleTooHot(reading: ModuleReading): { celsius: number; threshold: { level: ThresholdLevel; value: number } } | undefined {
  const threshold = judgingThreshold(reading.thresholds, 'temperature', 'high');
  const celsius = reading.temperatureCelsius;
  return celsius !== undefined && threshold && celsius >= threshold.value ? { celsius, threshold } : undefined;
}

/** Lanes (1-based) receiving at or below the module's own low receive-power threshold (as InfiniBandModuleOpticalPowerLow). */
export function lanesWithLowRxPower(
  reading: ModuleReading,
): { lanes: { lane: number; dbm: number }[]; threshold: { level: ThresholdLevel; value: number } } | undefined {
  const threshold = judgingThreshold(reading.thresholds, 'rx_power', 'low');
  if (!threshold) return undefined;
  const lanes = reading.rxPowerDbm.flatMap((dbm, i) => (dbm !== undefined && dbm <= threshold.value ? [{ lane: i + 1, dbm }] : []));
  return lanes.length > 0 ? { lanes, threshold } : undefined;
}
