// Congestion between two ports cycles, on the demo fabric (recorded on ibsim, replayed through the
// runner with its counters moved on at the recorded rates): every leaf uplink waits 500 000
// PortXmitWait ticks a second. ibsim answers no PortSamplesControl, so each switch (Switch-X,
// device ID 0xc738) has its generation's tick, 32 bytes a lane: 32 ns at QDR. The uplinks are
// stalled 1.6 % of the time.
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { DEMO_FABRIC } from '../../../src/commands/command-line.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import { RecordedRunner } from '../../../src/sources/recorded-runner.js';
import { CongestionWalk } from '../../../src/collectors/fabric/ports/congestion.js';
import { defaultTick } from '../../../src/model/congestion.js';
import type { DiscoveredPort, FabricNode, FabricPortReading, FabricTopology } from '../../../src/model/fabric.js';
import { settingsFromFlags } from '../../support/exporter.js';
import { sampleValue as value, scrape } from '../../support/exposition.js';
import { CounterRow } from '../../../src/model/counter-row.js';

const LEAVES = ['0x0002c90200510000', '0x0002c90200520000', '0x0002c90200530000'];
const SWITCHES = [...LEAVES, '0x0002c90200410000', '0x0002c90200420000'];

const series = (text: string, name: string): string[] => text.split('\n').filter((line) => line.startsWith(`${name}{`));

describe('fabric congestion between two ports cycles', () => {
  const exporters: Exporter[] = [];
  afterAll(async () => {
    await Promise.all(exporters.map((exporter) => exporter.stop()));
  });

  it("serves each switch's tick, the stalled leaf uplinks, and per tier and direction the max, sum and ports", async () => {
    let now = 1_000_000;
    const settings = settingsFromFlags(['--demo=fabric']);
    const runner = new RecordedRunner<string>(DEMO_FABRIC, () => now);
    const exporter = new Exporter({ settings, logger: pino({ level: 'silent' }), runners: { fabric: runner }, now: () => now });
    exporters.push(exporter);
    await exporter.collectOnce();
    await exporter.collectFabricOnce();
    const first = await scrape(exporter);
    for (const guid of SWITCHES)
      expect(value(first, `infiniband_fabric_node_xmit_wait_tick_seconds{node_guid="${guid}",source="default"}`)).toBeCloseTo(32e-9, 20);
    // One reading: no ratio yet.
    expect(series(first, 'infiniband_fabric_congestion_ports')).toEqual([]);
    expect(series(first, 'infiniband_fabric_port_congestion_ratio')).toEqual([]);

    now += 60_000;
    await exporter.collectFabricOnce();
    const text = await scrape(exporter);
    // Per port only from 1 %: the six leaf uplinks (ports 4 and 5 of each leaf), none of the rest.
    const ports = series(text, 'infiniband_fabric_port_congestion_ratio');
    expect(ports.map((line) => line.replace(/ .*/, '')).sort()).toEqual(
      LEAVES.flatMap((guid) => [4, 5].map((port) => `infiniband_fabric_port_congestion_ratio{node_guid="${guid}",port="${port}"}`)).sort(),
    );
    for (const line of ports) expect(Number(line.split(' ')[1])).toBeCloseTo(0.016, 3);
    expect(value(text, 'infiniband_fabric_congestion_ratio_max{tier="1",direction="up"}')).toBeCloseTo(0.016, 3);
    expect(value(text, 'infiniband_fabric_congestion_ratio_sum{tier="1",direction="up"}')).toBeCloseTo(6 * 0.016, 3);
    expect(value(text, 'infiniband_fabric_congestion_ports{tier="1",direction="up"}')).toBe(6);
    // The leaves' host ports (8 linked: one cable is pulled) and the spines' ports down to the leaves.
    expect(value(text, 'infiniband_fabric_congestion_ports{tier="1",direction="down"}')).toBe(8);
    expect(value(text, 'infiniband_fabric_congestion_ports{tier="2",direction="down"}')).toBe(6);
    expect(value(text, 'infiniband_fabric_congestion_ratio_max{tier="2",direction="down"}')).toBeLessThan(0.01);
    expect(series(text, 'infiniband_fabric_congestion_ports')).toHaveLength(3);
    // ibsim's sampctlquery failures are no read errors: the documented tick stands in.
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_discovery"}')).toBe(0);
  });
});

describe('CongestionWalk', () => {
  const node = (guid: string, type: 'switch' | 'ca'): FabricNode => ({
    guid,
    type,
    description: guid,
    name: undefined,
    lid: 1,
    portCount: 8,
    vendorId: 0x2c9,
    deviceId: 0xd2f0,
  });
  const topology: FabricTopology = {
    nodes: new Map([
      ['0xleaf', node('0xleaf', 'switch')],
      ['0xhost', node('0xhost', 'ca')],
    ]),
    ports: new Map<string, DiscoveredPort>(),
    duplicateGuids: 0,
    duplicateLids: 0,
    discoveredAt: 0,
  };
  const reading = (port: number, wait: number | undefined): FabricPortReading => ({
    nodeGuid: '0xleaf',
    port,
    state: undefined,
    physicalState: undefined,
    width: 4,
    speed: 'HDR',
    peer: { nodeGuid: '0xhost', port: 1 },
    counters: CounterRow.of(wait === undefined ? [] : [{ name: 'transmit_wait', value: wait, saturated: wait === 0xffffffff }]),
  });
  // Quantum at HDR 4X: 8 bytes at 200 Gb/s, 0.32 ns a tick; 10 s between the readings.
  const walk = (): CongestionWalk => new CongestionWalk(topology, new Map([['0xleaf', 1]]), new Map([['0xleaf', defaultTick(0xd2f0)]]), 10);

  it('gives a port its stalled fraction, and none where a reading lacks the counter, it was reset or it saturated', () => {
    const congestion = walk();
    congestion.port('0xleaf/1', reading(1, 1000 + 625_000_000), reading(1, 1000)); // after, before: 0.2 s of 10
    congestion.port('0xleaf/2', reading(2, 5_000_000), reading(2, undefined)); // the earlier query failed
    congestion.port('0xleaf/3', reading(3, 10), reading(3, 5_000_000)); // reset
    congestion.port('0xleaf/4', reading(4, 0xffffffff), reading(4, 5_000_000)); // saturated
    congestion.port('0xleaf/5', reading(5, 0), undefined); // first reading
    const { ratios, tiers, nodeTicks } = congestion.done();
    expect([...ratios.keys()]).toEqual(['0xleaf/1']);
    expect(ratios.get('0xleaf/1')).toBeCloseTo(0.02, 9);
    expect(tiers).toEqual([{ tier: 1, direction: 'down', max: ratios.get('0xleaf/1'), sum: ratios.get('0xleaf/1'), ports: 1 }]);
    expect(nodeTicks.get('0xleaf')?.source).toBe('default');
    expect(nodeTicks.get('0xleaf')?.seconds).toBeCloseTo(0.32e-9, 20);
  });
});
