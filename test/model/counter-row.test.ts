import { describe, expect, it } from 'vitest';
import { CounterRow, CounterRowBuilder } from '../../src/model/counter-row.js';

const counters = [
  { name: 'symbol_errors', value: 0, saturated: false },
  { name: 'link_downed', value: 255, saturated: true },
  { name: 'transmit_data_bytes', value: 2 ** 53 - 1, saturated: false },
];

describe('a port’s counters as a row', () => {
  it('keeps names, values and saturation in the order read', () => {
    const row = CounterRow.of(counters);
    expect(row.length).toBe(3);
    expect([0, 1, 2].map((i) => [row.name(i), row.value(i), row.saturated(i)])).toEqual(
      counters.map((c) => [c.name, c.value, c.saturated]),
    );
    expect(row.toArray()).toEqual(counters);
  });

  it('finds a counter by name, and says when it was not read', () => {
    const row = CounterRow.of(counters);
    expect(row.get('transmit_data_bytes')).toBe(2 ** 53 - 1);
    expect(row.indexOf('link_downed')).toBe(1);
    expect(row.get('receive_data_bytes')).toBeUndefined();
    expect(row.indexOf('receive_data_bytes')).toBe(-1);
  });

  it('shares one list of names between rows of the same counters, and none with rows of others', () => {
    const a = CounterRow.of(counters);
    const b = CounterRow.of(counters.map((c) => ({ ...c, value: c.value + 1 })));
    const other = CounterRow.of(counters.slice(1));
    expect(b.names).toBe(a.names);
    expect(other.names).not.toBe(a.names);
    expect(other.toArray()).toEqual(counters.slice(1));
  });

  it('is the one empty row when nothing was read, and a builder starts again after each row', () => {
    expect(CounterRow.of([])).toBe(CounterRow.EMPTY);
    expect(CounterRow.EMPTY.length).toBe(0);
    const builder = new CounterRowBuilder();
    builder.add('link_downed', 1, false);
    const first = builder.build();
    CounterRow.of(counters.slice(0, 1)).writeTo(builder);
    const second = builder.build();
    expect(first.toArray()).toEqual([{ name: 'link_downed', value: 1, saturated: false }]);
    expect(second.toArray()).toEqual(counters.slice(0, 1));
    expect(builder.build()).toBe(CounterRow.EMPTY);
  });
});
