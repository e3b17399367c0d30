// A port's key: `<node GUID>/<port>`, the same text whether its node's keys are kept (the ports
// this instance reads share one string per port) or made anew (every other node's).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { fabricPortKey, keepPortKeys } from '../../src/model/fabric.js';

describe('fabricPortKey', () => {
  it('is the GUID, a slash and the port number, for a node whose keys are kept and for one whose are not', () => {
    const kept = '0x0002c90300a1b2c3';
    keepPortKeys(kept, 64);
    fc.assert(
      fc.property(fc.constantFrom(kept, '0x0002c90300a1b2c4'), fc.oneof(fc.integer({ min: -2, max: 2000 }), fc.double()), (guid, port) => {
        expect(fabricPortKey(guid, port)).toBe(`${guid}/${port}`);
        // Asked again (a kept key comes from the table the second time): the same text.
        expect(fabricPortKey(guid, port)).toBe(`${guid}/${port}`);
      }),
    );
  });

  it('keeps the keys of a node asked for twice as the first asked', () => {
    const guid = '0x0002c90300a1b2c5';
    keepPortKeys(guid, 2);
    expect(fabricPortKey(guid, 2)).toBe(`${guid}/2`);
    // Asked again with more ports: the node's table stays as it was, its keys the same text.
    keepPortKeys(guid, 64);
    expect(fabricPortKey(guid, 3)).toBe(`${guid}/3`);
    expect(fabricPortKey(guid, 2)).toBe(`${guid}/2`);
  });
});
