// What `mstlink` (mstflint) and NVIDIA's `mlxlink` print for one port with `-m -c`: sections of
// "Key : value" records, as text (a title, a line of dashes, padded keys) or, with `--json`, as
// {"result": {"output": {"<section>": {"<key>": "<value>" | {"values": [...]}}}}, "status": …}
// (mlxlink/modules/printutil/mlxlink_cmd_print.cpp: the same keys and value strings, per-lane
// values split into arrays). Both become the same sections, read by one interpretation. Pure
// functions, table-tested on recorded outputs (test/fixtures/module/).
import {
  MAX_FEC_HISTOGRAM_BINS,
  MAX_MODULE_LANES,
  thresholdsInOrder,
  type LaneFaultKind,
  type ModuleIdentity,
  type ModuleReading,
  type ModuleThresholds,
  type PhyBerKind,
} from '../../model/optical-module.js';

/** Section title → key → value, as the tool printed them (per-lane values joined with commas). */
export type MlxlinkSections = ReadonlyMap<string, ReadonlyMap<string, string>>;

const ANSI_ESCAPE = /\x1b\[[0-9;]*m/g;

/** Parse the text output. Lines that are neither a section title nor a record are skipped. */
export function parseMlxlinkText(stdout: string): MlxlinkSections {
  const sections = new Map<string, Map<string, string>>();
  const lines = stdout.replace(ANSI_ESCAPE, '').split('\n');
  let current: Map<string, string> | undefined;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!.trimEnd();
    const next = lines[i + 1]?.trim() ?? '';
    if (line.trim() !== '' && !line.includes(':') && /^-{3,}$/.test(next)) {
      current = new Map();
      sections.set(line.trim(), current);
      i++;
      continue;
    }
    const record = /^\s*([^:]*?\S)\s*:\s?(.*)$/.exec(line);
    if (record && current) current.set(record[1]!, record[2]!.trim());
  }
  return sections;
}

export interface MlxlinkJson {
  sections: MlxlinkSections;
  /** `status` of the document: code 0 and "OK" when the tool succeeded. */
  status: { code: number | undefined; message: string | undefined };
}

/**
 * Parse `--json` output: undefined when stdout holds no JSON document with a `result` (an older
 * tool without --json, or a failure, which prints its error on stderr). Text before the document
 * (colour codes, notes) is skipped.
 */
export function parseMlxlinkJson(stdout: string): MlxlinkJson | undefined {
  const start = stdout.indexOf('{');
  const end = stdout.lastIndexOf('}');
  if (start < 0 || end < start) return undefined;
  let document: unknown;
  try {
    document = JSON.parse(stdout.slice(start, end + 1));
  } catch {
    return undefined;
  }
  if (!isObject(document) || !isObject(document.result)) return undefined;
  const sections = new Map<string, Map<string, string>>();
  const output = isObject(document.result.output) ? document.result.output : {};
  for (const [title, records] of Object.entries(output)) {
    if (!isObject(records)) continue;
    const section = new Map<string, string>();
    for (const [key, value] of Object.entries(records)) {
      if (typeof value === 'string') section.set(key, value.trim());
      else if (isObject(value) && Array.isArray(value.values)) section.set(key, value.values.map(String).join(','));
    }
    sections.set(title, section);
  }
  const status = isObject(document.status) ? document.status : {};
  return {
    sections,
    status: {
      code: typeof status.code === 'number' ? status.code : undefined,
      message: typeof status.message === 'string' ? status.message : undefined,
    },
  };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

const NOT_AVAILABLE = 'N/A';

/** A measurement as mlxlink prints it: "54 [-5..75]", "8.380,8.380,8.380,8.380 [2..15]", "N/A". */
export interface Measurement {
  /** Per lane; undefined where the tool printed nothing, N/A or something that is not a number. */
  values: (number | undefined)[];
  /** The module's thresholds printed in brackets: its alarm thresholds (see optical-module.ts). */
  low: number | undefined;
  high: number | undefined;
}

/** A decimal number as the tool prints one, nothing else: Number('') and Number(' ') are 0. */
const DECIMAL = /^[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?$/;

function decimal(text: string | undefined): number | undefined {
  const trimmed = text?.trim();
  if (trimmed === undefined || !DECIMAL.test(trimmed)) return undefined;
  const value = Number(trimmed);
  return Number.isFinite(value) ? value : undefined;
}

/**
 * Parse a measurement. A lane printed empty ("8.380,,8.380"), N/A or unreadable has no value, never
 * 0 (0 dBm is a healthy receiver). Undefined when no lane has a value, and for what a module
 * without the sensor reports: every value 0 and the range [0..0] (a passive copper cable's
 * "0,0,0,0 [0..0]").
 */
export function parseMeasurement(text: string | undefined): Measurement | undefined {
  if (text === undefined) return undefined;
  const range = /\[([^\]]*?)\.\.([^\]]*)\]\s*$/.exec(text);
  const values = (range ? text.slice(0, range.index) : text).split(',').map(decimal);
  if (values.every((value) => value === undefined)) return undefined;
  const low = decimal(range?.[1]);
  const high = decimal(range?.[2]);
  const noRange = low === undefined || high === undefined || (low === 0 && high === 0);
  if (noRange && values.every((value) => value === 0 || value === undefined)) return undefined;
  return { values, low: noRange ? undefined : low, high: noRange ? undefined : high };
}

