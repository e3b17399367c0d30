// The cable and optical module of a port: mstlink/mlxlink outputs (test/fixtures/module/, real
// recordings and two derived from them, see its README) through the parsers, and through a fake
// mstlink via the real command runner.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { lanesWithLowRxPower, moduleTooHot, thresholdsInOrder, type ModuleReading } from '../../src/model/optical-module.js';
import { ExecaRunner } from '../../src/sources/command-runner.js';
import {
  interpretMlxlink,
  parseMeasurement,
  parseMlxlinkJson,
  parseMlxlinkText,
  unhandledErrors,
} from '../../src/sources/module/mlxlink-output.js';
import {
  fecHistogramSupport,
  judgeModuleResult,
  moduleToolArguments,
  readModules,
  type ModuleTool,
} from '../../src/sources/module/module-tools.js';
import { MODULE_FIXTURES, fakeModuleTool, type FakeTool } from '../support/fake-module-tool.js';

const fixture = (name: string): string => readFileSync(path.join(MODULE_FIXTURES, name), 'utf8');
const NDR_COPPER = 'mlxlink-4.35-cx7-ndr-osfp-passive-copper.txt';
const BF3_COPPER = 'mlxlink-4.30-bluefield3-100g-qsfp28-passive-copper.txt';
const BF3_JSON = 'mlxlink-4.30-bluefield3-100g-qsfp28-passive-copper.json';
const OPTICAL = 'mlxlink-osfp-optical-excerpt.txt';
const EMPTY_CAGE = 'derived-empty-cage.txt';
const HOSTILE = 'derived-osfp-optical-hostile.txt';
const HISTOGRAM_JSON = 'mlxlink-4.34.1-cx7-400g-dr4-fec-histogram.json';
const HISTOGRAM_TEXT = 'derived-mlxlink-4.34.1-fec-histogram.txt';
const NO_HISTOGRAM = 'derived-mlxlink-4.34.1-no-histogram.json';
const HELP_4_21 = 'mstlink-4.21-help.txt';
/** The histogram of the MFT 4.34.1 capture (ConnectX-7, 400G over an OSFP DR4 module), bin 0 first. */
const CAPTURED_HISTOGRAM = [22858119037881, 65755507, 7970, 177, 64, 2, 1, 1, 3, 0, 0, 0, 0, 0, 0, 0];

describe('measurements as mlxlink prints them', () => {
  it.each([
    ['54 [-5..75]', { values: [54], low: -5, high: 75 }],
    ['3261.2 [2970..3630]', { values: [3261.2], low: 2970, high: 3630 }],
    ['1.886,1.989,2.281,1.976 [-10.41..6]', { values: [1.886, 1.989, 2.281, 1.976], low: -10.41, high: 6 }],
    ['-40,-40 [-13.4..3]', { values: [-40, -40], low: -13.4, high: 3 }],
    // a sensor without thresholds
    ['61', { values: [61], low: undefined, high: undefined }],
    ['0 [0..0]', undefined], // no sensor: a passive copper cable
    ['0,0,0,0 [0..0]', undefined],
    ['N/A', undefined],
    ['', undefined],
    ['hot [1..2]', undefined],
    // lanes the tool printed without a value have none: never 0, which reads as healthy light
    ['8.380,,8.380 [2..15]', { values: [8.38, undefined, 8.38], low: 2, high: 15 }],
    [',,,', undefined],
    [',,, [-10.41..6]', undefined],
    ['N/A,N/A,-3.1,N/A', { values: [undefined, undefined, -3.1, undefined], low: undefined, high: undefined }],
    ['1.5, ,x,2', { values: [1.5, undefined, undefined, 2], low: undefined, high: undefined }],
    ['0x10,1e400', undefined],
    ['0,,0 [0..0]', undefined], // no sensor, with a gap
    ['54 [N/A..75]', { values: [54], low: undefined, high: undefined }],
  ])('%j', (text, expected) => {
    expect(parseMeasurement(text)).toEqual(expected);
  });
});

