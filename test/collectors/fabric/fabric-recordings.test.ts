// Fabric mode end to end on recorded tool outputs (test/fixtures/fabric-recordings): discovery, the ports
// cycle and the SA cycle through a real Exporter, read back from /metrics; shards; and no fabric
// at all without --collector.fabric. Each collector's own cases are in fabric-discovery.test.ts,
// fabric-ports.test.ts and fabric-sa.test.ts.
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { parseServeCommandLine as parseCommandLine } from '../../../src/commands/serve/command-line.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import { samplesOf as series, sampleValue as value, scrape } from '../../support/exposition.js';
import { NO_INFINIBAND } from '../../support/trees.js';
import { HOST11, LEAF1, LEAF2, LEAF3, SPINE1, SPINE2 } from '../../support/fabric-recordings.js';
import { ReplayRunner } from '../../support/replay.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import { cleanUpFabricExporters, fabricExporter, cycle, port, exporters } from '../../support/fabric-exporter.js';

afterEach(cleanUpFabricExporters);

describe('fabric mode on recorded outputs', () => {
  it('discovers every node, reads every switch port and the SA, and says so in its own metrics', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const text = await cycle(fabricExporter(runner));

    // Nodes by type: 5 switches, 9 CAs, with description, LID, ports and IDs.
    const nodes = series(text, 'infiniband_fabric_node_info');
    expect(nodes.filter((line) => line.includes('node_type="switch"'))).toHaveLength(5);
    expect(nodes.filter((line) => line.includes('node_type="ca"'))).toHaveLength(9);
    expect(text).toContain(
      `infiniband_fabric_node_info{node_guid="${SPINE1}",node_type="switch",node_desc="MF0;spine-1:SX6036/U1",node_name="",lid="2",ports="4",vendor_id="0x02c9",device_id="0xc738",tier="2"} 1`,
    );
    expect(text).toContain(
      `infiniband_fabric_node_info{node_guid="${HOST11}",node_type="ca",node_desc="node11 HCA-1",node_name="",lid="1",ports="1",vendor_id="0x02c9",device_id="0x1003",tier=""} 1`,
    );

    // Every switch port, connected or not: 4 + 4 + 3 x 8.
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(32);
    expect(value(text, `infiniband_fabric_port_state_id{${port(LEAF3, 8)}}`)).toBe(1);
    expect(value(text, `infiniband_fabric_port_physical_state_id{${port(LEAF3, 8)}}`)).toBe(2);
    expect(value(text, `infiniband_fabric_port_link_width_lanes{${port(LEAF3, 8)}}`)).toBeUndefined();
    expect(value(text, `infiniband_fabric_port_state_id{${port(LEAF1, 1)}}`)).toBe(4);
    expect(value(text, `infiniband_fabric_port_rate_bytes_per_second{${port(LEAF1, 1)}}`)).toBe(5e9);
    expect(value(text, `infiniband_fabric_port_lane_rate_bytes_per_second{${port(LEAF1, 1)}}`)).toBe(1.25e9);

    // Links from both ends of an ISL; a host cable from the switch (read) and from the CA (discovered).
    expect(value(text, `infiniband_fabric_link_info{${port(SPINE1, 1)},peer_guid="${LEAF1}",peer_port="4",peer_type="switch"}`)).toBe(1);
    expect(value(text, `infiniband_fabric_link_info{${port(LEAF1, 4)},peer_guid="${SPINE1}",peer_port="1",peer_type="switch"}`)).toBe(1);
    expect(value(text, `infiniband_fabric_link_info{${port(LEAF1, 1)},peer_guid="${HOST11}",peer_port="1",peer_type="ca"}`)).toBe(1);
    expect(value(text, `infiniband_fabric_link_info{${port(HOST11, 1)},peer_guid="${LEAF1}",peer_port="1",peer_type="switch"}`)).toBe(1);
    expect(series(text, 'infiniband_fabric_link_info')).toHaveLength(2 * 6 + 9 + 9);

    // The ISL at 1X: the config expectation (4X QDR, written for the spine side) flags both ends;
    // the other links are judged against what both ends enable (1X or 4X, SDR-QDR) and are fine.
    for (const end of [port(SPINE1, 1), port(LEAF1, 4)]) {
      expect(value(text, `infiniband_fabric_port_link_width_lanes{${end}}`)).toBe(1);
      expect(value(text, `infiniband_fabric_port_link_width_expected_lanes{${end}}`)).toBe(4);
      expect(value(text, `infiniband_fabric_port_link_degraded{${end},reason="width"}`)).toBe(1);
      expect(value(text, `infiniband_fabric_port_link_degraded{${end},reason="speed"}`)).toBeUndefined();
    }
    expect(value(text, `infiniband_fabric_port_link_width_expected_lanes{${port(SPINE2, 1)}}`)).toBe(4);
    expect(value(text, `infiniband_fabric_port_lane_rate_expected_bytes_per_second{${port(SPINE2, 1)}}`)).toBe(1.25e9);
    // Only degraded links have the flag, at 1.
    expect(value(text, `infiniband_fabric_port_link_degraded{${port(SPINE2, 1)},reason="width"}`)).toBeUndefined();
    expect(series(text, 'infiniband_fabric_port_link_degraded')).toHaveLength(2);
    expect(value(text, `infiniband_fabric_port_link_width_expected_lanes{${port(LEAF3, 8)}}`)).toBeUndefined();

    // Counters: the PerformanceSet values, 64-bit traffic; one at its maximum. A port's error
    // counters are served once one of them is non-zero, all together; PortXmitWait once non-zero.
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
    expect(value(text, `infiniband_fabric_port_link_downed_total{${port(SPINE1, 2)}}`)).toBe(3);
    expect(value(text, `infiniband_fabric_port_pma_saturated{${port(SPINE1, 2)},counter="symbol_errors"}`)).toBe(1);
    expect(series(text, 'infiniband_fabric_port_pma_saturated')).toHaveLength(1);
    expect(value(text, `infiniband_fabric_port_transmit_discards_total{${port(LEAF2, 1)}}`)).toBe(17);
    expect(value(text, `infiniband_fabric_port_transmit_wait_total{${port(LEAF2, 1)}}`)).toBe(123456);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(LEAF2, 1)}}`)).toBe(0);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(LEAF3, 1)}}`)).toBeUndefined();
    expect(value(text, `infiniband_fabric_port_transmit_wait_total{${port(LEAF3, 1)}}`)).toBeUndefined();
    expect(value(text, `infiniband_fabric_port_transmit_data_bytes_total{${port(LEAF3, 1)}}`)).toBe(2376 * 4);
    expect(value(text, `infiniband_fabric_port_unicast_transmit_packets_total{${port(LEAF3, 1)}}`)).toBe(0);
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(32);
    expect(series(text, 'infiniband_fabric_port_symbol_errors_total')).toEqual(
      [
        `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}} 65535`,
        `infiniband_fabric_port_symbol_errors_total{${port(LEAF2, 1)}} 0`,
      ].sort((a, b) => text.indexOf(a) - text.indexOf(b)),
    );

    // The SA: both SMs, the standby's state from itself (the SA's record still says DISCOVERING).
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toEqual([
      'infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a10011",sm_lid="1",state="MASTER",priority="5"} 1',
      'infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a30031",sm_lid="14",state="STANDBY",priority="5"} 1',
    ]);
    const group = 'mgid="ff12:401b:ffff::ffff:ffff",pkey="0xffff"';
    expect(value(text, `infiniband_fabric_multicast_group_rate_bytes_per_second{${group}}`)).toBe(1.25e9);
    expect(value(text, `infiniband_fabric_multicast_group_mtu_bytes{${group}}`)).toBe(2048);
    expect(value(text, `infiniband_fabric_multicast_group_members{${group}}`)).toBe(0);
    expect(value(text, 'infiniband_fabric_duplicate_guids')).toBe(0);
    expect(value(text, 'infiniband_fabric_duplicate_lids')).toBe(0);

    for (const collector of ['fabric_discovery', 'fabric_ports', 'fabric_sa']) {
      expect(value(text, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
      expect(value(text, `infiniband_exporter_read_errors_total{collector="${collector}"}`)).toBe(0);
    }
    expect(value(text, 'infiniband_exporter_command_timeouts_total{command="ibqueryerrors"}')).toBe(0);
    // Three commands per ports cycle whatever the fabric's size, the sweeps from discovery's cache;
    // each switch's PortXmitWait tick once, at the first discovery (ibsim does not answer it).
    expect([...runner.calls].sort()).toEqual(
      [
        'perfquery -c 2 1',
        'perfquery -c 3 1',
        'perfquery -c 4 1',
        'perfquery -c 5 1',
        'perfquery -c 6 1',
        'ibnetdiscover --cache <cache>',
        'iblinkinfo --line --switches-only',
        'saquery SMIR',
        'saquery -g',
        'saquery -m',
        'ibqueryerrors --skip-sl --threshold-file /dev/null --load-cache <cache> --switch',
        'ibqueryerrors --skip-sl --counters --load-cache <cache> --switch',
        'sminfo 1',
        'sminfo 14',
      ].sort(),
    );
  });

  it('two shards split the nodes without overlap and sweep only their own switches', async () => {
    const texts: string[] = [];
    const sweeps: (readonly string[])[] = [];
    for (const shard of ['1/2', '2/2']) {
      const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
      texts.push(await cycle(fabricExporter(runner, ['--fabric.shard', shard])));
      sweeps.push(...runner.rawCalls.filter((call) => call[0] === 'ibqueryerrors'));
    }
    const nodes = texts.map((text) => series(text, 'infiniband_fabric_node_info'));
    expect(nodes[0]!.length + nodes[1]!.length).toBe(14);
    expect(nodes[0]!.filter((line) => nodes[1]!.includes(line))).toEqual([]);
    const ports = texts.map((text) => series(text, 'infiniband_fabric_port_state_id'));
    expect(ports[0]!.length + ports[1]!.length).toBe(32);
    expect(ports[0]!.length).toBeGreaterThan(0);
    expect(ports[1]!.length).toBeGreaterThan(0);
    // Each sweep reads a pruned copy of the cache, not discovery's own file.
    for (const call of sweeps) expect(call[call.indexOf('--load-cache') + 1]).toMatch(/sweep\.cache$/);
    // The subnet's records are read and served by shard 1 alone; its duplicate counts too.
    expect(series(texts[0]!, 'infiniband_fabric_subnet_manager_info')).toHaveLength(2);
    expect(series(texts[1]!, 'infiniband_fabric_subnet_manager_info')).toEqual([]);
    expect(value(texts[0]!, 'infiniband_fabric_duplicate_guids')).toBe(0);
    expect(value(texts[1]!, 'infiniband_fabric_duplicate_guids')).toBeUndefined();
    expect(value(texts[1]!, 'infiniband_exporter_collector_success{collector="fabric_sa"}')).toBeUndefined();
  });
});

describe('without --collector.fabric', () => {
  it('serves no infiniband_fabric_* series and runs no fabric command', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const command = parseCommandLine(['--path.sysfs', NO_INFINIBAND, '--no-collector.diag']);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({
      settings: command.settings,
      logger: pino({ level: 'silent' }),
      runners: { module: 'not-installed', fabric: runner },
    });
    exporters.push(exporter);
    exporter.start();
    await exporter.collectOnce();
    await exporter.collectFabricOnce();
    const text = await scrape(exporter);
    expect(text).not.toContain('infiniband_fabric_');
    expect(text).not.toContain('collector="fabric_');
    expect(exporter.collectors.enrolments.map((entry) => entry.collector.name)).not.toContain('fabric_discovery');
    expect(runner.calls).toEqual([]);
  });
});
