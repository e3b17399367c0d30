// The fabric_sa collector on recorded tool outputs (test/fixtures/fabric-recordings), through a real
// Exporter: the subnet managers and multicast groups, and every failure it must survive.
import { afterEach, describe, expect, it } from 'vitest';
import { samplesOf as series, sampleValue as value, scrape } from '../../support/exposition.js';
import { firstLines, garbled } from '../../support/damaged-output.js';
import { ReplayRunner, result } from '../../support/replay.js';
import { SA_CYCLE } from '../../../src/collectors/fabric/sa.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import { cleanUpFabricExporters, fabricExporter, cycle, healthyText, success } from '../../support/fabric-exporter.js';

afterEach(cleanUpFabricExporters);

describe('fabric mode on recorded outputs', () => {
  it('the SM is dead: no SM records this cycle, fabric_sa fails, the rest stands', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'saquery' ? result(command, args, { exitCode: 110, stderr: 'Query SA failed: Connection timed out\n' }) : undefined,
    );
    const text = await cycle(fabricExporter(runner));
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_sa"}')).toBe(0);
    expect(series(text, 'infiniband_fabric_subnet_manager_info')).toEqual([]);
    expect(series(text, 'infiniband_fabric_multicast_group_mtu_bytes')).toEqual([]);
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_ports"}')).toBe(1);
  });

  it("an SM that does not answer sminfo keeps the SA's record", async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'sminfo' && args[0] === '14'
        ? result(command, args, { exitCode: 255, stdout: 'sminfo: iberror: failed: query\n' })
        : undefined,
    );
    const text = await cycle(fabricExporter(runner));
    expect(text).toContain(
      'infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a30031",sm_lid="14",state="DISCOVERING",priority="5"} 1',
    );
    expect(value(text, 'infiniband_exporter_collector_success{collector="fabric_sa"}')).toBe(1);
  });
});

describe('partial output is never success', () => {
  it.each([
    [
      'SMIR cut inside its second record: no SM list at all (one SM fewer would be a subnet without standby)',
      'SMIR',
      firstLines(healthyText('smir'), 12),
      0,
    ],
    ['SMIR without any record (the master lists itself)', 'SMIR', '', 0],
    ['SMIR garbage', 'SMIR', 'Segmentation fault\n\u0001\u0002 this is not saquery output\n', 0],
  ])('%s', async (_name, arg, stdout, expected) => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'saquery' && args[0] === arg ? result(command, args, { stdout }) : undefined,
    );
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
      if (command === 'sminfo' && args[0] === '14' && !standbyAnswers)
        return result(command, args, { exitCode: 255, stdout: 'sminfo: iberror: failed: query\n' });
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
    expect(report.errors).toEqual([
      {
        collector: 'fabric_sa',
        item: 'saquery SMIR',
        message: 'the subnet manager 0x0002c90300a30031 (LID 14) is not in the output but answers as STANDBY: the output is incomplete',
      },
    ]);
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

    const fresh = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'saquery' && args[0] === '-g' ? result(command, args, { stdout: '' }) : undefined,
    );
    expect(success(await cycle(fabricExporter(fresh)), 'fabric_sa')).toBe(1);
  });

  it("sminfo garbage: the SA's record stays, the cycle fails", async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'sminfo' && args[0] === '14'
        ? result(command, args, { stdout: 'Segmentation fault\n\u0001\u0002 this is not sminfo output\n' })
        : undefined,
    );
    const text = await cycle(fabricExporter(runner));
    expect(success(text, 'fabric_sa')).toBe(0);
    expect(text).toContain(
      'infiniband_fabric_subnet_manager_info{sm_guid="0x0002c90300a30031",sm_lid="14",state="DISCOVERING",priority="5"} 1',
    );
  });
});
