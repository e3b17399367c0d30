// The sysfs attribute parsers on any text: they answer undefined for what they do not understand,
// never throw, and never hand out NaN, a negative or an out-of-range value.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { normaliseGuid, portGuidFromGid } from '../../src/model/guid.js';
import { LINK_SPEEDS, LINK_WIDTHS, parseLinkRate, parseLinkSpeed, parseLinkWidth } from '../../src/model/link-rate.js';
import { PMA_COUNTERS, counterMaximum, isNoPmaText, parseCounterValue } from '../../src/model/pma-counters.js';
import { PHYSICAL_STATES, PORT_STATES, parsePhysicalState, parsePortState } from '../../src/model/port-state.js';
import { exportCounter } from '../../src/sources/infiniband.js';
import { anyText, numberish } from './arbitraries.js';

const widthLabel = fc.oneof(fc.constantFrom(...LINK_WIDTHS).map(String), numberish);
const speedLabel = fc.oneof(fc.constantFrom(...LINK_SPEEDS, 'ndr', 'XDR2', 'FDR10 ', ''), anyText);
const rateText = fc.oneof(
  anyText,
  fc
    .tuple(numberish, widthLabel, speedLabel, fc.constantFrom(' ', '', '  ', '\n'))
    .map(([gbps, width, speed, pad]) => `${gbps}${pad}Gb/sec (${width}X ${speed})`),
  fc.tuple(numberish, widthLabel).map(([gbps, width]) => `${gbps} Gb/sec (${width}X)`),
  numberish.map((gbps) => `${gbps} Gb/sec`),
);

const stateText = fc.oneof(
  anyText,
  fc
    .tuple(numberish, fc.oneof(fc.constantFrom(...PORT_STATES, ...PHYSICAL_STATES, 'Phy Test', '<unknown>', 'UNKNOWN'), anyText))
    .map(([id, name]) => `${id}: ${name}`),
  numberish,
);

const hexGroup = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEFg'), minLength: 0, maxLength: 6 });
const guidText = fc.oneof(
  anyText,
  fc.array(hexGroup, { minLength: 3, maxLength: 9 }).map((groups) => groups.join(':')),
  fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF'), maxLength: 20 }).map((hex) => `0x${hex}`),
);

describe('link rate', () => {
  it('is undefined or a finite, non-negative rate with a known width and speed', () => {
    fc.assert(
      fc.property(rateText, (text) => {
        const rate = parseLinkRate(text);
        if (rate === undefined) return;
        expect(Number.isFinite(rate.gbps) && rate.gbps >= 0).toBe(true);
        if (rate.width !== undefined) expect(LINK_WIDTHS).toContain(rate.width);
        if (rate.speed !== undefined) expect(LINK_SPEEDS).toContain(rate.speed);
      }),
    );
  });

  it('width and speed labels map only to known values', () => {
    fc.assert(
      fc.property(fc.oneof(fc.double(), fc.integer()), anyText, (width, label) => {
        const parsedWidth = parseLinkWidth(width);
        if (parsedWidth !== undefined) expect(LINK_WIDTHS).toContain(parsedWidth);
        const speed = parseLinkSpeed(label);
        if (speed !== undefined) expect(LINK_SPEEDS).toContain(speed);
      }),
    );
  });
});

describe('port state and physical state', () => {
  it('ids are small non-negative integers; names only for ids the kernel names', () => {
    fc.assert(
      fc.property(stateText, (text) => {
        const state = parsePortState(text);
        if (state !== undefined) {
          expect(Number.isInteger(state.id) && state.id >= 0 && state.id <= 999).toBe(true);
          expect(state.name === undefined || PORT_STATES[state.id] === state.name).toBe(true);
        }
        const phys = parsePhysicalState(text);
        if (phys !== undefined) {
          expect(Number.isInteger(phys.id) && phys.id >= 0 && phys.id <= 999).toBe(true);
          expect(phys.name === undefined || PHYSICAL_STATES[phys.id - 1] === phys.name).toBe(true);
        }
      }),
    );
  });
});

describe('GUIDs', () => {
  it('are undefined or 0x and 16 lower-case hex digits, from either form', () => {
    fc.assert(
      fc.property(guidText, (text) => {
        for (const guid of [normaliseGuid(text), portGuidFromGid(text), portGuidFromGid(`fe80:0000:0000:0000:${text}`)]) {
          if (guid !== undefined) expect(guid).toMatch(/^0x[0-9a-f]{16}$/);
        }
      }),
    );
  });

  it('normalising is idempotent', () => {
    fc.assert(
      fc.property(guidText, (text) => {
        const guid = normaliseGuid(text);
        if (guid !== undefined) expect(normaliseGuid(guid)).toBe(guid);
      }),
    );
  });
});

describe('counter values', () => {
  it('are undefined or an unsigned 64-bit integer, and export as a finite non-negative number', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          numberish,
          anyText,
          numberish.map((n) => ` ${n} \n`),
        ),
        fc.constantFrom(...PMA_COUNTERS),
        (text, counter) => {
          expect(isNoPmaText(text) && parseCounterValue(text) !== undefined).toBe(false);
          const value = parseCounterValue(text);
          if (value === undefined) return;
          expect(value >= 0n && value <= counterMaximum(64)).toBe(true);
          for (const bits of [counter.bits, 32, 64]) {
            const exported = exportCounter(counter, value, bits);
            expect(Number.isFinite(exported.value) && exported.value >= 0).toBe(true);
            expect(exported.saturated).toBe(value === counterMaximum(bits));
          }
        },
      ),
    );
  });

  it('round-trip every unsigned 64-bit value', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: counterMaximum(64) }), (value) => {
        expect(parseCounterValue(`${value}\n`)).toBe(value);
      }),
    );
  });
});
