// Fabric mode end to end on recorded tool outputs (test/fixtures/fabric-recordings): discovery, the ports
// cycle and the SA cycle through a real Exporter, read back from /metrics; then every failure the
// collectors must survive.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino, { type Logger } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../../src/commands/serve/command-line.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import { samplesOf as series, sampleValue as value, scrape } from '../../support/exposition.js';
import { waitFor } from '../../support/processes.js';
import { firstLines, garbled } from '../../support/damaged-output.js';
import { logLines } from '../../support/log-lines.js';
import { FIXTURES, NO_INFINIBAND } from '../../support/trees.js';
import { parseDiscoveryCache } from '../../../src/sources/fabric/discovery-cache.js';
import { HOST11, HOST12, LEAF1, LEAF2, LEAF3, SPINE1, SPINE2 } from '../../support/fabric-recordings.js';
import { recording as recorded } from '../../support/replay.js';
import { ReplayRunner, result, writeRecordedCache } from '../../support/replay.js';
import { FABRIC_DISCOVERY } from '../../../src/collectors/fabric/discovery.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../../src/collectors/fabric/fabric-mode.js';
import { SA_CYCLE } from '../../../src/collectors/fabric/sa.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';

const CONFIG = path.join(FIXTURES, 'config/fabric.yml');
const exporters: Exporter[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

function fabricExporter(runner: ReplayRunner<FabricCommand>, flags: string[] = [], now?: () => number, logger: Logger = pino({ level: 'silent' })): Exporter {
  const command = parseCommandLine(['--path.sysfs', NO_INFINIBAND, '--config.file', CONFIG, '--diag.timeout', '2s', ...flags]);
  if (command.action !== 'run') throw new Error('unexpected');
  const exporter = new Exporter({ settings: command.settings, logger, runners: { module: 'not-installed', fabric: runner }, ...(now && { now }) });
  exporters.push(exporter);
  return exporter;
}


async function cycle(exporter: Exporter): Promise<string> {
  await exporter.collectOnce();
  await exporter.collectFabricOnce();
  return scrape(exporter);
}



const port = (guid: string, number: number): string => `node_guid="${guid}",port="${number}"`;

describe('fabric mode on recorded outputs', () => {
  it('discovers every node, reads every switch port and the SA, and says so in its own metrics', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const text = await cycle(fabricExporter(runner));

    // Nodes by type: 5 switches, 9 CAs, with description, LID, ports and IDs.
    const nodes = series(text, 'infiniband_fabric_node_info');
    expect(nodes.filter((line) => line.includes('node_type="switch"'))).toHaveLength(5);
    expect(nodes.filter((line) => line.includes('node_type="ca"'))).toHaveLength(9);
    expect(text).toContain(`infiniband_fabric_node_info{node_guid="${SPINE1}",node_type="switch",node_desc="MF0;spine-1:SX6036/U1",node_name="",lid="2",ports="4",vendor_id="0x02c9",device_id="0xc738"} 1`);
    expect(text).toContain(`infiniband_fabric_node_info{node_guid="${HOST11}",node_type="ca",node_desc="node11 HCA-1",node_name="",lid="1",ports="1",vendor_id="0x02c9",device_id="0x1003"} 1`);

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
    expect(series(text, 'infiniband_fabric_port_symbol_errors_total')).toEqual([
      `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}} 65535`,
      `infiniband_fabric_port_symbol_errors_total{${port(LEAF2, 1)}} 0`,
    ].sort((a, b) => text.indexOf(a) - text.indexOf(b)));

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
    // Three commands per ports cycle whatever the fabric's size, the sweeps from discovery's cache.
    expect([...runner.calls].sort()).toEqual([
      'ibnetdiscover --cache <cache>',
      'iblinkinfo --line --switches-only',
      'saquery SMIR', 'saquery -g', 'saquery -m',
      'ibqueryerrors --skip-sl --threshold-file /dev/null --load-cache <cache> --switch',
      'ibqueryerrors --skip-sl --counters --load-cache <cache> --switch',
      'sminfo 1', 'sminfo 14',
    ].sort());
  });

  it('pulled cables: the ports stay, DOWN/Polling, without peer or width; the scan asks for a new discovery', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    let clock = 1_000_000;
    const exporter = fabricExporter(runner, [], () => clock);
    await cycle(exporter);
    runner.use(['pulled', 'healthy']);
    clock += 120_000;
    const first = FABRIC_DISCOVERY.of(exporter.collectors.snapshot!)!.topology;
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    // The scan no longer sees host12's port: the topology is out of date, so discovery runs again
    // at once, not at the next --fabric.discovery-interval.
    await waitFor('a second discovery', () => (FABRIC_DISCOVERY.of(exporter.collectors.snapshot!)!.topology !== first ? true : undefined));
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const text = await scrape(exporter);
    for (const end of [port(LEAF1, 2), port(LEAF3, 5), port(SPINE2, 3)]) {
      expect(value(text, `infiniband_fabric_port_state_id{${end}}`)).toBe(1);
      expect(value(text, `infiniband_fabric_port_physical_state_id{${end}}`)).toBe(2);
      expect(value(text, `infiniband_fabric_port_link_width_lanes{${end}}`)).toBeUndefined();
      expect(text).not.toMatch(new RegExp(`infiniband_fabric_link_info\\{${end},`));
    }
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(32);
    expect(text).not.toContain(`node_guid="${HOST12}"`);
    expect(runner.calls.filter((call) => call.startsWith('ibnetdiscover'))).toHaveLength(2);
  });

  it('a switch the scan no longer sees is left out of the next sweeps, which read a pruned cache', async () => {
    const healthyScan = recorded('fabric', 'healthy', 'iblinkinfo-switches').stdout;
    const withoutSpine2 = healthyScan.split('\n').filter((line) => !line.startsWith(SPINE2)).join('\n');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => (command === 'iblinkinfo' ? result(command, args, { stdout: withoutSpine2 }) : undefined));
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const sweeps = runner.rawCalls.filter((call) => call[0] === 'ibqueryerrors');
    expect(sweeps).toHaveLength(4);
    // First cycle: discovery's own cache; second: a copy without spine-2.
    expect(sweeps[0]![sweeps[0]!.indexOf('--load-cache') + 1]).toMatch(/topology-1\.cache$/);
    const pruned = sweeps[2]![sweeps[2]!.indexOf('--load-cache') + 1]!;
    expect(pruned).toMatch(/sweep\.cache$/);
    const nodes = parseDiscoveryCache(new Uint8Array(readFileSync(pruned))).nodes.map((node) => node.guid);
    expect(nodes).toContain(SPINE1);
    expect(nodes).not.toContain(SPINE2);
    const text = await scrape(exporter);
    expect(value(text, `infiniband_fabric_port_state_id{${port(SPINE2, 1)}}`)).toBeUndefined();
    expect(value(text, `infiniband_fabric_port_state_id{${port(SPINE1, 1)}}`)).toBe(4);
  });

  it('keeps the current discovery cache and the one before, and removes its directory at stop', async () => {
    let discoveries = 0;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      (command === 'ibnetdiscover' && ++discoveries === 3 ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' }) : undefined));
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    for (let i = 0; i < 4; i++) await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    const first = runner.rawCalls.find((call) => call[0] === 'ibnetdiscover')!;
    const dir = path.dirname(first[first.indexOf('--cache') + 1]!);
    // Discoveries 1, 2, 4 and 5 succeeded (3 failed): 4 and 5 are kept.
    expect(readdirSync(dir).filter((name) => name.startsWith('topology-')).sort()).toEqual(['topology-4.cache', 'topology-5.cache']);
    await exporter.stop();
    expect(existsSync(dir)).toBe(false);
  });

  it('a failed discovery after a good one keeps the topology and says so', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    runner.override = (command, args) => (command === 'ibnetdiscover' ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' }) : undefined);
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const text = await scrape(exporter);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_discovery"}')).toBe(0);
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_discovery"}')).toBe(1);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
  });

  it('a GUID two devices share is counted', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['duplicate-guid', 'healthy']);
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_fabric_duplicate_guids')).toBe(1);
    expect(value(text, 'infiniband_fabric_duplicate_lids')).toBe(0);
  });

  it('no discovery yet: the ports cycle fails and nothing of the fabric is served', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => (command === 'ibnetdiscover' ? result(command, args, { outcome: 'spawn-error', exitCode: undefined, stderr: 'spawn ibnetdiscover ENOENT' }) : undefined));
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_discovery"}')).toBe(0);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(0);
    expect(series(text, 'infiniband_fabric_node_info')).toEqual([]);
    expect(series(text, 'infiniband_fabric_port_state_id')).toEqual([]);
    // The SA does not depend on discovery.
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toHaveLength(2);
  });

  it('without a topology, each ports cycle asks for a discovery instead of waiting for the discovery interval', async () => {
    let discoveries = 0;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      (command === 'ibnetdiscover' && ++discoveries === 1 ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' }) : undefined));
    let clock = 1_000_000;
    const exporter = fabricExporter(runner, [], () => clock);
    await cycle(exporter);
    expect(series(await scrape(exporter), 'infiniband_fabric_node_info')).toEqual([]);
    clock += 60_000;
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    await waitFor('a second discovery', () => (discoveries === 2 ? true : undefined));
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const text = await scrape(exporter);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
  });

  it('a scan that hangs loses only the states: the counters are read, the time-out counted', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => (command === 'iblinkinfo' ? result(command, args, { outcome: 'timeout', exitCode: undefined }) : undefined));
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_exporter_command_timeouts_total{command="iblinkinfo"}')).toBe(1);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(0);
    expect(series(text, 'infiniband_fabric_port_state_id')).toEqual([]);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
    expect(series(text, 'infiniband_fabric_port_receive_data_bytes_total')).toHaveLength(32);
  });

  it('a sweep that prints garbage: its lines are counted and skipped, the rest of the cycle stands', async () => {
    const garbage = 'Segmentation fault\n\u0000\u0001\u0002\nGUID ?? port x\n';
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      (command === 'ibqueryerrors' && args.includes('--counters') ? result(command, args, { stdout: garbage }) : undefined));
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_ports"}')).toBe(4);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(0);
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toEqual([]);
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(32);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
  });

  it('switches that do not answer the PMA lose only their own counters', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['pma-failure', 'healthy']);
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_ports"}')).toBe(46);
    for (const guid of [SPINE1, LEAF1, LEAF3]) {
      expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(guid, 1)}}`)).toBeUndefined();
      expect(value(text, `infiniband_fabric_port_transmit_data_bytes_total{${port(guid, 1)}}`)).toBeUndefined();
      expect(value(text, `infiniband_fabric_port_state_id{${port(guid, 1)}}`)).toBe(4);
    }
    for (const guid of [SPINE2, LEAF2]) expect(value(text, `infiniband_fabric_port_transmit_data_bytes_total{${port(guid, 1)}}`)).toBeGreaterThan(0);
  });

  it('the SM is dead: no SM records this cycle, fabric_sa fails, the rest stands', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      (command === 'saquery' ? result(command, args, { exitCode: 110, stderr: 'Query SA failed: Connection timed out\n' }) : undefined));
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_sa"}')).toBe(0);
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toEqual([]);
    expect(series(text, 'infiniband_fabric_multicast_group_mtu_bytes')).toEqual([]);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
  });

  it('an SM that does not answer sminfo keeps the SA\'s record', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      (command === 'sminfo' && args[0] === '14' ? result(command, args, { exitCode: 255, stdout: 'sminfo: iberror: failed: query\n' }) : undefined));
    const text = await cycle(fabricExporter(runner));
    expect(text).toContain('infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a30031",sm_lid="14",state="DISCOVERING",priority="5"} 1');
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_sa"}')).toBe(1);
  });

  it('where ibqueryerrors cannot run, the counters are read switch by switch with perfquery', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['per-switch', 'healthy'], (command, args) =>
      (command === 'ibqueryerrors' ? result(command, args, { exitCode: 255, stdout: 'ibqueryerrors: iberror: failed: Failed to open port; (null):0\n' }) : undefined));
    const exporter = fabricExporter(runner);
    const text = await cycle(exporter);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
    // The two failed sweeps are read errors, nothing else.
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_ports"}')).toBe(2);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
    expect(value(text, `infiniband_fabric_port_pma_saturated{${port(SPINE1, 2)},counter="symbol_errors"}`)).toBe(1);
    expect(value(text, `infiniband_fabric_port_transmit_wait_total{${port(LEAF2, 1)}}`)).toBe(123456);
    expect(value(text, `infiniband_fabric_port_unicast_receive_packets_total{${port(LEAF3, 8)}}`)).toBe(0);
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(32);
    expect(runner.calls.filter((call) => call.startsWith('perfquery'))).toHaveLength(10);
    // The next cycles go straight to perfquery; after the next discovery the sweeps are tried again.
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    expect(runner.calls.filter((call) => call.startsWith('ibqueryerrors'))).toHaveLength(2);
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    expect(runner.calls.filter((call) => call.startsWith('ibqueryerrors'))).toHaveLength(4);
  });

  it('where ibqueryerrors cannot run, a perfquery run cut short fails the cycle; the ports it printed stand', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['per-switch', 'healthy'], (command, args) => {
      if (command === 'ibqueryerrors') return result(command, args, { exitCode: 255, stdout: 'ibqueryerrors: iberror: failed: Failed to open port; (null):0\n' });
      if (command === 'perfquery' && args.join(' ') === '-l 2 1-4') return result(command, args, { stdout: recorded('fabric', 'per-switch', 'spine-1-basic').stdout.split('# Port counters: Lid 2 port 3')[0]! });
      return undefined;
    });
    const exporter = fabricExporter(runner);
    const text = await cycle(exporter);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(0);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 3)}}`)).toBeUndefined();
    // Its data counters came from the extended run, which was whole.
    expect(value(text, `infiniband_fabric_port_transmit_data_bytes_total{${port(SPINE1, 3)}}`)).toBeGreaterThan(0);
    const report = exporter.collectors.snapshot!.reports.find((r) => r.collector === 'fabric_ports')!;
    expect(report.errors).toContainEqual({ collector: 'fabric_ports', item: 'perfquery -l 2 1-4', message: 'the output is incomplete, cut short on its way: no counters of ports 3, 4' });
  });

  it('a switch whose perfquery fails at first is tried once more, alone', async () => {
    let failed = false;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['per-switch', 'healthy'], (command, args) => {
      if (command === 'ibqueryerrors') return result(command, args, { exitCode: 255, stdout: 'ibqueryerrors: iberror: failed: Failed to open port; (null):0\n' });
      // ibsim's 11th client is refused at once: the first perfquery to spine-1 cannot attach.
      if (command === 'perfquery' && args.join(' ') === '-l 2 1-4' && !failed) {
        failed = true;
        return result(command, args, { exitCode: 255, stderr: 'sim_ctl: ctl error\n' });
      }
      return undefined;
    });
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_ports"}')).toBe(3);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
    expect(runner.calls.filter((call) => call === 'perfquery -l 2 1-4')).toHaveLength(2);
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

  it('--fabric.hca-ports reads CA ports too', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const text = await cycle(fabricExporter(runner, ['--fabric.hca-ports']));
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(32 + 9);
    expect(value(text, `infiniband_fabric_port_state_id{${port(HOST11, 1)}}`)).toBe(4);
    expect(value(text, `infiniband_fabric_port_transmit_data_bytes_total{${port(HOST11, 1)}}`)).toBeGreaterThan(0);
    expect(value(text, `infiniband_fabric_port_receive_data_bytes_total{${port(HOST11, 1)}}`)).toBeGreaterThan(0);
    expect(value(text, `infiniband_fabric_link_info{${port(HOST11, 1)},peer_guid="${LEAF1}",peer_port="1",peer_type="switch"}`)).toBe(1);
    expect(runner.calls).toContain('iblinkinfo --line');
  });

  it('--fabric.node-name-map names nodes, and expectations match names', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-fabric-'));
    dirs.push(dir);
    const map = path.join(dir, 'node-name-map');
    await writeFile(map, `# spines\n${SPINE2} "spine-2"\n${LEAF2} "leaf-2" # rack 4\n`);
    const config = path.join(dir, 'config.yml');
    await writeFile(config, 'fabric:\n  expectations:\n    - node: "leaf-2"\n      ports: [5]\n      speed: FDR\n');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const text = await cycle(fabricExporter(runner, ['--collector.fabric', '--no-collector.diag', '--config.file', config, '--fabric.node-name-map', map]));
    expect(text).toContain(`node_guid="${SPINE2}",node_type="switch",node_desc="MF0;spine-2:SX6036/U1",node_name="spine-2"`);
    expect(text).toContain(`node_guid="${LEAF2}",node_type="switch",node_desc="MF0;leaf-2:SX6036/U1",node_name="leaf-2"`);
    // leaf-2[5] runs to spine-2[2]: both ends expect FDR and run QDR.
    for (const end of [port(LEAF2, 5), port(SPINE2, 2)]) {
      expect(value(text, `infiniband_fabric_port_link_degraded{${end},reason="speed"}`)).toBe(1);
      expect(value(text, `infiniband_fabric_port_link_width_expected_lanes{${end}}`)).toBeUndefined();
    }
  });
});

