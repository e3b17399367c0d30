// Congestion as time lost: the tick a device counts in, the stalled fraction of a port, tiers.
import { describe, expect, it } from 'vitest';
import { atOnce } from '../../src/event-loop/time-slices.js';
import { defaultTick, deviceTick, stalledFraction, tickCounting, xmitWaitTickSeconds, XMIT_WAIT_MAX } from '../../src/model/congestion.js';
import { congestionDirection, switchTiers } from '../../src/model/fabric-tiers.js';
import type { DiscoveredPort, FabricNode, FabricNodeType, FabricTopology } from '../../src/model/fabric.js';
import { fabricPortKey } from '../../src/model/fabric.js';
import type { LinkWidth } from '../../src/model/link-rate.js';

describe('the tick of a device', () => {
  it.each([
    [0xd2f0, { tick: 7, counting: 'port', source: 'default' }], // Quantum
    [0xd2f2, { tick: 7, counting: 'port', source: 'default' }], // Quantum-2
    [0xd2f4, { tick: 7, counting: 'port', source: 'default' }], // Quantum-3
    [0xcb20, { tick: 31, counting: 'lane', source: 'default' }], // Switch-IB
    [0xcf08, { tick: 31, counting: 'lane', source: 'default' }], // Switch-IB 2
    [0xc738, { tick: 31, counting: 'lane', source: 'default' }], // Switch-X
    [0x101b, { tick: 0, counting: 'lane', source: 'default' }], // ConnectX-6: not in the manual's table
    [undefined, { tick: 0, counting: 'lane', source: 'default' }],
  ])('default of device id %s', (deviceId, expected) => {
    expect(defaultTick(deviceId)).toEqual(expected);
  });

  it("a tick read from the device keeps its generation's counting", () => {
    expect(deviceTick(7, 0xd2f2)).toEqual({ tick: 7, counting: 'port', source: 'device' });
    expect(deviceTick(31, 0xcb20)).toEqual({ tick: 31, counting: 'lane', source: 'device' });
    expect(tickCounting(undefined)).toBe('lane');
  });

  it.each([
    // IBA: Tick 0 is one symbol time, 4 ns at SDR whatever the width.
    [{ tick: 0, counting: 'lane', source: 'device' } as const, 4, 'SDR' as const, 4e-9],
    [{ tick: 0, counting: 'lane', source: 'device' } as const, 1, 'SDR' as const, 4e-9],
    // Switch-IB: 32 bytes per lane at EDR (25 Gb/s a lane): 10.24 ns.
    [{ tick: 31, counting: 'lane', source: 'default' } as const, 4, 'EDR' as const, 10.24e-9],
    // Quantum-2: 8 bytes at the port's whole rate, NDR 4X (400 Gb/s): 0.16 ns; 2X: 0.32 ns.
    [{ tick: 7, counting: 'port', source: 'device' } as const, 4, 'NDR' as const, 0.16e-9],
    [{ tick: 7, counting: 'port', source: 'device' } as const, 2, 'NDR' as const, 0.32e-9],
  ])('tick seconds %#', (tick, width, speed, seconds) => {
    expect(xmitWaitTickSeconds(tick, width as LinkWidth, speed)).toBeCloseTo(seconds, 20);
  });
});

describe('stalledFraction', () => {
  const tick = 10.24e-9;
  it('is the ticks waited times the tick over the time between the readings', () => {
    // 10 s at EDR is 976 562 500 ticks of 10.24 ns: a quarter of them is 25 %.
    expect(stalledFraction(1000, 1000 + 244_140_625, tick, 10)).toBeCloseTo(0.25, 9);
    expect(stalledFraction(5, 5, tick, 10)).toBe(0);
  });

  it('reads a 64-bit PortXmitWait past 2^32 when the reading says it is not saturated', () => {
    expect(stalledFraction(2 ** 40, 2 ** 40 + 244_140_625, tick, 10, false)).toBeCloseTo(0.25, 9);
  });

  it("never exceeds 1 (a tick longer than the device's, a reading late)", () => {
    expect(stalledFraction(0, 2_000_000_000, tick, 10)).toBe(1);
  });

  it('is undefined on a reset, a saturated counter, or no time', () => {
    expect(stalledFraction(5000, 10, tick, 10)).toBeUndefined();
    expect(stalledFraction(5000, XMIT_WAIT_MAX, tick, 10)).toBeUndefined();
    expect(stalledFraction(5000, 6000, tick, 10, true)).toBeUndefined();
    expect(stalledFraction(5000, 6000, tick, 0)).toBeUndefined();
    expect(stalledFraction(5000, 6000, 0, 10)).toBeUndefined();
  });
});

function topology(nodes: Array<[string, FabricNodeType]>, cables: Array<[string, number, string, number]>): FabricTopology {
  const nodeMap = new Map<string, FabricNode>(
    nodes.map(([guid, type]) => [
      guid,
      { guid, type, description: guid, name: undefined, lid: undefined, portCount: 8, vendorId: undefined, deviceId: undefined },
    ]),
  );
  const ports = new Map<string, DiscoveredPort>();
  const add = (nodeGuid: string, port: number, peerGuid: string, peerPort: number): void => {
    ports.set(fabricPortKey(nodeGuid, port), {
      nodeGuid,
      port,
      portGuid: undefined,
      lid: undefined,
      peer: { nodeGuid: peerGuid, port: peerPort },
      enabled: undefined,
    });
  };
  for (const [a, ap, b, bp] of cables) {
    add(a, ap, b, bp);
    add(b, bp, a, ap);
  }
  return { nodes: nodeMap, ports, duplicateGuids: 0, duplicateLids: 0, discoveredAt: 0 };
}

describe('switchTiers', () => {
  it('counts up from the switches with hosts, and leaves unreachable switches out', () => {
    const fabric = topology(
      [
        ['h1', 'ca'],
        ['h2', 'ca'],
        ['leaf1', 'switch'],
        ['leaf2', 'switch'],
        ['spine', 'switch'],
        ['core', 'switch'],
        ['island', 'switch'],
      ],
      [
        ['h1', 1, 'leaf1', 1],
        ['h2', 1, 'leaf2', 1],
        ['leaf1', 5, 'spine', 1],
        ['leaf2', 5, 'spine', 2],
        ['spine', 8, 'core', 1],
      ],
    );
    const tiers = atOnce(switchTiers(fabric));
    expect(Object.fromEntries(tiers)).toEqual({ leaf1: 1, leaf2: 1, spine: 2, core: 3 });
  });

  it('gives each link a direction: down toward hosts, up away', () => {
    expect(congestionDirection(1, 'ca', undefined)).toBe('down');
    expect(congestionDirection(1, 'switch', 2)).toBe('up');
    expect(congestionDirection(2, 'switch', 1)).toBe('down');
    expect(congestionDirection(1, 'switch', 1)).toBe('up');
    expect(congestionDirection(2, 'switch', undefined)).toBe('up');
  });
});
