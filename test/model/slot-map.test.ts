// Slots for keys: each key its own slot while it is held, a freed slot handed out again, and
// columns grown to the capacity with what was in them kept.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SlotMap, sized } from '../../src/model/slot-map.js';

describe('SlotMap', () => {
  it('gives each key held a slot of its own, below its capacity, and hands freed slots out again', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.boolean(), fc.integer({ min: 0, max: 30 })), { maxLength: 200 }), (steps) => {
        const slots = new SlotMap();
        const model = new Map<string, number>();
        let most = 0;
        for (const [add, n] of steps) {
          const key = `k${n}`;
          if (add && slots.get(key) === undefined) {
            const slot = slots.add(key);
            model.set(key, slot);
          } else if (!add) {
            expect(slots.delete(key)).toBe(model.get(key));
            model.delete(key);
          }
          most = Math.max(most, model.size);
          // One slot per key held, none shared, all below the capacity.
          expect(new Set(model.values()).size).toBe(model.size);
          for (const [k, slot] of model) {
            expect(slots.get(k)).toBe(slot);
            expect(slot).toBeLessThan(slots.capacity);
          }
          expect(slots.size).toBe(model.size);
          expect([...slots.entries()].map(([k]) => k)).toEqual([...model.keys()]);
        }
        // Slots are reused: never more of them than keys held at once.
        for (const slot of model.values()) expect(slot).toBeLessThan(Math.max(most, 1));
      }),
    );
  });
});

describe('sized', () => {
  it('keeps a column large enough, and copies a smaller one into a larger with the new room filled', () => {
    const column = Float64Array.of(1, 2);
    expect(sized(column, 2)).toBe(column);
    expect([...sized(column, 4, Number.NaN)]).toEqual([1, 2, Number.NaN, Number.NaN]);
    expect([...sized(Int8Array.of(1), 3, -1)]).toEqual([1, -1, -1]);
    expect([...sized(new Uint16Array(0), 2)]).toEqual([0, 0]);
  });
});
