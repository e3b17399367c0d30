// Tables kept as columns compare as the maps they replaced. Two topologies are equal when they hold
// the same ports, whatever order discovery listed them in: `toEqual` compares a port table or a
// cycle's readings as a Map (by key, in any order), not column by column; and equal to a Map of the
// same ports. Two counter rows are equal when they hold the same counters in the same order, whether
// their values are an array of their own or a view into a table's.
import { expect } from 'vitest';
import { CounterRow } from '../../src/model/counter-row.js';
import { PortReadings } from '../../src/model/port-readings.js';
import { PortTable } from '../../src/model/port-table.js';

const isTable = (item: unknown): boolean => item instanceof PortTable || item instanceof PortReadings;

expect.addEqualityTesters([
  function portTables(a: unknown, b: unknown, customTesters) {
    if (!isTable(a) && !isTable(b)) return undefined;
    const asMap = (item: unknown): unknown => (isTable(item) ? new Map(item as Iterable<[unknown, unknown]>) : item);
    return this.equals(asMap(a), asMap(b), customTesters);
  },
  function counterRows(a: unknown, b: unknown, customTesters) {
    if (!(a instanceof CounterRow) || !(b instanceof CounterRow)) return undefined;
    return this.equals(a.toArray(), b.toArray(), customTesters);
  },
]);
