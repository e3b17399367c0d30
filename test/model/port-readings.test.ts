import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CounterRow } from '../../src/model/counter-row.js';
import { fabricPortKey, type FabricPortReading } from '../../src/model/fabric.js';
import type { PortCounter } from '../../src/model/host.js';
import { PortReadings } from '../../src/model/port-readings.js';
import { parsePhysicalState, parsePortState } from '../../src/model/port-state.js';

const ACTIVE = parsePortState('4: ACTIVE')!;
const DOWN = parsePortState('1: DOWN')!;
const LINK_UP = parsePhysicalState('5: LinkUp')!;
const POLLING = parsePhysicalState('2: Polling')!;

const counter = (name: string, value: number, saturated = false): PortCounter => ({ name, value, saturated });

const reading = (nodeGuid: string, port: number, counters: PortCounter[], extra: Partial<FabricPortReading> = {}): FabricPortReading => ({
  nodeGuid,
  port,
  state: ACTIVE,
  physicalState: LINK_UP,
  width: 4,
  speed: 'NDR',
  peer: undefined,
  counters: CounterRow.of(counters),
  ...extra,
});

/** A table made as the ports cycle makes one: each port's counters written, then the port. */
function tableOf(readings: readonly FabricPortReading[], room = 0, values = 0): PortReadings {
  const table = new PortReadings(values);
  for (const one of readings) {
    one.counters.writeTo(table);
    table.commit(one.nodeGuid, one.port, room, one, one.peer);
  }
  return table.seal();
}

