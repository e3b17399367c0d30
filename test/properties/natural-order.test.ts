// Device and port names sort naturally (mlx5_2 before mlx5_10) with the shared collator, exactly as
// a per-call localeCompare would, and consistently (a total order).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { compareNatural } from '../../src/sources/sysfs-files.js';
import './arbitraries.js';

const name = fc.oneof(
  fc.tuple(fc.constantFrom('mlx5_', 'mlx4_', 'hfi1_', 'irdma', 'ib', 'rxe', ''), fc.nat({ max: 300 })).map(([prefix, n]) => `${prefix}${n}`),
  fc.string({ maxLength: 12 }),
);

describe('natural order of sysfs names', () => {
  it('matches localeCompare with numeric collation', () => {
    fc.assert(
      fc.property(name, name, (a, b) => {
        expect(Math.sign(compareNatural(a, b))).toBe(Math.sign(a.localeCompare(b, 'en', { numeric: true })));
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