/** Strings a module or the firmware reports are untrusted: this long at most, no control characters. */
export const MAX_STRING_LENGTH = 64;
/** The firmware's recommendations are sentences. */
export const MAX_REASON_LENGTH = 256;
// C0, DEL and C1 controls: a vendor field is written by whoever programmed the EEPROM.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

function text(value: string | undefined, max = MAX_STRING_LENGTH): string | undefined {
  const cleaned = value?.replace(CONTROL, '').trim();
  if (cleaned === undefined || cleaned === '' || cleaned === NOT_AVAILABLE) return undefined;
  // By code points, so that a cut never splits a character.
  const characters = Array.from(cleaned);
  return characters.length > max ? characters.slice(0, max).join('').trimEnd() : cleaned;
}

function number(value: string | undefined): number | undefined {
  return decimal(value === NOT_AVAILABLE ? undefined : value);
}

/** The reading of one port from the tool's sections, without device and port. */
export type ModuleFacts = Omit<ModuleReading, 'device' | 'port'>;

/** Units of each measure from the tool's: °C, mV → V, dBm, mA → A. */
const SCALE = { temperature: 1, voltage: 1e-3, rx_power: 1, tx_power: 1, tx_bias: 1e-3 } as const;
const KEYS = {
  temperature: 'Temperature [C]',
  voltage: 'Voltage [mV]',
  rx_power: 'Rx Power Current [dBm]',
  tx_power: 'Tx Power Current [dBm]',
  tx_bias: 'Bias Current [mA]',
} as const;

/**
 * Read what the contract exports from the sections of one port's output. What is refused on the
 * way (more lanes than a module has, thresholds out of order) is said in `problems`: the source
 * reports each as a read error of the port.
 */