const healthyText = (stem: string): string => recorded('fabric', 'healthy', stem).stdout;
const discoveries = (runner: ReplayRunner<FabricCommand>): number => runner.calls.filter((call) => call.startsWith('ibnetdiscover')).length;
const success = (text: string, collector: string): number | undefined => value(text, `infiniband_exporter_collector_success{collector="${collector}"}`);

describe('partial output is never success', () => {
  it('a discovery cut short after a good one: the topology stays, discovery fails and says why', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    // Cut after the switches: every CA gone (exit 0, the cache file whole).
    const cut = healthyText('ibnetdiscover').slice(0, healthyText('ibnetdiscover').indexOf('devid=0x1003') - 'vendid=0x2c9\n'.length);
    runner.override = (command, args) => {
      if (command !== 'ibnetdiscover') return undefined;
      writeRecordedCache('healthy', args);
      return result(command, args, { stdout: cut });
    };
        await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const text = await scrape(exporter);
    expect(success(text, 'fabric_discovery')).toBe(0);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);
    expect(value(text, `infiniband_fabric_link_info{${port(HOST11, 1)},peer_guid="${LEAF1}",peer_port="1",peer_type="ca"}`)).toBeUndefined();
    expect(value(text, `infiniband_fabric_link_info{${port(HOST11, 1)},peer_guid="${LEAF1}",peer_port="1",peer_type="switch"}`)).toBe(1);
    expect(success(text, 'fabric_ports')).toBe(1);
    const report = exporter.collectors.snapshot!.reports.find((r) => r.collector === 'fabric_discovery')!;
    expect(report.errors).toEqual([{
      collector: 'fabric_discovery',
      item: 'ibnetdiscover',
      message: 'the output is incomplete, cut short or garbled on its way: 9 cables are listed from one end only (first: port 1 of 0x0002c90200530000 to port 1 of 0x0002c90300a30010, a node the output never describes); it describes 5 of the 14 nodes of the cache file ibnetdiscover wrote (first missing: 0x0002c90300a30030)',
    }]);
    // With a good topology in use, the next discovery comes at its interval, not at once.
    expect(discoveries(runner)).toBe(2);
  });

  it('a discovery garbled on every third line after a good one: the topology stays, discovery fails', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    runner.override = (command, args) => (command === 'ibnetdiscover' ? result(command, args, { stdout: garbled(healthyText('ibnetdiscover')) }) : undefined);
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    const text = await scrape(exporter);
    expect(success(text, 'fabric_discovery')).toBe(0);
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_discovery"}')).toBeGreaterThan(30);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);
  });

  it('the first discovery cut short: what it found is served, failed, and the next ports cycle discovers again', async () => {
    let cutShort = true;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => {
      if (command !== 'ibnetdiscover' || !cutShort) return undefined;
      writeRecordedCache('healthy', args);
      return result(command, args, { stdout: firstLines(healthyText('ibnetdiscover'), 40) });
    });
    let clock = 1_000_000;
    const exporter = fabricExporter(runner, [], () => clock);
    let text = await cycle(exporter);
    expect(success(text, 'fabric_discovery')).toBe(0);
    expect(series(text, 'infiniband_fabric_node_info').length).toBeLessThan(14);
    cutShort = false;
    clock += 60_000;
        await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    await waitFor('a second discovery', () => (discoveries(runner) === 2 ? true : undefined));
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    text = await scrape(exporter);
    expect(success(text, 'fabric_discovery')).toBe(1);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);
  });

  it('a whole discovery that lost most of the fabric is taken only when the next one finds the same', async () => {
    // Only the switches and their inter-switch cables, consistent, no cache file: 5 of 14 nodes.
    const switchesOnly = healthyText('ibnetdiscover').split('\n\n').filter((record) => record.includes('switchguid='))
      .map((record) => record.split('\n').filter((line) => !line.includes('"H-')).join('\n')).join('\n\n');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    let clock = 1_000_000;
    const exporter = fabricExporter(runner, [], () => clock);
    await cycle(exporter);
    runner.override = (command, args) => (command === 'ibnetdiscover' ? result(command, args, { stdout: switchesOnly }) : undefined);
        await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    let text = await scrape(exporter);
    expect(success(text, 'fabric_discovery')).toBe(0);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);
    const report = exporter.collectors.snapshot!.reports.find((r) => r.collector === 'fabric_discovery')!;
    expect(report.errors.map((error) => error.message)).toContain('found 5 nodes where the topology in use has 14: kept until the next discovery finds the same');
    // The next ports cycle asks for the confirming discovery at once.
    clock += 60_000;
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    await waitFor('a third discovery', () => (discoveries(runner) === 3 ? true : undefined));
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    text = await scrape(exporter);
    expect(success(text, 'fabric_discovery')).toBe(1);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(5);
  });

  it('a scan cut short: the ports it left out stay, without a state; the cycle fails; no discovery is asked for', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    let clock = 1_000_000;
    const exporter = fabricExporter(runner, [], () => clock);
    await cycle(exporter);
    // 19 of the 32 switch port lines, as the issue saw it.
    runner.override = (command, args) => (command === 'iblinkinfo' ? result(command, args, { stdout: firstLines(healthyText('iblinkinfo-switches'), 19) }) : undefined);
    clock += 60_000;
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const text = await scrape(exporter);
    expect(success(text, 'fabric_ports')).toBe(0);
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(19);
    // The 13 others are still there: their counters, and their cables as discovered.
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(32);
    expect(value(text, `infiniband_fabric_port_state_id{${port(LEAF2, 1)}}`)).toBeUndefined();
    expect(value(text, `infiniband_fabric_link_info{${port(LEAF2, 1)},peer_guid="0x0002c90300a20010",peer_port="1",peer_type="ca"}`)).toBe(1);
    expect(value(text, `infiniband_fabric_link_info{${port(SPINE1, 1)},peer_guid="${LEAF1}",peer_port="4",peer_type="switch"}`)).toBe(1);
    const report = exporter.collectors.snapshot!.reports.find((r) => r.collector === 'fabric_ports')!;
    expect(report.errors.map((error) => error.message)).toEqual([
      `the output is incomplete, cut short or garbled on its way: cables lead to 2 nodes it does not print (first: ${SPINE1}); a switch is printed without all its ports (first: ${SPINE2} "MF0;spine-2:SX6036/U1"); the ports it left out are reported without a state this cycle`,
    ]);
    expect(discoveries(runner)).toBe(1);
  });

  it('a scan with a garbled line, a sweep with one: each fails the cycle, the rest of it stands', async () => {
    const lines = healthyText('iblinkinfo-switches').split('\n');
    lines[3] = lines[3]!.slice(0, 40);
    const counters = healthyText('counters-switches').replace(/\[PortRcvData == (\d+)/, '[PortRcvData == $1\u0001');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => {
      if (command === 'iblinkinfo') return result(command, args, { stdout: lines.join('\n') });
      if (command === 'ibqueryerrors' && args.includes('--counters')) return result(command, args, { stdout: counters });
      return undefined;
    });
    const text = await cycle(fabricExporter(runner));
    expect(success(text, 'fabric_ports')).toBe(0);
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(31);
    // The garbled line was the first of a port's data counters: that port's are missing.
    expect(series(text, 'infiniband_fabric_port_receive_data_bytes_total')).toHaveLength(31);
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(31);
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_ports"}')).toBe(3);
  });

  it.each([
    ['SMIR cut inside its second record: no SM list at all (one SM fewer would be a subnet without standby)', 'SMIR', firstLines(healthyText('smir'), 12), 0],
    ['SMIR without any record (the master lists itself)', 'SMIR', '', 0],
    ['SMIR garbage', 'SMIR', 'Segmentation fault\n\u0001\u0002 this is not saquery output\n', 0],
  ])('%s', async (_name, arg, stdout, expected) => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => (command === 'saquery' && args[0] === arg ? result(command, args, { stdout }) : undefined));
    const text = await cycle(fabricExporter(runner));
    expect(success(text, 'fabric_sa')).toBe(0);
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toHaveLength(expected);
    expect(series(text, 'infiniband_fabric_multicast_group_mtu_bytes')).toHaveLength(1);
  });

  it('SMIR cut between its two records: the SM left out still answers, so it stays listed and the cycle fails; one that is gone does not', async () => {
    let smir = healthyText('smir');
    let standbyAnswers = true;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => {
      if (command === 'saquery' && args[0] === 'SMIR') return result(command, args, { stdout: smir });
      if (command === 'sminfo' && args[0] === '14' && !standbyAnswers) return result(command, args, { exitCode: 255, stdout: 'sminfo: iberror: failed: query\n' });
      return undefined;
    });
    const exporter = fabricExporter(runner);
    expect(series(await cycle(exporter), 'infiniband_fabric_subnet_manager_info')).toHaveLength(2);
        smir = firstLines(healthyText('smir'), 9);
    await exporter.collectors.runCycle(SA_CYCLE);
    let text = await scrape(exporter);
    expect(success(text, 'fabric_sa')).toBe(0);
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toEqual([
      'infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a10011",sm_lid="1",state="MASTER",priority="5"} 1',
      'infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a30031",sm_lid="14",state="STANDBY",priority="5"} 1',
    ]);
    const report = exporter.collectors.snapshot!.reports.find((r) => r.collector === 'fabric_sa')!;
    expect(report.errors).toEqual([{ collector: 'fabric_sa', item: 'saquery SMIR', message: 'the subnet manager 0x0002c90300a30031 (LID 14) is not in the output but answers as STANDBY: the output is incomplete' }]);
    // The standby stopped: it no longer answers, the SA's one record is the whole list.
    standbyAnswers = false;
    await exporter.collectors.runCycle(SA_CYCLE);
    text = await scrape(exporter);
    expect(success(text, 'fabric_sa')).toBe(1);
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toHaveLength(1);
  });

  it('no multicast group where the last cycle had some fails; none from the start does not; garbled member records give no counts', async () => {
    let groups = healthyText('groups');
    let members = healthyText('members');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => {
      if (command === 'saquery' && args[0] === '-g') return result(command, args, { stdout: groups });
      if (command === 'saquery' && args[0] === '-m') return result(command, args, { stdout: members });
      return undefined;
    });
    const exporter = fabricExporter(runner);
    expect(success(await cycle(exporter), 'fabric_sa')).toBe(1);
        groups = '';
    await exporter.collectors.runCycle(SA_CYCLE);
    let text = await scrape(exporter);
    expect(success(text, 'fabric_sa')).toBe(0);
    expect(series(text, 'infiniband_fabric_multicast_group_mtu_bytes')).toEqual([]);
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toHaveLength(2);
    // Still none: still failing (the last cycle that succeeded had one).
    await exporter.collectors.runCycle(SA_CYCLE);
    expect(success(await scrape(exporter), 'fabric_sa')).toBe(0);
    groups = healthyText('groups');
    members = garbled(healthyText('members'));
    await exporter.collectors.runCycle(SA_CYCLE);
    text = await scrape(exporter);
    expect(success(text, 'fabric_sa')).toBe(0);
    expect(series(text, 'infiniband_fabric_multicast_group_mtu_bytes')).toHaveLength(1);
    expect(series(text, 'infiniband_fabric_multicast_group_members')).toEqual([]);

    const fresh = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => (command === 'saquery' && args[0] === '-g' ? result(command, args, { stdout: '' }) : undefined));
    expect(success(await cycle(fabricExporter(fresh)), 'fabric_sa')).toBe(1);
  });

  it('sminfo garbage: the SA\'s record stays, the cycle fails', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      (command === 'sminfo' && args[0] === '14' ? result(command, args, { stdout: 'Segmentation fault\n\u0001\u0002 this is not sminfo output\n' }) : undefined));
    const text = await cycle(fabricExporter(runner));
    expect(success(text, 'fabric_sa')).toBe(0);
    expect(text).toContain('infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a30031",sm_lid="14",state="DISCOVERING",priority="5"} 1');
  });

  it('in the log, a switch\'s failed PMA queries work again when a sweep that finished queried it again', async () => {
    const log = logLines('info');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['pma-failure', 'healthy']);
    const exporter = fabricExporter(runner, [], undefined, log.logger);
    await cycle(exporter);
    const failed = log.lines.filter((line) => line.collector === 'fabric_ports' && line.msg === 'read failed; repeats of this error are summarised hourly').map((line) => line.item);
    expect(failed).toContain('ibqueryerrors Lid 6 port 0');
    runner.use(['healthy']);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const again = log.lines.filter((line) => line.collector === 'fabric_ports' && line.msg === 'read works again').map((line) => line.item);
    expect(again.sort()).toEqual([...new Set(failed)].sort());
  });

  it('in the log, a discovery that keeps failing is one failure, known by its command without the cache file; "works again" once it does', async () => {
    const log = logLines('info');
    let failing = true;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      (command === 'ibnetdiscover' && failing ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' }) : undefined));
    const exporter = fabricExporter(runner, [], undefined, log.logger);
    await cycle(exporter);
        for (let i = 0; i < 3; i++) await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    failing = false;
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    const discoveryLines = log.lines.filter((line) => line.collector === 'fabric_discovery');
    expect(discoveryLines.map((line) => [line.msg, line.item])).toEqual([
      ['read failed; repeats of this error are summarised hourly', 'ibnetdiscover'],
      ['read works again', 'ibnetdiscover'],
    ]);
    expect(discoveryLines[1]).toMatchObject({ occurrences: 4 });
  });
});

describe('without --collector.fabric', () => {
  it('serves no infiniband_fabric_* series and runs no fabric command', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const command = parseCommandLine(['--path.sysfs', NO_INFINIBAND, '--no-collector.diag']);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { module: 'not-installed', fabric: runner } });
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
