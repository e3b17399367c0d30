// Parser tables of real strings the kernel has printed (reference: infiniband-facts §2, §3, §12).
import { describe, expect, it } from 'vitest';
import { normaliseGuid, portGuidFromGid } from '../../src/model/guid.js';
import { parseLinkRate } from '../../src/model/link-rate.js';
import { counterMaximum, isNoPmaText, parseCounterValue } from '../../src/model/pma-counters.js';
import { parsePhysicalState, parsePortState } from '../../src/model/port-state.js';

describe('parseLinkRate', () => {
  it.each([
    ['2.5 Gb/sec (1X SDR)', 2.5, 1, 'SDR'],
    ['5 Gb/sec (2X SDR)', 5, 2, 'SDR'],
    ['10 Gb/sec (4X SDR)', 10, 4, 'SDR'],
    ['30 Gb/sec (12X SDR)', 30, 12, 'SDR'],
    ['5 Gb/sec (1X DDR)', 5, 1, 'DDR'],
    ['20 Gb/sec (4X DDR)', 20, 4, 'DDR'],
    ['60 Gb/sec (12X DDR)', 60, 12, 'DDR'],
    ['40 Gb/sec (4X QDR)', 40, 4, 'QDR'],
    ['120 Gb/sec (12X QDR)', 120, 12, 'QDR'],
    ['40 Gb/sec (4X FDR10)', 40, 4, 'FDR10'],
    ['10 Gb/sec (1X FDR10)', 10, 1, 'FDR10'],
    ['56 Gb/sec (4X FDR)', 56, 4, 'FDR'],
    ['168 Gb/sec (12X FDR)', 168, 12, 'FDR'],
    ['25 Gb/sec (1X EDR)', 25, 1, 'EDR'],
    ['50 Gb/sec (2X EDR)', 50, 2, 'EDR'],
    ['100 Gb/sec (4X EDR)', 100, 4, 'EDR'],
    ['100 Gb/sec (2X HDR)', 100, 2, 'HDR'],
    ['200 Gb/sec (4X HDR)', 200, 4, 'HDR'],
    ['400 Gb/sec (8X HDR)', 400, 8, 'HDR'],
    ['100 Gb/sec (1X NDR)', 100, 1, 'NDR'],
    ['400 Gb/sec (4X NDR)', 400, 4, 'NDR'],
    ['800 Gb/sec (8X NDR)', 800, 8, 'NDR'],
    ['200 Gb/sec (1X XDR)', 200, 1, 'XDR'],
    ['800 Gb/sec (4X XDR)', 800, 4, 'XDR'],
    ['1600 Gb/sec (8X XDR)', 1600, 8, 'XDR'],
    // Old kernels printed no label for SDR; the speed follows from the per-lane rate.
    ['10 Gb/sec (4X)', 10, 4, 'SDR'],
    ['2.5 Gb/sec (1X)', 2.5, 1, 'SDR'],
    ['30 Gb/sec (12X)', 30, 12, 'SDR'],
    // ibsim's fake sysfs says 26 Gb/s per EDR lane: the label wins, the number is kept as printed.
    ['104 Gb/sec (4X EDR)', 104, 4, 'EDR'],
    ['100 Gb/sec (4X EDR)\n', 100, 4, 'EDR'],
  ])('%j → %d Gb/s, %dX %s', (text, gbps, width, speed) => {
    expect(parseLinkRate(text)).toEqual({ gbps, width, speed });
  });

  it('keeps the number but not an unknown speed label or width', () => {
    expect(parseLinkRate('1600 Gb/sec (4X GDR)')).toEqual({ gbps: 1600, width: 4, speed: undefined });
    expect(parseLinkRate('30 Gb/sec (3X QDR)')).toEqual({ gbps: 30, width: undefined, speed: 'QDR' });
    expect(parseLinkRate('7 Gb/sec (4X)')).toEqual({ gbps: 7, width: 4, speed: undefined });
  });

  it.each(['', 'garbage', '0 GB/sec', 'Gb/sec (4X EDR)', '-10 Gb/sec (4X SDR)', 'NaN Gb/sec (4X)', '100 Gb/sec (4X EDR) trailing'])(
    'rejects %j',
    (text) => {
      expect(parseLinkRate(text)).toBeUndefined();
    },
  );
});