describe('mlxlink text and JSON output', () => {
  it('reads sections and records of the text, colour codes and trailing blanks aside', () => {
    const sections = parseMlxlinkText(fixture(NDR_COPPER));
    expect([...sections.keys()]).toEqual(['Operational Info', 'Supported Info', 'Troubleshooting Info', 'Tool Information', 'Module Info']);
    expect(sections.get('Operational Info')!.get('FEC')).toBe('Ethernet_Consortium_LL_50G_RS_FEC_PLR -(272,257+1)');
    expect(sections.get('Module Info')!.get('Attenuation (5g,7g,12g,25g)[dB]')).toBe('0,0,0,0');
    expect(
      parseMlxlinkText('\x1b[32mModule Info\x1b[0m\n-----------\nVendor Name : \x1b[32mFS\x1b[0m\n').get('Module Info')!.get('Vendor Name'),
    ).toBe('FS');
  });

  it("finds no sections in the tool's error output, and no JSON document in it", () => {
    expect(parseMlxlinkText(fixture('mstlink-4.21-no-device.stdout')).size).toBe(0);
    expect(parseMlxlinkJson(fixture('mstlink-4.21-no-device.stdout'))).toBeUndefined();
    expect(parseMlxlinkJson(fixture(BF3_COPPER))).toBeUndefined();
    expect(parseMlxlinkJson('{"not": "mlxlink"}')).toBeUndefined();
  });

  it('reads the JSON form to the same sections as the text', () => {
    const json = parseMlxlinkJson(fixture(BF3_JSON))!;
    expect(json.status).toEqual({ code: 0, message: 'OK' });
    const text = parseMlxlinkText(fixture(BF3_COPPER));
    for (const [title, records] of text) {
      if (title === 'Supported Info') continue; // the JSON splits "mask (speeds)" into mask and values
      expect(Object.fromEntries(json.sections.get(title)!), title).toEqual(Object.fromEntries(records));
    }
    expect(interpretMlxlink(json.sections)).toEqual(interpretMlxlink(text));
  });
});

