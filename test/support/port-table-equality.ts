// Two topologies are equal when they hold the same ports, whatever order discovery listed them
// in: `toEqual` compares a topology's port table as it compared the Map it replaced (by key, in
// any order), not column by column; and equal to a Map of the same ports.
import { expect } from 'vitest';
import { PortTable } from '../../src/model/port-table.js';

expect.addEqualityTesters([
  function portTables(a: unknown, b: unknown, customTesters) {
    if (!(a instanceof PortTable) && !(b instanceof PortTable)) return undefined;
    const asMap = (item: unknown): unknown => (item instanceof PortTable ? new Map(item) : item);
    return this.equals(asMap(a), asMap(b), customTesters);
  },
]);
