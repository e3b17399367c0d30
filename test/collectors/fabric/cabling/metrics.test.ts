// The cabling families: the series of the miswired rail tree (test/fixtures/cabling/), byte for byte
// what prom-client renders, clean under `promtool check metrics`, none without a plan or rails, and
// each shard's own.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { CABLING_METRIC_ORDER, cablingSamples, writeCablingMetrics } from '../../../../src/collectors/fabric/cabling/metrics.js';
import { ExpositionBuffer } from '../../../../src/exposition/buffer.js';
import { resolvePlan } from '../../../../src/sources/fabric/cabling-plan-resolution.js';
import { formatPlan } from '../../../../src/sources/fabric/cabling-plan-writer.js';
import { currentCabling, type CablingReport } from '../../../../src/model/cabling.js';
import { judgeConformance } from '../../../../src/model/cabling-conformance.js';
import type { Shard } from '../../../../src/model/fabric.js';
import { judgeRails } from '../../../../src/model/rails.js';
import { plan, railTreeNames, recordedRailTree } from '../../../support/cabling.js';
import { promClientText } from '../../../support/prom-client-oracle.js';
import { requireSystemTools } from '../../../support/system.js';

const tools = requireSystemTools('promtool check metrics of the cabling families', { promtool: 'prometheus' });
const WHOLE: Shard = { index: 1, count: 1 };

function report(scenario: string, rails?: CablingReport['rails']): CablingReport {
  const healthy = recordedRailTree('healthy');
  const { topology, readings } = recordedRailTree(scenario);
  const resolved = resolvePlan(plan(formatPlan(healthy.topology, healthy.readings)), topology, railTreeNames());
  return {
    conformance: judgeConformance(resolved, topology, readings),
    rails: rails ?? judgeRails(topology, currentCabling(topology, readings), undefined),
  };
}

function text(cabling: CablingReport | undefined, shard = WHOLE): string {
  const out = new ExpositionBuffer();
  writeCablingMetrics(cabling, shard, out);
  return out.finish().toString('utf8');
}

describe('cabling metrics', () => {
  it('writes nothing without a plan or rails', () => {
    expect(text(undefined)).toBe('');
    expect(text({ conformance: undefined, rails: undefined })).toBe('');
  });

  it('writes the status of every planned cable, the cables the plan lacks, the missing nodes and the rail violations', () => {
    const exposition = text(report('miswired'));
    const lines = exposition.split('\n');
    expect(lines.filter((line) => line.startsWith('infiniband_fabric_planned_link_status{'))).toHaveLength(30);
    expect(lines.filter((line) => line.startsWith('infiniband_fabric_planned_link_status{') && !line.endsWith(' 0'))).toEqual([
      'infiniband_fabric_planned_link_status{node_guid="0x0002c90200700001",port="1",peer_guid="0x0002c90300c01000",peer_port="1"} 2',
      'infiniband_fabric_planned_link_status{node_guid="0x0002c90200700002",port="1",peer_guid="0x0002c90300c04000",peer_port="1"} 2',
      'infiniband_fabric_planned_link_status{node_guid="0x0002c90200700003",port="2",peer_guid="0x0002c90300c02100",peer_port="1"} 2',
      'infiniband_fabric_planned_link_status{node_guid="0x0002c90200700003",port="3",peer_guid="0x0002c90300c03100",peer_port="1"} 2',
      'infiniband_fabric_planned_link_status{node_guid="0x0002c90200700005",port="4",peer_guid="0x0002c90200600001",peer_port="5"} 1',
    ]);
    expect(lines.filter((line) => line.startsWith('infiniband_fabric_unplanned_link_info{'))).toEqual([
      'infiniband_fabric_unplanned_link_info{node_guid="0x0002c90200700001",port="6",peer_guid="0x0002c90300c01000",peer_port="1"} 1',
      'infiniband_fabric_unplanned_link_info{node_guid="0x0002c90200700003",port="2",peer_guid="0x0002c90300c03100",peer_port="1"} 1',
      'infiniband_fabric_unplanned_link_info{node_guid="0x0002c90200700003",port="3",peer_guid="0x0002c90300c02100",peer_port="1"} 1',
      'infiniband_fabric_unplanned_link_info{node_guid="0x0002c90200700004",port="7",peer_guid="0x0002c90300c04000",peer_port="1"} 1',
    ]);
    expect(lines).toContain('infiniband_fabric_plan_nodes_missing 0');
    expect(lines.filter((line) => line.startsWith('infiniband_fabric_rail_violation{'))).toEqual([
      'infiniband_fabric_rail_violation{node_guid="0x0002c90300c04000",port="1",rail="mlx5_0",peer_guid="0x0002c90200700004",peer_port="7",peer_rail="mlx5_1"} 1',
    ]);
  });

  it('is byte for byte what prom-client renders, rail names from the config file escaped', async () => {
    const base = report('miswired');
    const quoted: CablingReport = {
      ...base,
      rails: { ...base.rails!, violations: base.rails!.violations.map((v) => ({ ...v, rail: 'rail "0" \\ a', leafRail: '' })) },
    };
    for (const cabling of [base, quoted]) {
      expect(text(cabling)).toBe(await promClientText(cablingSamples(cabling, WHOLE), CABLING_METRIC_ORDER));
    }
    expect(text(quoted)).toContain('rail="rail \\"0\\" \\\\ a",peer_guid="0x0002c90200700004",peer_port="7",peer_rail=""} 1');
  });

  it("writes each shard's own cables and adapters; the missing count in shard 1 alone", () => {
    const cabling = report('miswired');
    const shards = [1, 2, 3].map((index) => text(cabling, { index, count: 3 }));
    const count = (body: string, family: string): number => body.split('\n').filter((line) => line.startsWith(`${family}{`)).length;
    expect(shards.reduce((sum, body) => sum + count(body, 'infiniband_fabric_planned_link_status'), 0)).toBe(30);
    expect(shards.reduce((sum, body) => sum + count(body, 'infiniband_fabric_unplanned_link_info'), 0)).toBe(4);
    expect(shards.map((body) => body.includes('infiniband_fabric_plan_nodes_missing 0'))).toEqual([true, false, false]);
  });

  it.skipIf(tools.skipReason !== undefined)('passes promtool check metrics', () => {
    const result = spawnSync(tools.paths.promtool!, ['check', 'metrics'], { input: text(report('miswired')), encoding: 'utf8' });
    expect(`${result.stdout}${result.stderr}`).toBe('');
    expect(result.status).toBe(0);
  });
});