describe('interpretation of recorded outputs', () => {
  it('ConnectX-7 NDR over OSFP passive copper: identity, and no diagnostics from its all-zero sensors', () => {
    expect(interpretMlxlink(parseMlxlinkText(fixture(NDR_COPPER)))).toEqual({
      identity: {
        identifier: 'OSFP',
        vendor: 'FS',
        partNumber: 'OSFPFL-400G-PC01',
        serial: 'C2604279049-2',
        cableType: 'Passive copper cable',
        lengthMeters: 1,
      },
      temperatureCelsius: undefined,
      voltageVolts: undefined,
      rxPowerDbm: [],
      txPowerDbm: [],
      txBiasAmperes: [],
      thresholds: {},
      ber: {},
      symbolErrors: undefined,
      minutesSinceClear: undefined,
      linkDownReason: undefined,
      // The module's lane flags as it printed them: no signal received on lanes 1, 3 and 4, every receive CDR unlocked.
      laneFaults: {
        tx_fault: [false, false, false, false],
        rx_los: [true, false, true, true],
        tx_los: [false, false, false, false],
        cdr_lol: [true, true, true, true],
      },
    });
  });

  it('BlueField-3: the raw errors of each lane, and no lane flags from a cable that reports none (N/A)', () => {
    const facts = interpretMlxlink(parseMlxlinkText(fixture(BF3_COPPER)));
    expect(facts.laneErrors).toEqual([0, 0, 0, 0]);
    expect(facts.laneFaults).toBeUndefined();
  });

  it('a lane flag line of a broken module: an unreadable lane is not reported, too many lanes are refused', () => {
    const text = fixture(NDR_COPPER)
      .replace('Rx LOS [per lane]                  : 1,0,1,1', 'Rx LOS [per lane]                  : 1,,x,0')
      .replace('Tx Fault [per lane]                : 0,0,0,0', `Tx Fault [per lane]                : ${Array(1000).fill('1').join(',')}`);
    const problems: string[] = [];
    const facts = interpretMlxlink(parseMlxlinkText(text), problems);
    expect(facts.laneFaults?.rx_los).toEqual([true, undefined, undefined, false]);
    expect(facts.laneFaults?.tx_fault).toBeUndefined();
    expect(problems).toEqual(['Tx Fault [per lane]: 1000 lanes, more than a module has (8); refused']);
  });

  it('BlueField-3 over QSFP28 passive copper: no diagnostics (N/A), the BER and time since the counters were cleared', () => {
    const facts = interpretMlxlink(parseMlxlinkText(fixture(BF3_COPPER)));
    expect(facts.identity).toEqual({
      identifier: 'QSFP28',
      vendor: 'FS',
      partNumber: 'Q28-PC03',
      serial: 'S2202655321-1',
      cableType: 'Passive copper cable',
      lengthMeters: 3,
    });
    expect(facts.ber).toEqual({ raw: 15e-255, effective: 15e-255 });
    expect(facts.minutesSinceClear).toBe(25074.8);
    expect(facts.temperatureCelsius).toBeUndefined();
    expect(facts.rxPowerDbm).toEqual([]);
    expect(facts.linkDownReason).toBeUndefined();
  });

  it('an OSFP optical transceiver: temperature, voltage in volts, per-lane power and bias in amperes, with its alarm thresholds', () => {
    const facts = interpretMlxlink(parseMlxlinkText(fixture(OPTICAL)));
    expect(facts).toMatchObject({
      identity: {
        identifier: 'OSFP',
        vendor: 'CLT',
        partNumber: 'T-F4GS-BV0',
        serial: 'CWJH05025502589',
        cableType: undefined,
        lengthMeters: undefined,
      },
      temperatureCelsius: 54,
      voltageVolts: 3.2612,
      rxPowerDbm: [1.886, 1.989, 2.281, 1.976],
      txPowerDbm: [1.562, 1.427, 1.559, 1.761],
      txBiasAmperes: [0.00838, 0.00838, 0.00838, 0.00838],
      thresholds: {
        temperature: { low_alarm: -5, high_alarm: 75 },
        voltage: { low_alarm: 2.97, high_alarm: 3.63 },
        tx_bias: { low_alarm: 0.002, high_alarm: 0.015 },
        rx_power: { low_alarm: -10.41, high_alarm: 6 },
        tx_power: { low_alarm: -8.508, high_alarm: 5 },
      },
    });
  });

  it('an empty cage: no identity, no diagnostics', () => {
    const facts = interpretMlxlink(parseMlxlinkText(fixture(EMPTY_CAGE)));
    expect(facts.identity).toBeUndefined();
    expect(facts.temperatureCelsius).toBeUndefined();
    expect(facts.thresholds).toEqual({});
  });

  it('a link-down reason from a non-zero troubleshooting status', () => {
    const text = fixture(BF3_COPPER)
      .replace('Status Opcode                      : 0', 'Status Opcode                      : 23')
      .replace('Recommendation                     : No issue was observed', 'Recommendation                     : Cable is unplugged');
    expect(interpretMlxlink(parseMlxlinkText(text)).linkDownReason).toEqual({ opcode: 23, reason: 'Cable is unplugged' });
  });
});

