// The fabric_discovery collector on recorded tool outputs (test/fixtures/fabric-recordings), through a real
// Exporter: the topology it keeps, its cache, node names, and every failure it must survive.
import { afterEach, describe, expect, it } from 'vitest';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { samplesOf as series, sampleValue as value, scrape } from '../../support/exposition.js';
import { waitFor } from '../../../synthetic/processes.js';
import { firstLines, garbled } from '../../support/damaged-output.js';
import { logLines } from '../../support/log-lines.js';
import { parseDiscoveryCache } from '../../../src/sources/fabric/discovery-cache.js';
import { HOST11, LEAF1, LEAF2, SPINE1, SPINE2 } from '../../support/fabric-recordings.js';
import { recording as recorded } from '../../support/replay.js';
import { ReplayRunner, result, writeRecordedCache } from '../../support/replay.js';
import { DISCOVERY_CYCLE, FABRIC_PORTS_CYCLE } from '../../../src/collectors/fabric/fabric-mode.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import {
  cleanUpFabricExporters,
  fabricExporter,
  cycle,
  port,
  healthyText,
  discoveries,
  success,
  dirs,
} from '../../support/fabric-exporter.js';

afterEach(cleanUpFabricExporters);

describe('fabric mode on recorded outputs', () => {
  it('a switch the scan no longer sees is left out of the next sweeps, which read a pruned cache', async () => {
    const healthyScan = recorded('fabric', 'healthy', 'iblinkinfo-switches').stdout;
    const withoutSpine2 = healthyScan
      .split('\n')
      .filter((line) => !line.startsWith(SPINE2))
      .join('\n');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'iblinkinfo' ? result(command, args, { stdout: withoutSpine2 }) : undefined,
    );
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
      command === 'ibnetdiscover' && ++discoveries === 3
        ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' })
        : undefined,
    );
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    for (let i = 0; i < 4; i++) await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    const first = runner.rawCalls.find((call) => call[0] === 'ibnetdiscover')!;
    const dir = path.dirname(first[first.indexOf('--cache') + 1]!);
    // Discoveries 1, 2, 4 and 5 succeeded (3 failed): 4 and 5 are kept.
    expect(
      readdirSync(dir)
        .filter((name) => name.startsWith('topology-'))
        .sort(),
    ).toEqual(['topology-4.cache', 'topology-5.cache']);
    await exporter.stop();
    expect(existsSync(dir)).toBe(false);
  });

  it('a failed discovery after a good one keeps the topology and says so', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    runner.override = (command, args) =>
      command === 'ibnetdiscover'
        ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' })
        : undefined;
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    const text = await scrape(exporter);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_discovery"}')).toBe(0);
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="fabric_discovery"}')).toBe(1);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(14);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
    expect(value(text, `infiniband_fabric_port_symbol_errors_total{${port(SPINE1, 2)}}`)).toBe(65535);
  });

  it("reads each switch's PortXmitWait tick once: from the device where it answers, its generation's otherwise; a time-out is asked again", async () => {
    const tickCalls = (runner: ReplayRunner<FabricCommand>): string[] => runner.calls.filter((call) => call.startsWith('perfquery -c'));
    // spine-1 (LID 2) answers PortSamplesControl with Tick 7 (a Quantum's, read as IBA counts:
    // 8 symbol times a lane, 8 ns at QDR); spine-2 (LID 3) times out at first; the rest are ibsim.
    let spine2TimesOut = true;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => {
      if (command !== 'perfquery' || args[0] !== '-c') return undefined;
      if (args[1] === '2')
        return result(command, args, {
          stdout: '# PortSamplesControl: Lid 2 port 1\nOpCode:..........................0xff\nTick:............................0x07\n',
        });
      if (args[1] === '3' && spine2TimesOut) return result(command, args, { outcome: 'timeout', exitCode: undefined });
      return undefined;
    });
    const exporter = fabricExporter(runner);
    const first = await cycle(exporter);
    expect(tickCalls(runner)).toHaveLength(5);
    expect(value(first, `infiniband_fabric_node_xmit_wait_tick_seconds{node_guid="${SPINE1}",source="device"}`)).toBeCloseTo(8e-9, 20);
    expect(value(first, `infiniband_fabric_node_xmit_wait_tick_seconds{node_guid="${SPINE2}",source="default"}`)).toBeCloseTo(32e-9, 20);
    expect(value(first, `infiniband_fabric_node_xmit_wait_tick_seconds{node_guid="${LEAF1}",source="default"}`)).toBeCloseTo(32e-9, 20);
    expect(value(first, 'infiniband_exporter_command_timeouts_total{command="perfquery"}')).toBe(1);
    spine2TimesOut = false;
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    // Only the node that timed out was asked again, once.
    expect(tickCalls(runner)).toEqual([...tickCalls(runner).slice(0, 5), 'perfquery -c 3 1']);
  });

  it('a GUID two devices share is counted', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['duplicate-guid', 'healthy']);
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_fabric_duplicate_guids')).toBe(1);
    expect(value(text, 'infiniband_fabric_duplicate_lids')).toBe(0);
  });

  it('--fabric.node-name-map names nodes, and expectations match names', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-fabric-'));
    dirs.push(dir);
    const map = path.join(dir, 'node-name-map');
    await writeFile(map, `# spines\n${SPINE2} "spine-2"\n${LEAF2} "leaf-2" # rack 4\n`);
    const config = path.join(dir, 'config.yml');
    await writeFile(config, 'fabric:\n  expectations:\n    - node: "leaf-2"\n      ports: [5]\n      speed: FDR\n');
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const text = await cycle(
      fabricExporter(runner, ['--collector.fabric', '--no-collector.diag', '--config.file', config, '--fabric.node-name-map', map]),
    );
    expect(text).toContain(`node_guid="${SPINE2}",node_type="switch",node_desc="MF0;spine-2:SX6036/U1",node_name="spine-2"`);
    expect(text).toContain(`node_guid="${LEAF2}",node_type="switch",node_desc="MF0;leaf-2:SX6036/U1",node_name="leaf-2"`);
    // leaf-2[5] runs to spine-2[2]: both ends expect FDR and run QDR.
    for (const end of [port(LEAF2, 5), port(SPINE2, 2)]) {
      expect(value(text, `infiniband_fabric_port_link_degraded{${end},reason="speed"}`)).toBe(1);
      expect(value(text, `infiniband_fabric_port_link_width_expected_lanes{${end}}`)).toBeUndefined();
    }
  });
});

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
    expect(
      value(text, `infiniband_fabric_link_info{${port(HOST11, 1)},peer_guid="${LEAF1}",peer_port="1",peer_type="ca"}`),
    ).toBeUndefined();
    expect(value(text, `infiniband_fabric_link_info{${port(HOST11, 1)},peer_guid="${LEAF1}",peer_port="1",peer_type="switch"}`)).toBe(1);
    expect(success(text, 'fabric_ports')).toBe(1);
    const report = exporter.collectors.snapshot!.reports.find((r) => r.collector === 'fabric_discovery')!;
    expect(report.errors).toEqual([
      {
        collector: 'fabric_discovery',
        item: 'ibnetdiscover',
        message:
          'the output is incomplete, cut short or garbled on its way: 9 cables are listed from one end only (first: port 1 of 0x0002c90200530000 to port 1 of 0x0002c90300a30010, a node the output never describes); it describes 5 of the 14 nodes of the cache file ibnetdiscover wrote (first missing: 0x0002c90300a30030)',
      },
    ]);
    // With a good topology in use, the next discovery comes at its interval, not at once.
    expect(discoveries(runner)).toBe(2);
  });

  it('a discovery garbled on every third line after a good one: the topology stays, discovery fails', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy']);
    const exporter = fabricExporter(runner);
    await cycle(exporter);
    runner.override = (command, args) =>
      command === 'ibnetdiscover' ? result(command, args, { stdout: garbled(healthyText('ibnetdiscover')) }) : undefined;
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
    const switchesOnly = healthyText('ibnetdiscover')
      .split('\n\n')
      .filter((record) => record.includes('switchguid='))
      .map((record) =>
        record
          .split('\n')
          .filter((line) => !line.includes('"H-'))
          .join('\n'),
      )
      .join('\n\n');
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
    expect(report.errors.map((error) => error.message)).toContain(
      'found 5 nodes where the topology in use has 14: kept until the next discovery finds the same',
    );
    // The next ports cycle asks for the confirming discovery at once.
    clock += 60_000;
    await exporter.collectors.runCycle(FABRIC_PORTS_CYCLE);
    await waitFor('a third discovery', () => (discoveries(runner) === 3 ? true : undefined));
    await exporter.collectors.runCycle(DISCOVERY_CYCLE);
    text = await scrape(exporter);
    expect(success(text, 'fabric_discovery')).toBe(1);
    expect(series(text, 'infiniband_fabric_node_info')).toHaveLength(5);
  });

  it('in the log, a discovery that keeps failing is one failure, known by its command without the cache file; "works again" once it does', async () => {
    const log = logLines('info');
    let failing = true;
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'ibnetdiscover' && failing
        ? result(command, args, { exitCode: 255, stdout: 'ibnetdiscover: iberror: failed: discover failed\n' })
        : undefined,
    );
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
