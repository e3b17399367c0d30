// Metrics of the DESIGN.md contract that come from the diag collector (perfquery, sminfo), which
// the sysfs fixtures cannot produce. Until the collector adds them to src/metrics/catalog.ts the
// dashboards may still use them: this list is the allow-list, and the synthetic host below serves
// them with the contract's labels so that the panels using them are checked against Prometheus.
import { PMA_COUNTERS } from '../../src/infiniband/pma-counters.js';

const PEER_ERROR_COUNTERS = PMA_COUNTERS.filter((c) => c.error).map((c) => c.name);

export const DIAG_CONTRACT_METRICS: readonly string[] = [
  'infiniband_port_peer_info',
  ...PEER_ERROR_COUNTERS.map((name) => `infiniband_port_peer_${name}_total`),
  'infiniband_subnet_manager_reachable',
  'infiniband_subnet_manager_info',
  'infiniband_subnet_manager_priority',
  'infiniband_subnet_manager_activity_count',
];

export const SM_GUIDS = { before: '0x0002c90300a1b2c1', after: '0x0002c90300a1b2c2' } as const;

/**
 * A host running the diag collector, as text exposition. Scrape after scrape it changes like a
 * live fabric: the peer of mlx5_0/1 keeps counting symbol errors and transmit wait, the subnet
 * manager's activity count grows, the master fails over to a second SM from scrape `failoverAt`
 * on, and mlx5_1/1 cannot reach any subnet manager.
 */
export function diagHostExposition(scrape: number, failoverAt: number, nowSeconds: number): string {
  const lines: string[] = [];
  const family = (name: string, samples: [string, number][]) => {
    lines.push(`# TYPE ${name} ${name.endsWith('_total') ? 'counter' : 'gauge'}`);
    for (const [labels, value] of samples) lines.push(`${name}{${labels}} ${value}`);
  };
  const p0 = 'device="mlx5_0",port="1"';
  const p1 = 'device="mlx5_1",port="1"';
  family('infiniband_exporter_build_info', [['version="0.1.0",revision="synthetic",nodejs_version="v20.20.2"', 1]]);
  family('infiniband_exporter_collector_success', ['perfquery', 'sminfo', 'smpquery'].map((c) => [`collector="${c}"`, 1]));
  family('infiniband_exporter_last_collection_timestamp_seconds', ['perfquery', 'sminfo', 'smpquery'].map((c) => [`collector="${c}"`, nowSeconds]));
  family('infiniband_exporter_command_timeouts_total', [['command="perfquery"', Math.floor(scrape / 2)], ['command="sminfo"', 0], ['command="smpquery"', 0]]);
  family('infiniband_port_info', [
    [`${p0},link_layer="InfiniBand",port_guid="0x0002c90300c0ffe1",width="4X",speed="NDR"`, 1],
    [`${p1},link_layer="InfiniBand",port_guid="0x0002c90300c0ffe2",width="4X",speed="NDR"`, 1],
  ]);
  family('infiniband_port_peer_info', [
    [`${p0},peer_guid="0x98039b0300887701",peer_port="17",peer_lid="0x5",peer_node_type="Switch",peer_description="MF0;leaf01:MQM9700/U1"`, 1],
    [`${p1},peer_guid="0x98039b0300887701",peer_port="18",peer_lid="0x5",peer_node_type="Switch",peer_description="MF0;leaf01:MQM9700/U1"`, 1],
  ]);
  for (const name of PEER_ERROR_COUNTERS) {
    const growing = name === 'symbol_errors' ? 7 * scrape : name === 'transmit_wait' ? 1000 * scrape : 0;
    family(`infiniband_port_peer_${name}_total`, [[p0, growing], [p1, 0]]);
  }
  family('infiniband_subnet_manager_reachable', [[p0, 1], [p1, 0]]);
  const guid = scrape < failoverAt ? SM_GUIDS.before : SM_GUIDS.after;
  family('infiniband_subnet_manager_info', [[`${p0},sm_guid="${guid}",sm_lid="0x1",state="MASTER"`, 1]]);
  family('infiniband_subnet_manager_priority', [[p0, 14]]);
  family('infiniband_subnet_manager_activity_count', [[p0, 5000 + 3 * scrape]]);
  return lines.join('\n') + '\n';
}