describe('the FEC histogram', () => {
  it('MFT 4.34.1 on a ConnectX-7 (JSON, with -m -c): the blocks of each of the 16 bins, beside the module and counters', () => {
    const json = parseMlxlinkJson(fixture(HISTOGRAM_JSON));
    const problems: string[] = [];
    const facts = interpretMlxlink(json!.sections, problems);
    expect(problems).toEqual([]);
    expect(facts.fecHistogram).toEqual(CAPTURED_HISTOGRAM);
    expect(facts.laneErrors).toEqual([5550000, 28835305, 14640119, 16746846]);
    expect(facts.ber).toEqual({ raw: 5e-10, effective: 1.5e-254 });
    expect(facts.temperatureCelsius).toBe(62);
    expect(facts.thresholds.temperature).toEqual({ low_alarm: -10, high_alarm: 80 });
  });

  it('reads the text form (rendered from the same capture by the print code) to the same bins', () => {
    expect(interpretMlxlink(parseMlxlinkText(fixture(HISTOGRAM_TEXT))).fecHistogram).toEqual(CAPTURED_HISTOGRAM);
  });

  it('none where the output has no histogram section', () => {
    expect(interpretMlxlink(parseMlxlinkText(fixture(BF3_COPPER))).fecHistogram).toBeUndefined();
  });

  it.each([
    ['a range bin', '[2:3],45', 45],
    ['the largest count the register holds (as the nearest number)', '[0],18446744073709551615', 2 ** 64],
  ])('reads %s', (_, value, blocks) => {
    const sections = new Map([['Histogram of FEC Errors', new Map([['Bin 0', value]])]]);
    expect(interpretMlxlink(sections).fecHistogram).toEqual([blocks]);
  });

  it('skips unreadable bins (counted as problems), refuses bins past 16, and ignores the header and unknown records', () => {
    const records = new Map([
      ['Header', 'Range,Occurrences'],
      ['Bin 0', '[0],100'],
      ['Bin 1', '[1],-5'],
      ['Bin 2', '[3:2],7'],
      ['Bin 3', '[3],18446744073709551616'],
      ['Bin 4', 'lots \u001b[2J'],
      ['Bin 6', '[6],1'],
      ['Bin 16', '[16],1'],
      ['Bin 999', '[999],1'],
      ['Future Field', 'anything'],
    ]);
    const problems: string[] = [];
    const facts = interpretMlxlink(new Map([['Histogram of FEC Errors', records]]), problems);
    expect(facts.fecHistogram).toEqual([100, undefined, undefined, undefined, undefined, undefined, 1]);
    expect(problems).toEqual([
      'Histogram of FEC Errors: Bin 1 "[1],-5" unreadable; skipped',
      'Histogram of FEC Errors: Bin 2 "[3:2],7" unreadable; skipped',
      'Histogram of FEC Errors: Bin 3 "[3],18446744073709551616" unreadable; skipped',
      'Histogram of FEC Errors: Bin 4 "lots [2J" unreadable; skipped',
      'Histogram of FEC Errors: 2 bins past the 16 a histogram has; refused',
    ]);
  });

  it('no histogram at all when no bin can be read', () => {
    const sections = new Map([['Histogram of FEC Errors', new Map([['Bin 0', 'N/A']])]]);
    expect(interpretMlxlink(sections).fecHistogram).toBeUndefined();
  });

  it("tells the histogram's error apart from the others a run reports (JSON status, or the text's Errors section)", () => {
    const exception = 'Providing FEC histogram cause the following exception:\nFEC Histogram is valid with active link operation only\n';
    const json = (message: string) => parseMlxlinkJson(JSON.stringify({ result: { output: {} }, status: { code: 1, message } }));
    expect(unhandledErrors('', json(exception))).toEqual({ histogram: 'FEC Histogram is valid with active link operation only', rest: '' });
    expect(unhandledErrors('', json(`${exception}Showing Module Info raised the following exception:\nfailed\n`))).toEqual({
      histogram: 'FEC Histogram is valid with active link operation only',
      rest: 'Showing Module Info raised the following exception:\nfailed',
    });
    expect(unhandledErrors('', json('Permission denied'))).toEqual({ histogram: undefined, rest: 'Permission denied' });
    expect(unhandledErrors('', parseMlxlinkJson(fixture(HISTOGRAM_JSON)))).toBeUndefined();
    const text = `${fixture(BF3_COPPER)}\n\u001b[31mErrors\n------\n${exception}\u001b[0m`;
    expect(unhandledErrors(text, undefined)).toEqual({ histogram: 'FEC Histogram is valid with active link operation only', rest: '' });
    expect(unhandledErrors(fixture(BF3_COPPER), undefined)).toBeUndefined();
  });
});