export function interpretMlxlink(sections: MlxlinkSections, problems: string[] = []): ModuleFacts {
  const module = sections.get('Module Info');
  const counters = sections.get('Physical Counters and BER Info');
  const trouble = sections.get('Troubleshooting Info');

  const thresholds: ModuleThresholds = {};
  const measured = {} as Record<keyof typeof KEYS, (number | undefined)[]>;
  for (const measure of Object.keys(KEYS) as (keyof typeof KEYS)[]) {
    const measurement = parseMeasurement(module?.get(KEYS[measure]));
    // A rounding-free scale: 3261.2 mV is 3.2612 V, not 3.2611999999999997.
    const scale = (value: number): number => (SCALE[measure] === 1 ? value : Number((value * SCALE[measure]).toPrecision(12)));
    if (measurement && measurement.values.length > MAX_MODULE_LANES) {
      // Not a module's: a series per lane would let one port make thousands.
      problems.push(`${KEYS[measure]}: ${measurement.values.length} lanes, more than a module has (${MAX_MODULE_LANES}); refused`);
      measured[measure] = [];
      continue;
    }
    measured[measure] = measurement?.values.map((value) => (value === undefined ? undefined : scale(value))) ?? [];
    if (measurement?.low === undefined || measurement.high === undefined) continue;
    const levels = { low_alarm: scale(measurement.low), high_alarm: scale(measurement.high) };
    if (thresholdsInOrder(levels)) thresholds[measure] = levels;
    else
      problems.push(`${KEYS[measure]}: thresholds out of order (low alarm ${levels.low_alarm}, high alarm ${levels.high_alarm}); dropped`);
  }

  const ber: Partial<Record<PhyBerKind, number>> = {};
  const berKeys: [PhyBerKind, string][] = [
    ['raw', 'Raw Physical BER'],
    ['effective', 'Effective Physical BER'],
    ['symbol', 'Symbol BER'],
  ];
  for (const [kind, key] of berKeys) {
    const value = number(counters?.get(key));
    if (value !== undefined) ber[kind] = value;
  }

  const laneErrors = lanes(counters?.get('Raw Physical Errors Per Lane'), number, 'Raw Physical Errors Per Lane', problems);
  const laneFaults: Partial<Record<LaneFaultKind, (boolean | undefined)[]>> = {};
  for (const [kind, keys] of LANE_FAULT_KEYS) {
    const per = keys.map((key) => lanes(module?.get(key), flag, key, problems));
    // Transmit and receive CDR: one kind, raised where either is.
    const merged = Array.from({ length: Math.max(...per.map((values) => values.length)) }, (_, i) => {
      const flags = per.map((values) => values[i]);
      return flags.some((value) => value === true) ? true : flags.some((value) => value === false) ? false : undefined;
    });
    if (merged.some((value) => value !== undefined)) laneFaults[kind] = merged;
  }

  const fecHistogram = histogramOf(sections.get(FEC_HISTOGRAM_SECTION), problems);
  const opcode = number(trouble?.get('Status Opcode'));
  const reason = text(trouble?.get('Recommendation'), MAX_REASON_LENGTH);
  return {
    identity: identityOf(module),
    temperatureCelsius: measured.temperature[0],
    voltageVolts: measured.voltage[0],
    rxPowerDbm: measured.rx_power,
    txPowerDbm: measured.tx_power,
    txBiasAmperes: measured.tx_bias,
    thresholds,
    ber,
    symbolErrors: number(counters?.get('Symbol Errors')),
    minutesSinceClear: number(counters?.get('Time Since Last Clear [Min]')),
    linkDownReason: opcode !== undefined && opcode !== 0 ? { opcode, reason: reason ?? `status opcode ${opcode}` } : undefined,
    ...(laneErrors.some((value) => value !== undefined) && { laneErrors }),
    ...(Object.keys(laneFaults).length > 0 && { laneFaults }),
    ...(fecHistogram && { fecHistogram }),
  };
}

/** The section `--rx_fec_histogram --show_histogram` adds (mlxlink/modules/mlxlink_port_info.cpp, `showHistogram`). */
export const FEC_HISTOGRAM_SECTION = 'Histogram of FEC Errors';
const BIN_KEY = /^Bin (\d{1,3})$/;
// "[<errors>]  <separator><blocks>" or "[<low>:<high>]<separator><blocks>": the separator is " \t"
// in the text, "," in the JSON (joined here from its `values`).
const BIN_VALUE = /^\[(\d{1,3})(?::(\d{1,3}))?\]\s*[,\t ]\s*(\d{1,20})$/;
/** The register holds each bin's count in 64 bits (compared exactly: 2^64 - 1 is 2^64 as a number). */
const MAX_BIN_BLOCKS = (1n << 64n) - 1n;

/**
 * The blocks of each bin, bin 0 first; undefined without the section or without one readable bin.
 * A bin printed unreadably is undefined (and said in `problems`), bins past the register's 16 are
 * refused: the `bin` label stays a small fixed set whatever the tool prints.
 */
function histogramOf(section: ReadonlyMap<string, string> | undefined, problems: string[]): (number | undefined)[] | undefined {
  if (!section) return undefined;
  const bins: (number | undefined)[] = [];
  let beyond = 0;
  for (const [key, value] of section) {
    // The "Header" record (Range, Occurrences), and whatever a later tool adds.
    const bin = BIN_KEY.exec(key);
    if (!bin) continue;
    const index = Number(bin[1]);
    if (index >= MAX_FEC_HISTOGRAM_BINS) {
      beyond++;
      continue;
    }
    const parsed = BIN_VALUE.exec(value.trim());
    if (!parsed || Number(parsed[1]) > Number(parsed[2] ?? parsed[1]) || BigInt(parsed[3]!) > MAX_BIN_BLOCKS) {
      problems.push(`${FEC_HISTOGRAM_SECTION}: ${key} "${text(value) ?? ''}" unreadable; skipped`);
      bins.length = Math.max(bins.length, index + 1);
      continue;
    }
    bins[index] = Number(parsed[3]);
  }
  if (beyond > 0) problems.push(`${FEC_HISTOGRAM_SECTION}: ${beyond} bins past the ${MAX_FEC_HISTOGRAM_BINS} a histogram has; refused`);
  const dense = Array.from({ length: bins.length }, (_, i) => bins[i]);
  return dense.some((blocks) => blocks !== undefined) ? dense : undefined;
}