describe('a ports cycle’s readings as columns', () => {
  it('reads as the map it replaces: keys, order, readings, their counters and peers', () => {
    const readings = [
      reading('0xa', 1, [counter('symbol_error', 0), counter('port_xmit_data', 2 ** 60, true)], { peer: { nodeGuid: '0xb', port: 7 } }),
      reading('0xb', 7, [], { state: DOWN, physicalState: POLLING, width: undefined, speed: undefined }),
      reading('0xa', 36, [counter('symbol_error', 3), counter('port_xmit_data', 12)]),
    ];
    const table = tableOf(readings, 37);
    expect(table.size).toBe(3);
    expect([...table.keys()]).toEqual(['0xa/1', '0xb/7', '0xa/36']);
    expect(table).toEqual(new Map(readings.map((one) => [fabricPortKey(one.nodeGuid, one.port), one])));
    const first = table.get('0xa/1')!;
    expect(first.counters.toArray()).toEqual([counter('symbol_error', 0), counter('port_xmit_data', 2 ** 60, true)]);
    expect(first.counters.get('port_xmit_data')).toBe(2 ** 60);
    expect(first.counters.saturated(1)).toBe(true);
    expect(table.get('0xa/36')!.counters.get('symbol_error')).toBe(3);
    expect(table.get('0xa/36')!.counters.saturated(0)).toBe(false);
    expect(table.get('0xb/7')!.counters).toBe(CounterRow.EMPTY);
    // The peer is the object given, not a copy (the next cycle shares it), and found without a reading.
    expect(table.peerOf('0xa/1')).toBe(readings[0]!.peer);
    expect(table.get('0xa/1')!.peer).toBe(readings[0]!.peer);
    expect(table.peerOf('0xa/2')).toBeUndefined();
    // Rows with the same counter names share one list of them.
    expect(table.get('0xa/36')!.counters.names).toBe(first.counters.names);
    const seen: string[] = [];
    table.forEach((value, key, map) => {
      expect(map).toBe(table);
      expect(fabricPortKey(value.nodeGuid, value.port)).toBe(key);
      seen.push(key);
    });
    expect(seen).toEqual(['0xa/1', '0xb/7', '0xa/36']);
    expect([...table.values()].map((one) => one.port)).toEqual([1, 7, 36]);
  });

  it('drops the counters of a port left out, and refuses a port read twice', () => {
    const table = new PortReadings();
    table.add('symbol_error', 9, true);
    expect(table.written).toBe(1);
    table.discard();
    expect(table.written).toBe(0);
    table.add('symbol_error', 1, false);
    table.commit('0xa', 1, 3, undefined, undefined);
    expect(() => table.commit('0xa', 1, 3, undefined, undefined)).toThrow('port 0xa/1 read twice in one cycle');
    table.seal();
    expect(table.get('0xa/1')).toEqual({
      nodeGuid: '0xa',
      port: 1,
      state: undefined,
      physicalState: undefined,
      width: undefined,
      speed: undefined,
      peer: undefined,
      counters: CounterRow.of([counter('symbol_error', 1)]),
    });
    expect(table.get('0xa/1')!.counters.saturated(0)).toBe(false);
  });

  it('grows past the room it was given, keeps every value, and counts them for the next cycle', () => {
    const readings = Array.from({ length: 200 }, (_, i) =>
      reading(`0x${(i % 7).toString(16)}`, Math.floor(i / 7) + 1, [counter('port_xmit_data', i * 1000 + 1), counter('port_rcv_data', i)]),
    );
    const table = tableOf(readings, 0, 1);
    expect(table.valueCount).toBe(400);
    for (const one of readings) expect(table.get(fabricPortKey(one.nodeGuid, one.port))).toEqual(one);
    expect(tableOf(readings, 0, table.valueCount)).toEqual(table);
  });

  it('is made from readings made otherwise, in their order', () => {
    const readings = [reading('0xb', 2, [counter('link_downed', 1)]), reading('0xa', 1, [], { peer: { nodeGuid: '0xb', port: 2 } })];
    const table = PortReadings.from(readings);
    expect([...table.keys()]).toEqual(['0xb/2', '0xa/1']);
    expect([...table.values()]).toEqual(readings);
  });

  it('answers as a Map given the same ports would, for any ports', () => {
    const guid = fc.constantFrom('0x1', '0x2', '0x3', 'x/y');
    const number = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constantFrom(255, 1023, 1024, 70_000, -3, 2.5));
    const names = ['symbol_error', 'link_downed', 'port_xmit_data', 'port_rcv_data'];
    const counters = fc.array(
      fc.record({
        name: fc.constantFrom(...names),
        value: fc.oneof(fc.nat(), fc.constantFrom(2 ** 32 - 1, 2 ** 64 - 1, 0.5)),
        saturated: fc.boolean(),
      }),
      { maxLength: 5 },
    );
    const port = fc.record({
      guid,
      number,
      room: fc.integer({ min: 0, max: 40 }),
      counters,
      keep: fc.boolean(),
      peer: fc.option(fc.record({ nodeGuid: guid, port: fc.integer({ min: 1, max: 64 }) }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(port, { maxLength: 60 }), fc.array(fc.tuple(guid, number), { maxLength: 20 }), (ports, probes) => {
        const table = new PortReadings();
        const reference = new Map<string, FabricPortReading>();
        for (const p of ports) {
          for (const c of p.counters) table.add(c.name, c.value, c.saturated);
          const key = fabricPortKey(p.guid, p.number);
          if (!p.keep || reference.has(key)) {
            if (p.keep) expect(() => table.commit(p.guid, p.number, p.room, undefined, p.peer)).toThrow('read twice');
            table.discard();
            continue;
          }
          const made = reading(p.guid, p.number, p.counters, { peer: p.peer });
          table.commit(p.guid, p.number, p.room, made, p.peer);
          reference.set(key, made);
        }
        table.seal();
        expect(table.size).toBe(reference.size);
        expect([...table.keys()]).toEqual([...reference.keys()]);
        expect(table).toEqual(reference);
        for (const [key, one] of reference) {
          const row = table.get(key)!.counters;
          for (let i = 0; i < one.counters.length; i++) expect(row.saturated(i)).toBe(one.counters.saturated(i));
        }
        for (const [g, n] of probes) {
          const key = fabricPortKey(g, n);
          expect(table.get(key)).toEqual(reference.get(key));
          expect(table.has(key)).toBe(reference.has(key));
          expect(table.peerOf(key)).toBe(reference.get(key)?.peer);
        }
      }),
    );
  });
});