describe('values a broken or hostile module reports', () => {
  const line = (key: string, value: string) => `Module Info\n-----------\nIdentifier : OSFP\n${key} : ${value}\n`;
  const read = (key: string, value: string) => {
    const problems: string[] = [];
    return { facts: interpretMlxlink(parseMlxlinkText(line(key, value)), problems), problems };
  };

  it.each([
    ['an empty lane', 'Bias Current [mA]', '8.380,,8.380', { txBiasAmperes: [0.00838, undefined, 0.00838] }, []],
    ['every lane empty', 'Rx Power Current [dBm]', ',,,', { rxPowerDbm: [] }, []],
    ['every lane N/A', 'Rx Power Current [dBm]', 'N/A,N/A,N/A,N/A [-10.41..6]', { rxPowerDbm: [], thresholds: {} }, []],
    ['8 lanes (OSFP)', 'Rx Power Current [dBm]', '1,2,3,4,5,6,7,8', { rxPowerDbm: [1, 2, 3, 4, 5, 6, 7, 8] }, []],
    [
      '9 lanes',
      'Rx Power Current [dBm]',
      '1,2,3,4,5,6,7,8,9 [-10..6]',
      { rxPowerDbm: [], thresholds: {} },
      ['Rx Power Current [dBm]: 9 lanes, more than a module has (8); refused'],
    ],
    [
      '1 000 lanes',
      'Tx Power Current [dBm]',
      Array(1000).fill('1.5').join(','),
      { txPowerDbm: [] },
      ['Tx Power Current [dBm]: 1000 lanes, more than a module has (8); refused'],
    ],
    [
      'low alarm above high alarm',
      'Temperature [C]',
      '54 [75..-5]',
      { temperatureCelsius: 54, thresholds: {} },
      ['Temperature [C]: thresholds out of order (low alarm 75, high alarm -5); dropped'],
    ],
    [
      'low alarm at high alarm',
      'Voltage [mV]',
      '3300 [3300..3300]',
      { voltageVolts: 3.3, thresholds: {} },
      ['Voltage [mV]: thresholds out of order (low alarm 3.3, high alarm 3.3); dropped'],
    ],
  ])('%s', (_name, key, value, expected, problems) => {
    const read_ = read(key, value);
    expect(read_.facts).toMatchObject(expected);
    expect(read_.problems).toEqual(problems);
  });

  it.each([
    ['100 KB', 'V'.repeat(100_000), 'V'.repeat(64)],
    ['control characters', 'C\tL\u0007T\u001b[2J\u009b', 'CLT[2J'],
    ['only control characters', '\u0001\u0002', undefined],
    ['64 characters beyond the first 64 emoji cut whole', '🔥'.repeat(70), '🔥'.repeat(64)],
  ])('a vendor name with %s is capped and cleaned', (_name, vendor, expected) => {
    expect(read('Vendor Name', vendor).facts.identity?.vendor).toBe(expected);
  });

  it('caps the part number, the serial, the cable type and the link-down reason too', () => {
    const long = 'x'.repeat(1000);
    const text = `Troubleshooting Info\n--------------------\nStatus Opcode : 23\nRecommendation : ${long}\nModule Info\n-----------\nIdentifier : ${long}\nVendor Part Number : ${long}\nVendor Serial Number : ${long}\nCable Type : ${long}\n`;
    const facts = interpretMlxlink(parseMlxlinkText(text));
    expect(facts.identity).toEqual({
      identifier: 'x'.repeat(64),
      vendor: undefined,
      partNumber: 'x'.repeat(64),
      serial: 'x'.repeat(64),
      cableType: 'x'.repeat(64),
      lengthMeters: undefined,
    });
    expect(facts.linkDownReason).toEqual({ opcode: 23, reason: 'x'.repeat(256) });
  });

  it('thresholds are in order only with the low alarm below the high one and each warning within the alarms', () => {
    expect(thresholdsInOrder({ low_alarm: -5, low_warning: 0, high_warning: 70, high_alarm: 75 })).toBe(true);
    expect(thresholdsInOrder({ low_alarm: -5, high_alarm: 75 })).toBe(true);
    expect(thresholdsInOrder({ high_warning: 70 })).toBe(true);
    expect(thresholdsInOrder({ low_alarm: 75, high_alarm: -5 })).toBe(false);
    expect(thresholdsInOrder({ low_alarm: -5, high_warning: 80, high_alarm: 75 })).toBe(false); // warning outside the alarm
    expect(thresholdsInOrder({ low_alarm: -5, low_warning: -10, high_alarm: 75 })).toBe(false);
    expect(thresholdsInOrder({ low_warning: 10, high_warning: 5 })).toBe(false);
  });

  it('a recording with all of it: what can be believed is read, the rest is absent or refused', () => {
    const problems: string[] = [];
    const facts = interpretMlxlink(parseMlxlinkText(fixture(HOSTILE)), problems);
    expect(facts).toMatchObject({
      identity: { identifier: 'OSFP', vendor: 'CLT[2J', partNumber: 'T-F4GS-BV0' },
      temperatureCelsius: 54,
      voltageVolts: 3.2612,
      rxPowerDbm: [],
      txPowerDbm: [],
      txBiasAmperes: [0.00838, undefined, 0.00838, 0.00838],
    });
    // Rx without a value on any lane is not measured at all, its thresholds with it.
    expect(facts.thresholds).toEqual({ voltage: { low_alarm: 2.97, high_alarm: 3.63 }, tx_bias: { low_alarm: 0.002, high_alarm: 0.015 } });
    expect(problems).toEqual([
      'Temperature [C]: thresholds out of order (low alarm 75, high alarm -5); dropped',
      'Tx Power Current [dBm]: 1000 lanes, more than a module has (8); refused',
    ]);
  });
});