describe('parsePortState', () => {
  it.each([
    ['0: NOP', 0, 'NOP'],
    ['1: DOWN', 1, 'DOWN'],
    ['2: INIT', 2, 'INIT'],
    ['3: ARMED', 3, 'ARMED'],
    ['4: ACTIVE', 4, 'ACTIVE'],
    ['5: ACTIVE_DEFER', 5, 'ACTIVE_DEFER'],
    ['4: ACTIVE\n', 4, 'ACTIVE'],
    ['4:ACTIVE', 4, 'ACTIVE'],
  ])('%j → %d %s', (text, id, name) => {
    expect(parsePortState(text)).toEqual({ id, name });
  });

  it('keeps an unknown id without a name', () => {
    expect(parsePortState('7: UNKNOWN')).toEqual({ id: 7, name: undefined });
  });

  it.each(['', 'ACTIVE', 'x: ACTIVE', '4000: ACTIVE', ': ACTIVE'])('rejects %j', (text) => {
    expect(parsePortState(text)).toBeUndefined();
  });
});

describe('parsePhysicalState', () => {
  it.each([
    ['1: Sleep', 1, 'Sleep'],
    ['2: Polling', 2, 'Polling'],
    ['3: Disabled', 3, 'Disabled'],
    ['4: PortConfigurationTraining', 4, 'PortConfigurationTraining'],
    ['5: LinkUp', 5, 'LinkUp'],
    ['6: LinkErrorRecovery', 6, 'LinkErrorRecovery'],
    ['7: Phy Test', 7, 'PhyTest'],
  ])('%j → %d %s', (text, id, name) => {
    expect(parsePhysicalState(text)).toEqual({ id, name });
  });

  it.each([
    ['0: <unknown>', 0],
    ['9: <unknown>', 9],
    ['11: <unknown>', 11],
  ])('keeps the id of %j without a name', (text, id) => {
    expect(parsePhysicalState(text)).toEqual({ id, name: undefined });
  });
});

describe('GUIDs', () => {
  it.each([
    ['0002:c903:0031:fdc0', '0x0002c9030031fdc0'],
    ['0a7f:bc12:45ef:d23b', '0x0a7fbc1245efd23b'],
    ['A088:C203:0052:B3C0', '0xa088c2030052b3c0'],
    ['2:c903:31:fdc0', '0x0002c9030031fdc0'],
    ['0x0002c9030031fdc0', '0x0002c9030031fdc0'],
    ['0x100001', '0x0000000000100001'],
  ])('%j → %s', (text, guid) => {
    expect(normaliseGuid(text)).toBe(guid);
  });

  it.each(['', 'zz', '0002:c903:0031', '0x', '0x12345678901234567'])('rejects %j', (text) => {
    expect(normaliseGuid(text)).toBeUndefined();
  });

  it('takes the port GUID from GID 0 and ignores an empty GID', () => {
    expect(portGuidFromGid('fe80:0000:0000:0000:0002:c903:0031:fdc1')).toBe('0x0002c9030031fdc1');
    expect(portGuidFromGid('0000:0000:0000:0000:0000:0000:0000:0000')).toBeUndefined();
    expect(portGuidFromGid('fe80::1')).toBeUndefined();
  });
});

describe('counter values', () => {
  it.each([
    ['0', 0n],
    ['65535', 65535n],
    ['4294967295\n', 4294967295n],
    ['9007199254740993', 9007199254740993n],
    ['18446744073709551615', 18446744073709551615n],
  ])('%j parses exactly', (text, value) => {
    expect(parseCounterValue(text)).toBe(value);
  });

  it.each(['', '-1', '1.5', '0x10', 'N/A (no PMA)', '18446744073709551616', '123abc', '1 2'])('rejects %j', (text) => {
    expect(parseCounterValue(text)).toBeUndefined();
  });

  it('recognises the legacy no-PMA text and the widths', () => {
    expect(isNoPmaText('N/A (no PMA)\n')).toBe(true);
    expect(isNoPmaText('0')).toBe(false);
    expect([4, 8, 16, 32, 64].map((bits) => counterMaximum(bits))).toEqual([15n, 255n, 65535n, 4294967295n, 18446744073709551615n]);
  });
});
