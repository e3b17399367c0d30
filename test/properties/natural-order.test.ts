// Device and port names sort naturally (mlx5_2 before mlx5_10), in the order ICU's numeric
// collation gives names of the characters sysfs uses (letters, digits, punctuation), and
// consistently (a total order).
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareNatural } from '../../src/model/natural-order.js';
import { PROJECT } from '../support/built.js';
import './arbitraries.js';

// Runs of letters and punctuation, and numbers without leading zeros (ICU ranks "01" and "1" alike).
const part = fc.oneof(
  fc.string({ unit: fc.constantFrom(...'abcxyzABCXYZ_-. '), minLength: 1, maxLength: 3 }),
  fc.nat({ max: 300 }).map(String),
);
const name = fc.oneof(
  fc
    .tuple(fc.constantFrom('mlx5_', 'mlx4_', 'hfi1_', 'irdma', 'ib', 'rxe', 'i40iw', ''), fc.nat({ max: 300 }))
    .map(([prefix, n]) => `${prefix}${n}`),
  fc.array(part, { maxLength: 5 }).map((parts) => parts.join('')),
);

describe('natural order of sysfs names', () => {
  it('matches localeCompare with numeric collation on names of letters, digits and punctuation', () => {
    fc.assert(
      fc.property(name, name, (a, b) => {
        expect(Math.sign(compareNatural(a, b))).toBe(Math.sign(a.localeCompare(b, 'en', { numeric: true })));
      }),
    );
  });

  it('is a total order', () => {
    fc.assert(
      fc.property(name, name, name, (a, b, c) => {
        expect(Math.sign(compareNatural(a, b)) + Math.sign(compareNatural(b, a))).toBe(0);
        if (compareNatural(a, b) <= 0 && compareNatural(b, c) <= 0) expect(compareNatural(a, c)).toBeLessThanOrEqual(0);
      }),
    );
  });

  it('puts numbers in numeric order', () => {
    fc.assert(
      fc.property(fc.nat({ max: 1000 }), fc.nat({ max: 1000 }), (a, b) => {
        expect(Math.sign(compareNatural(`mlx5_${a}`, `mlx5_${b}`))).toBe(Math.sign(a - b));
      }),
    );
  });
});

describe("the exporter's own sorting", () => {
  it('never asks ICU to collate (localeCompare, Intl.Collator): its collation data stays out of memory', () => {
    const found: string[] = [];
    const walk = (dir: string): void => {
      for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const file = path.join(dir, entry.name);
        if (entry.isDirectory()) walk(file);
        else if (file.endsWith('.ts') && /\.localeCompare\(|Intl\.Collator\(/.test(readFileSync(file, 'utf8'))) found.push(file);
      }
    };
    walk(path.join(PROJECT, 'src'));
    expect(found).toEqual([]);
  });
});