const reading = (facts: Partial<ModuleReading>): ModuleReading => ({
  device: 'mlx5_0',
  port: 1,
  identity: undefined,
  temperatureCelsius: undefined,
  voltageVolts: undefined,
  rxPowerDbm: [],
  txPowerDbm: [],
  txBiasAmperes: [],
  thresholds: {},
  ber: {},
  symbolErrors: undefined,
  minutesSinceClear: undefined,
  linkDownReason: undefined,
  ...facts,
});

describe("judged at the module's own thresholds", () => {
  it('is too hot at its high warning threshold, else at its alarm threshold, never without one', () => {
    expect(moduleTooHot(reading({ temperatureCelsius: 72, thresholds: { temperature: { high_warning: 70, high_alarm: 75 } } }))).toEqual({
      celsius: 72,
      threshold: { level: 'high_warning', value: 70 },
    });
    expect(moduleTooHot(reading({ temperatureCelsius: 76, thresholds: { temperature: { high_alarm: 75, low_alarm: -5 } } }))).toEqual({
      celsius: 76,
      threshold: { level: 'high_alarm', value: 75 },
    });
    expect(moduleTooHot(reading({ temperatureCelsius: 54, thresholds: { temperature: { high_alarm: 75 } } }))).toBeUndefined();
    expect(moduleTooHot(reading({ temperatureCelsius: 90 }))).toBeUndefined();
  });

  it('finds the lanes at or below the low receive-power threshold', () => {
    const optical = interpretMlxlink(parseMlxlinkText(fixture(OPTICAL)));
    expect(lanesWithLowRxPower(reading(optical))).toBeUndefined();
    expect(lanesWithLowRxPower(reading({ ...optical, rxPowerDbm: [1.886, -12.5, 2.281, -40] }))).toEqual({
      lanes: [
        { lane: 2, dbm: -12.5 },
        { lane: 4, dbm: -40 },
      ],
      threshold: { level: 'low_alarm', value: -10.41 },
    });
    expect(lanesWithLowRxPower(reading({ rxPowerDbm: [-30] }))).toBeUndefined(); // no thresholds
  });
});

