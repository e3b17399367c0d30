// The metrics that only the diag collector (perfquery, sminfo, smpquery) produces, and a synthetic
// host serving them with the catalog's labels, changing scrape after scrape like a live fabric.
import { PEER_COUNTER_METRICS } from '../../src/collectors/diag/perfquery.js';
import { SUBNET_MANAGER_METRICS } from '../../src/collectors/diag/sminfo.js';
import { PEER_METRICS } from '../../src/collectors/diag/smpquery.js';
import { allMetrics } from '../../src/metrics/catalog.js';

export const DIAG_METRICS: readonly string[] = [
  ...Object.values(PEER_METRICS),
  ...PEER_COUNTER_METRICS.values(),
  ...Object.values(SUBNET_MANAGER_METRICS),
].map((spec) => spec.name);

export const SM_GUIDS = { before: '0x0002c90300a1b2c1', after: '0x0002c90300a1b2c2' } as const;

/**
 * A host running the diag collector, as text exposition: the peer of mlx5_0/1 keeps counting
 * symbol errors and transmit wait, the master's activity count grows, the master fails over to a
 * second SM from scrape `failoverAt` on, and mlx5_1/1 cannot reach any subnet manager. Every
 * series carries exactly the labels of the catalog.
 */
export function diagHostExposition(scrape: number, failoverAt: number, nowSeconds: number): string {
  const lines: string[] = [];
  const family = (name: string, samples: [Record<string, string>, number][]) => {
    const spec = allMetrics().find((m) => m.name === name);
    if (!spec) throw new Error(`${name} is not in the catalog`);
    lines.push(`# TYPE ${name} ${spec.type}`);
    for (const [labels, value] of samples) {
      if (Object.keys(labels).sort().join() !== [...spec.labels].sort().join())
        throw new Error(`${name}: labels ${Object.keys(labels)} are not ${spec.labels}`);
      lines.push(
        `${name}{${Object.entries(labels)
          .map(([k, v]) => `${k}="${v}"`)
          .join(',')}} ${value}`,
      );
    }
  };
  const p0 = { device: 'mlx5_0', port: '1' };
  const p1 = { device: 'mlx5_1', port: '1' };
  const collectors = ['perfquery', 'sminfo', 'smpquery'];
  family('infiniband_exporter_build_info', [[{ version: '0.1.0', revision: 'synthetic', nodejs_version: 'v20.20.2' }, 1]]);
  family(
    'infiniband_exporter_collector_success',
    collectors.map((collector) => [{ collector }, 1]),
  );
  family(
    'infiniband_exporter_last_collection_timestamp_seconds',
    collectors.map((collector) => [{ collector }, nowSeconds]),
  );
  family(
    'infiniband_exporter_command_timeouts_total',
    collectors.map((command) => [{ command }, command === 'perfquery' ? Math.floor(scrape / 2) : 0]),
  );
  family('infiniband_port_info', [
    [{ ...p0, link_layer: 'InfiniBand', port_guid: '0x0002c90300c0ffe1', width: '4X', speed: 'NDR' }, 1],
    [{ ...p1, link_layer: 'InfiniBand', port_guid: '0x0002c90300c0ffe2', width: '4X', speed: 'NDR' }, 1],
  ]);
  const peer = { peer_guid: '0x98039b0300887701', peer_lid: '5', peer_node_type: 'Switch', peer_description: 'MF0;leaf01:MQM9700/U1' };
  family('infiniband_port_peer_info', [
    [{ ...p0, ...peer, peer_port: '17' }, 1],
    [{ ...p1, ...peer, peer_port: '18' }, 1],
  ]);
  for (const spec of PEER_COUNTER_METRICS.values()) {
    const growing = spec.name.endsWith('_symbol_errors_total')
      ? 7 * scrape
      : spec.name.endsWith('_transmit_wait_total')
        ? 1000 * scrape
        : 0;
    family(spec.name, [
      [p0, growing],
      [p1, 0],
    ]);
  }
  family('infiniband_subnet_manager_reachable', [
    [p0, 1],
    [p1, 0],
  ]);
  const guid = scrape < failoverAt ? SM_GUIDS.before : SM_GUIDS.after;
  family('infiniband_subnet_manager_info', [[{ ...p0, sm_guid: guid, sm_lid: '1', state: 'MASTER' }, 1]]);
  family('infiniband_subnet_manager_priority', [[p0, 14]]);
  family('infiniband_subnet_manager_activity_total', [[p0, 5000 + 3 * scrape]]);
  return lines.join('\n') + '\n';
}
