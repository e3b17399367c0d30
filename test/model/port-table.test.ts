import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fabricPortKey, type DiscoveredPort } from '../../src/model/fabric.js';
import type { EnabledRates } from '../../src/model/link-rate.js';
import { PortTable } from '../../src/model/port-table.js';

const EDR: EnabledRates = { widthEnabled: [1, 4], speedEnabled: ['SDR', 'EDR'] };
const HDR: EnabledRates = { widthEnabled: [4], speedEnabled: ['HDR'] };

const port = (nodeGuid: string, number: number, extra: Partial<DiscoveredPort> = {}): DiscoveredPort => ({
  nodeGuid,
  port: number,
  portGuid: undefined,
  lid: undefined,
  peer: undefined,
  enabled: undefined,
  ...extra,
});

describe('a topology’s ports as columns', () => {
  it('reads as the map it replaces: keys, order, ports and their peers', () => {
    const table = new PortTable();
    table.set(port('0xa', 1, { portGuid: '0xa', peer: { nodeGuid: '0xb', port: 7 } }), 37);
    table.set(port('0xb', 7, { portGuid: '0xb1', lid: 12, peer: { nodeGuid: '0xa', port: 1 } }), 2);
    table.set(port('0xa', 36, { portGuid: '0xa', enabled: EDR }), 37);
    table.seal();
    expect(table.size).toBe(3);
    expect([...table.keys()]).toEqual(['0xa/1', '0xb/7', '0xa/36']);
    expect(table.get('0xb/7')).toEqual(port('0xb', 7, { portGuid: '0xb1', lid: 12, peer: { nodeGuid: '0xa', port: 1 } }));
    expect(table.get('0xa/36')).toEqual(port('0xa', 36, { portGuid: '0xa', enabled: EDR }));
    expect(table.get('0xa/36')!.peer).toBeUndefined();
    expect(new Map(table)).toEqual(
      new Map([
        ['0xa/1', port('0xa', 1, { portGuid: '0xa', peer: { nodeGuid: '0xb', port: 7 } })],
        ['0xb/7', port('0xb', 7, { portGuid: '0xb1', lid: 12, peer: { nodeGuid: '0xa', port: 1 } })],
        ['0xa/36', port('0xa', 36, { portGuid: '0xa', enabled: EDR })],
      ]),
    );
    const seen: string[] = [];
    table.forEach((value, key, map) => {
      expect(map).toBe(table);
      expect(fabricPortKey(value.nodeGuid, value.port)).toBe(key);
      seen.push(key);
    });
    expect(seen).toEqual(['0xa/1', '0xb/7', '0xa/36']);
  });

  it('equals another table or a Map of the same ports in any order, and no other', () => {
    const one = new PortTable();
    one.set(port('0xa', 1), 3);
    one.set(port('0xa', 2, { lid: 5 }), 3);
    const other = new PortTable();
    other.set(port('0xa', 2, { lid: 5 }), 3);
    other.set(port('0xa', 1), 3);
    expect(one).toEqual(other);
    expect(one).toEqual(
      new Map([
        ['0xa/2', port('0xa', 2, { lid: 5 })],
        ['0xa/1', port('0xa', 1)],
      ]),
    );
    other.enable('0xa', 1, EDR);
    expect(one).not.toEqual(other);
    expect(one).not.toEqual(new Map([['0xa/1', port('0xa', 1)]]));
  });

  it('finds nothing for keys no port was added under, however they are written', () => {
    const table = new PortTable();
    table.set(port('0xa', 1), 3);
    for (const key of ['0xa/01', '0xa/1 ', '0xa/', '0xa', '/1', '0xb/1', '0xa/2', '0xa/1/1', '0xa/+1', '0xa/1e0', '']) {
      expect(table.get(key)).toBeUndefined();
      expect(table.has(key)).toBe(false);
    }
  });

  it('keeps a port past its node’s room, or numbered oddly, under its key', () => {
    const table = new PortTable();
    table.set(port('0xa', 1), 3);
    table.set(port('0xa', 9), 3);
    table.set(port('0xa', 5000), 3);
    table.set(port('0xa', -1), 3);
    table.set(port('0xa', 1.5), 3);
    table.set(port('0xc/d', 2), 0);
    expect([...table.keys()]).toEqual(['0xa/1', '0xa/9', '0xa/5000', '0xa/-1', '0xa/1.5', '0xc/d/2']);
    for (const key of table.keys()) expect(table.get(key)).toBeDefined();
    expect(table.get('0xa/9')!.port).toBe(9);
    expect(table.get('0xc/d/2')!.nodeGuid).toBe('0xc/d');
  });

  it('replaces a port added twice where it stood, and sets enabled rates of known ports only', () => {
    const table = new PortTable();
    table.set(port('0xa', 1, { lid: 1 }), 3);
    table.set(port('0xa', 2), 3);
    table.set(port('0xa', 1, { lid: 4, peer: { nodeGuid: '0xb', port: 1 } }), 3);
    expect(table.enable('0xa', 2, HDR)).toBe(true);
    expect(table.enable('0xa', 3, HDR)).toBe(false);
    expect(table.enable('0xb', 1, HDR)).toBe(false);
    expect([...table.values()]).toEqual([port('0xa', 1, { lid: 4, peer: { nodeGuid: '0xb', port: 1 } }), port('0xa', 2, { enabled: HDR })]);
  });

  it('answers as a Map given the same adds would, for any adds', () => {
    const guid = fc.constantFrom('0x1', '0x2', '0x3', 'x/y');
    const number = fc.oneof(fc.integer({ min: 0, max: 40 }), fc.constantFrom(255, 1023, 1024, 70_000, -3, 2.5));
    const add = fc.record({
      guid,
      number,
      room: fc.integer({ min: 0, max: 40 }),
      lid: fc.option(fc.integer({ min: 1, max: 0xbfff }), { nil: undefined }),
      peer: fc.option(fc.record({ nodeGuid: guid, port: fc.integer({ min: 1, max: 64 }) }), { nil: undefined }),
      enable: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(add, { maxLength: 60 }), fc.array(fc.tuple(guid, number), { maxLength: 20 }), (adds, probes) => {
        const table = new PortTable();
        const reference = new Map<string, DiscoveredPort>();
        for (const a of adds) {
          const key = fabricPortKey(a.guid, a.number);
          if (a.enable) {
            const known = reference.get(key);
            if (known) reference.set(key, { ...known, enabled: EDR });
            expect(table.enable(a.guid, a.number, EDR)).toBe(known !== undefined);
            continue;
          }
          const added = port(a.guid, a.number, { lid: a.lid, peer: a.peer, portGuid: a.guid });
          reference.set(key, added);
          table.set(added, a.room);
        }
        table.seal();
        expect(table.size).toBe(reference.size);
        expect([...table]).toEqual([...reference]);
        for (const [g, n] of probes) {
          const key = fabricPortKey(g, n);
          expect(table.get(key)).toEqual(reference.get(key));
          expect(table.has(key)).toBe(reference.has(key));
        }
      }),
    );
  });
});