// MlxlinkCommander::initPortInfo: a histogram the port cannot give is one of the run's errors.
const HISTOGRAM_EXCEPTION = /Providing FEC histogram cause the following exception:[ \t]*\r?\n([^\n]*)\n?/g;

/**
 * The errors a run that exited 1 reports (the JSON's `status.message`, else the "Errors" section
 * the text ends with), the FEC histogram's apart: mlxlink gathers every option's failure there
 * and prints the other sections all the same, so a port whose histogram is unavailable (link
 * down, no RS-FEC, a device without the register) keeps its module and counters. Undefined when
 * the output holds no such errors. `histogram` is why there is no histogram, `rest` the others.
 */
export function unhandledErrors(
  stdout: string,
  json: MlxlinkJson | undefined,
): { histogram: string | undefined; rest: string } | undefined {
  let errors: string | undefined;
  if (json) errors = json.status.code !== undefined && json.status.code !== 0 ? json.status.message : undefined;
  else errors = /^Errors\r?\n-{3,}\r?\n([\s\S]*)$/m.exec(stdout.replace(ANSI_ESCAPE, ''))?.[1];
  if (errors === undefined) return undefined;
  let histogram: string | undefined;
  const rest = errors.replace(HISTOGRAM_EXCEPTION, (_, why: string) => {
    histogram ??= text(why, MAX_REASON_LENGTH) ?? 'no reason given';
    return '';
  });
  return { histogram, rest: rest.trim() };
}

/** The tool's lines of each lane flag kind. */
const LANE_FAULT_KEYS: readonly (readonly [LaneFaultKind, readonly string[]])[] = [
  ['tx_fault', ['Tx Fault [per lane]']],
  ['rx_los', ['Rx LOS [per lane]']],
  ['tx_los', ['Tx LOS [per lane]']],
  ['cdr_lol', ['Tx CDR LOL [per lane]', 'Rx CDR LOL [per lane]']],
];

/** A flag: "1" raised, "0" clear, anything else (N/A, empty) not reported. */
function flag(value: string | undefined): boolean | undefined {
  const trimmed = value?.trim();
  return trimmed === '1' ? true : trimmed === '0' ? false : undefined;
}

/** A comma-separated value per lane; more lanes than a module has are refused (said in `problems`). */
function lanes<T>(
  value: string | undefined,
  read: (text: string | undefined) => T | undefined,
  key: string,
  problems: string[],
): (T | undefined)[] {
  if (value === undefined) return [];
  const values = value.split(',').map((part) => read(part.trim()));
  if (values.length > MAX_MODULE_LANES) {
    problems.push(`${key}: ${values.length} lanes, more than a module has (${MAX_MODULE_LANES}); refused`);
    return [];
  }
  return values.every((part) => part === undefined) ? [] : values;
}

/** Undefined when nothing is plugged in (every identity field N/A) or the section is missing. */
function identityOf(module: ReadonlyMap<string, string> | undefined): ModuleIdentity | undefined {
  if (!module) return undefined;
  const identity: ModuleIdentity = {
    identifier: text(module.get('Identifier')),
    vendor: text(module.get('Vendor Name')),
    partNumber: text(module.get('Vendor Part Number')),
    serial: text(module.get('Vendor Serial Number')),
    cableType: text(module.get('Cable Type')),
    lengthMeters: number(module.get('Transfer Distance [m]') ?? module.get('Cable Length [m]')),
  };
  return identity.identifier === undefined &&
    identity.vendor === undefined &&
    identity.partNumber === undefined &&
    identity.serial === undefined
    ? undefined
    : identity;
}
