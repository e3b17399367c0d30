// The fabric_ports collector on recorded tool outputs (test/fixtures/fabric-recordings), through a real
// Exporter: the scan and the counter sweeps, and every failure they must survive.
import { afterEach, describe, expect, it } from 'vitest';
import { samplesOf as series, sampleValue as value, scrape } from '../../support/exposition.js';
import { waitFor } from '../../../synthetic/processes.js';
import { firstLines } from '../../support/damaged-output.js';
import { logLines } from '../../support/log-lines.js';
import { HOST11, HOST12, LEAF1, LEAF2, LEAF3, SPINE1, SPINE2 } from '../../support/fabric-recordings.js';
import { recording as recorded } from '../../support/replay.js';
import { ReplayRunner, result } from '../../support/replay.js';
import { FABRIC_DISCOVERY } from '../../../src/collectors/fabric/discovery.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../../src/collectors/fabric/fabric-mode.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import { cleanUpFabricExporters, fabricExporter, cycle, port, healthyText, discoveries, success } from '../../support/fabric-exporter.js';

afterEach(cleanUpFabricExporters);

describe('fabric mode on recorded outputs', () => {
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

  it('no discovery yet: the ports cycle fails and nothing of the fabric is served', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'ibnetdiscover'
        ? result(command, args, { outcome: 'spawn-error', exitCode: undefined, stderr: 'spawn ibnetdiscover ENOENT' })
        : undefined,
    );
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
      command === 'ibnetdiscover' && ++discoveries === 1
        ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' })
        : undefined,
    );
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
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'iblinkinfo' ? result(command, args, { outcome: 'timeout', exitCode: undefined }) : undefined,
    );
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
      command === 'ibqueryerrors' && args.includes('--counters') ? result(command, args, { stdout: garbage }) : undefined,
    );
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
    for (const guid of [SPINE2, LEAF2])
      expect(value(text, `infiniband_fabric_port_transmit_data_bytes_total{${port(guid, 1)}}`)).toBeGreaterThan(0);
  });

  it('where ibqueryerrors cannot run, the counters are read switch by switch with perfquery', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['per-switch', 'healthy'], (command, args) =>
      command === 'ibqueryerrors'
        ? result(command, args, { exitCode: 255, stdout: 'ibqueryerrors: iberror: failed: Failed to open port; (null):0\n' })
        : undefined,
    );
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
    // Two per switch (basic and extended counters); the ticks (perfquery -c) come with discovery.
    expect(runner.calls.filter((call) => call.startsWith('perfquery -l') || call.startsWith('perfquery -x'))).toHaveLength(10);
    // The next cycles go straight to perfquery; after the next discovery the sweeps are tried again.
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    expect(runner.calls.filter((call) => call.startsWith('ibqueryerrors'))).toHaveLength(2);
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    expect(runner.calls.filter((call) => call.startsWith('ibqueryerrors'))).toHaveLength(4);
  });

  it('where ibqueryerrors cannot run, a perfquery run cut short fails the cycle; the ports it printed stand', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['per-switch', 'healthy'], (command, args) => {
      if (command === 'ibqueryerrors')
        return result(command, args, { exitCode: 255, stdout: 'ibqueryerrors: iberror: failed: Failed to open port; (null):0\n' });
      if (command === 'perfquery' && args.join(' ') === '-l 2 1-4')
        return result(command, args, {
          stdout: recorded('fabric', 'per-switch', 'spine-1-basic').stdout.split('# Port counters: Lid 2 port 3')[0]!,
        });
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
    expect(report.errors).toContainEqual({
      collector: 'fabric_ports',
      item: 'perfquery -l 2 1-4',
      message: 'the output is incomplete, cut short on its way: no counters of ports 3, 4',
    });
  });

  it('a switch whose perfquery fails at first is tried once more, alone', async () => {
    let failed = false;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['per-switch', 'healthy'], (command, args) => {
      if (command === 'ibqueryerrors')
        return result(command, args, { exitCode: 255, stdout: 'ibqueryerrors: iberror: failed: Failed to open port; (null):0\n' });
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
});

describe('partial output is never success', () => {
  it('a scan cut short: the ports it left out stay, without a state; the cycle fails; no discovery is asked for', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    let clock = 1_000_000;
    const exporter = fabricExporter(runner, [], () => clock);
    await cycle(exporter);
    // 19 of the 32 switch port lines, as the issue saw it.
    runner.override = (command, args) =>
      command === 'iblinkinfo' ? result(command, args, { stdout: firstLines(healthyText('iblinkinfo-switches'), 19) }) : undefined;
    clock += 60_000;
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const text = await scrape(exporter);
    expect(success(text, 'fabric_ports')).toBe(0);
    expect(series(text, 'infiniband_fabric_port_state_id')).toHaveLength(19);
    // The 13 others are still there: their counters, and their cables as discovered.
    expect(series(text, 'infiniband_fabric_port_transmit_data_bytes_total')).toHaveLength(32);
    expect(value(text, `infiniband_fabric_port_state_id{${port(LEAF2, 1)}}`)).toBeUndefined();
    expect(value(text, `infiniband_fabric_link_info{${port(LEAF2, 1)},peer_guid="0x0002c90300a20010",peer_port="1",peer_type="ca"}`)).toBe(
      1,
    );
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

  it("in the log, a switch's failed PMA queries work again when a sweep that finished queried it again", async () => {
    const log = logLines('info');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['pma-failure', 'healthy']);
    const exporter = fabricExporter(runner, [], undefined, log.logger);
    await cycle(exporter);
    const failed = log.lines
      .filter((line) => line.collector === 'fabric_ports' && line.msg === 'read failed; repeats of this error are summarised hourly')
      .map((line) => line.item);
    expect(failed).toContain('ibqueryerrors Lid 6 port 0');
    runner.use(['healthy']);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const again = log.lines.filter((line) => line.collector === 'fabric_ports' && line.msg === 'read works again').map((line) => line.item);
    expect(again.sort()).toEqual([...new Set(failed)].sort());
  });
});