describe('module source through the real command runner and a fake mstlink', () => {
  let tool: FakeTool | undefined;
  afterEach(async () => {
    await tool?.remove();
    tool = undefined;
  });
  const runner = (file: string, timeoutMs = 10_000) =>
    new ExecaRunner<ModuleTool>({ paths: { mstlink: file, mlxlink: file }, timeoutMs, maxConcurrent: 2 });

  it('reads every port it was given: copper, optical, JSON, an empty cage; a port without a device is one error', async () => {
    tool = await fakeModuleTool({
      mlx5_0: { stdout: NDR_COPPER },
      mlx5_1: { stdout: BF3_JSON },
      mlx5_2: { stdout: OPTICAL },
      mlx5_3: { stdout: EMPTY_CAGE },
    });
    const targets = ['mlx5_0', 'mlx5_1', 'mlx5_2', 'mlx5_3', 'mlx5_9'].map((device) => ({ device, port: 1 }));
    const result = await readModules(runner(tool.path), 'mstlink', targets);
    expect(result.readings.map((r) => [r.device, r.identity?.partNumber])).toEqual([
      ['mlx5_0', 'OSFPFL-400G-PC01'],
      ['mlx5_1', 'Q28-PC03'],
      ['mlx5_2', 'T-F4GS-BV0'],
      ['mlx5_3', undefined],
    ]);
    expect(result.readings[2]!.temperatureCelsius).toBe(54);
    expect(result.errors).toEqual([{ item: 'mstlink -d mlx5_9 -p 1 -m -c --json', message: expect.stringContaining('exit code 1') }]);
    expect(result.errors[0]!.message).toContain('Failed to open device');
    expect(result).toMatchObject({ timeouts: 0, accessDenied: false });
    expect((await tool.calls()).sort()).toEqual(targets.map((target) => moduleToolArguments(target).join(' ')).sort());
  });

  it('says access is denied when the tool runs without root', async () => {
    tool = await fakeModuleTool({
      mlx5_0: { stdout: 'mstlink-4.21-not-root.stdout', stderr: 'mstlink-4.21-not-root.stderr', exitCode: 1 },
    });
    const result = await readModules(runner(tool.path), 'mstlink', [{ device: 'mlx5_0', port: 1 }]);
    expect(result).toMatchObject({ readings: [], accessDenied: true, timeouts: 0 });
    expect(result.errors[0]!.message).toContain('Permission denied');
  });

  it('counts a tool that hangs past the time limit, and reads the other ports', async () => {
    tool = await fakeModuleTool({ mlx5_0: { sleepSeconds: 30, stdout: OPTICAL }, mlx5_1: { stdout: NDR_COPPER } });
    const result = await readModules(runner(tool.path, 500), 'mstlink', [
      { device: 'mlx5_0', port: 1 },
      { device: 'mlx5_1', port: 1 },
    ]);
    expect(result.readings.map((r) => r.device)).toEqual(['mlx5_1']);
    expect(result).toMatchObject({ timeouts: 1, accessDenied: false });
    expect(result.errors[0]!.message).toContain('time limit');
  });

  it('reports what it refused in a reading as read errors of the port, and keeps the reading', async () => {
    tool = await fakeModuleTool({ mlx5_0: { stdout: HOSTILE }, mlx5_1: { stdout: OPTICAL } });
    const result = await readModules(runner(tool.path), 'mstlink', [
      { device: 'mlx5_0', port: 1 },
      { device: 'mlx5_1', port: 1 },
    ]);
    expect(result.readings.map((r) => r.device)).toEqual(['mlx5_0', 'mlx5_1']);
    expect(result.errors).toEqual([
      {
        item: 'mstlink -d mlx5_0 -p 1 -m -c --json',
        message: 'Temperature [C]: thresholds out of order (low alarm 75, high alarm -5); dropped',
      },
      { item: 'mstlink -d mlx5_0 -p 1 -m -c --json', message: 'Tx Power Current [dBm]: 1000 lanes, more than a module has (8); refused' },
    ]);
  });

  it("runs mlxlink with the same arguments where NVIDIA's MFT is installed", async () => {
    tool = await fakeModuleTool({ mlx5_0: { stdout: NDR_COPPER } }, 'mlxlink');
    const result = await readModules(runner(tool.path), 'mlxlink', [{ device: 'mlx5_0', port: 1 }]);
    expect(result.readings[0]!.identity?.vendor).toBe('FS');
  });

  it('asks for the FEC histogram in the same run where asked', () => {
    expect(moduleToolArguments({ device: 'lid-12', port: 3 }, { fecHistogram: true })).toEqual([
      '-d',
      'lid-12',
      '-p',
      '3',
      '-m',
      '-c',
      '--rx_fec_histogram',
      '--show_histogram',
      '--json',
    ]);
    expect(moduleToolArguments({ device: 'mlx5_0', port: 1 })).toEqual(['-d', 'mlx5_0', '-p', '1', '-m', '-c', '--json']);
  });

  it("reads the histogram through the fake tool, and keeps the module and counters of a port whose FEC has none (the tool's exit status 1)", async () => {
    tool = await fakeModuleTool({
      mlx5_0: { stdout: HISTOGRAM_JSON },
      mlx5_1: { stdout: NO_HISTOGRAM, exitCode: 1 },
    });
    const targets = ['mlx5_0', 'mlx5_1'].map((device) => ({ device, port: 1 }));
    const result = await readModules(runner(tool.path), 'mstlink', targets, undefined, { fecHistogram: true });
    expect(result.errors).toEqual([]);
    expect(result.readings.map((r) => [r.device, r.fecHistogram?.[1], r.laneErrors?.[1]])).toEqual([
      ['mlx5_0', 65755507, 28835305],
      ['mlx5_1', undefined, 28835305],
    ]);
    expect((await tool.calls()).sort()).toEqual([
      '-d mlx5_0 -p 1 -m -c --rx_fec_histogram --show_histogram --json',
      '-d mlx5_1 -p 1 -m -c --rx_fec_histogram --show_histogram --json',
    ]);
  });

  it("finds the histogram options in mstflint 4.21's --help (recorded), and none in a tool that only fails", async () => {
    tool = await fakeModuleTool({}, 'mstlink', HELP_4_21);
    expect(await fecHistogramSupport(runner(tool.path), 'mstlink')).toEqual({ supported: true });
    expect(await tool.calls()).toEqual(['--help']);
    await tool.remove();
    tool = await fakeModuleTool({});
    const support = await fecHistogramSupport(runner(tool.path), 'mstlink');
    expect(support).toMatchObject({ supported: false, final: true, why: expect.stringContaining('--help lists no --rx_fec_histogram') });
  });

  it('asks again later when --help did not finish', async () => {
    tool = await fakeModuleTool({}, 'mstlink', HELP_4_21, 30);
    const support = await fecHistogramSupport(runner(tool.path, 300), 'mstlink');
    expect(support).toMatchObject({ supported: false, final: false, why: expect.stringContaining('time limit') });
  });

  it('judges output it cannot read, and a JSON status that is not OK, as errors', () => {
    const base = {
      command: 'mstlink' as const,
      args: ['-d', 'mlx5_0'],
      outcome: 'exited' as const,
      exitCode: 0,
      stderr: '',
      durationMs: 5,
    };
    const target = { device: 'mlx5_0', port: 1 };
    expect(judgeModuleResult(target, { ...base, stdout: 'Segmentation fault\n' })).toMatchObject({
      error: { message: expect.stringContaining('no module or counters section') },
    });
    expect(
      judgeModuleResult(target, { ...base, stdout: '{"result": {"output": {}}, "status": {"code": 1, "message": "Permission denied"}}' }),
    ).toMatchObject({ accessDenied: true, error: { message: 'status 1: Permission denied' } });
    // The histogram's error beside another one: the port's run failed.
    const both = fixture(NO_HISTOGRAM).replace(
      'No histogram info available for the current active FEC\\n',
      'No histogram info available for the current active FEC\\nShowing Module Info raised the following exception:\\nI2C failure\\n',
    );
    expect(judgeModuleResult(target, { ...base, exitCode: 1, stdout: both })).toMatchObject({
      error: { message: expect.stringContaining('exit code 1') },
    });
  });
});
