// The metrics that only the diag collector (perfquery, sminfo, smpquery) produces, and a synthetic
// host serving them with the catalog's labels, changing scrape after scrape like a live fabric.
import { PMA_COUNTERS } from '../../src/infiniband/pma-counters.js';
import {
  ALL_METRICS,
  FABRIC_METRICS as CATALOG_FABRIC_METRICS,
  FABRIC_PMA_COUNTER_METRICS,
  PEER_COUNTER_METRICS,
  PEER_METRICS,
  SUBNET_MANAGER_METRICS,
} from '../../src/metrics/catalog.js';

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
    const spec = ALL_METRICS.find((m) => m.name === name);
    if (!spec) throw new Error(`${name} is not in the catalog`);
    lines.push(`# TYPE ${name} ${spec.type}`);
    for (const [labels, value] of samples) {
      if (Object.keys(labels).sort().join() !== [...spec.labels].sort().join()) throw new Error(`${name}: labels ${Object.keys(labels)} are not ${spec.labels}`);
      lines.push(`${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',')}} ${value}`);
    }
  };
  const p0 = { device: 'mlx5_0', port: '1' };
  const p1 = { device: 'mlx5_1', port: '1' };
  const collectors = ['perfquery', 'sminfo', 'smpquery'];
  family('infiniband_exporter_build_info', [[{ version: '0.1.0', revision: 'synthetic', nodejs_version: 'v20.20.2' }, 1]]);
  family('infiniband_exporter_collector_success', collectors.map((collector) => [{ collector }, 1]));
  family('infiniband_exporter_last_collection_timestamp_seconds', collectors.map((collector) => [{ collector }, nowSeconds]));
  family('infiniband_exporter_command_timeouts_total', collectors.map((command) => [{ command }, command === 'perfquery' ? Math.floor(scrape / 2) : 0]));
  family('infiniband_port_info', [
    [{ ...p0, link_layer: 'InfiniBand', port_guid: '0x0002c90300c0ffe1', width: '4X', speed: 'NDR', lmc: '0', sm_sl: '0', capability_mask: '0x2659e848' }, 1],
    [{ ...p1, link_layer: 'InfiniBand', port_guid: '0x0002c90300c0ffe2', width: '4X', speed: 'NDR', lmc: '0', sm_sl: '0', capability_mask: '0x2659e848' }, 1],
  ]);
  const peer = { peer_guid: '0x98039b0300887701', peer_lid: '5', peer_node_type: 'Switch', peer_description: 'MF0;leaf01:MQM9700/U1' };
  family('infiniband_port_peer_info', [[{ ...p0, ...peer, peer_port: '17' }, 1], [{ ...p1, ...peer, peer_port: '18' }, 1]]);
  for (const spec of PEER_COUNTER_METRICS.values()) {
    const growing = spec.name.endsWith('_symbol_errors_total') ? 7 * scrape : spec.name.endsWith('_transmit_wait_total') ? 1000 * scrape : 0;
    family(spec.name, [[p0, growing], [p1, 0]]);
  }
  family('infiniband_subnet_manager_reachable', [[p0, 1], [p1, 0]]);
  const guid = scrape < failoverAt ? SM_GUIDS.before : SM_GUIDS.after;
  family('infiniband_subnet_manager_info', [[{ ...p0, sm_guid: guid, sm_lid: '1', state: 'MASTER' }, 1]]);
  family('infiniband_subnet_manager_priority', [[p0, 14]]);
  family('infiniband_subnet_manager_activity_total', [[p0, 5000 + 3 * scrape]]);
  return lines.join('\n') + '\n';
}

// --- fabric mode ---------------------------------------------------------------------------------
// The fabric metrics of DESIGN.md ("Fabric mode" → "Metrics"), from the exporter's catalog; a test
// (test/metrics/fabric-contract.test.ts) holds the catalog to the contract's names and labels.
export interface ContractMetric {
  name: string;
  type: 'gauge' | 'counter';
  labels: readonly string[];
}

export const FABRIC_METRICS: readonly ContractMetric[] = [...Object.values(CATALOG_FABRIC_METRICS), ...FABRIC_PMA_COUNTER_METRICS.values()];
export const FABRIC_METRIC_NAMES: readonly string[] = FABRIC_METRICS.map((m) => m.name);
/** The exporter's own collectors in fabric mode. */
export const FABRIC_COLLECTORS = ['fabric_discovery', 'fabric_ports', 'fabric_sa'] as const;

/** GUIDs of the synthetic fabric below (0x + 16 hex digits, as the contract prints them). */
export const FABRIC = {
  spine1: '0x98039b0300a00001',
  spine2: '0x98039b0300a00002',
  leaf1: '0x98039b0300b00001',
  leaf2: '0x98039b0300b00002',
  hosts: ['0x0002c90300c00001', '0x0002c90300c00002', '0x0002c90300c00003', '0x0002c90300c00004', '0x0002c90300c00005'],
  master: '0x0002c90300c00001',
  standby: '0x0002c90300c00002',
} as const;

/**
 * A fabric-mode exporter on a small fat tree, as text exposition: 2 spines, 2 leaves with 2 HCAs
 * each and a fifth on leaf2's port 5 (leaf ports 1-2 to the hosts, 3-4 up to the spines), a master and a standby subnet manager.
 * What is wrong with it:
 *   - spine1/1 <-> leaf1/3 trained at 1X instead of 4X (degraded at both ends);
 *   - leaf2/2 (to host 4) loses its cable at scrape `pullAt` (LinkUp, then Polling);
 *   - leaf2/5 (to host 5) is INIT with LinkUp: no subnet manager configured it;
 *   - spine2/2 counts symbol errors (5 per scrape) and waits to transmit (congested);
 *   - the IPoIB broadcast group of P_Key 0xffff runs at opensm's default 10 Gb/s, MTU 2048, on a
 *     fabric of 4X QDR (40 Gb/s) links; P_Key 0x8001's group runs at 40 Gb/s, MTU 4096.
 * Every series carries exactly the labels of the contract; leaf1 has no node-name-map name.
 */
export function fabricExposition(scrape: number, pullAt: number, nowSeconds: number): string {
  const lines: string[] = [];
  const family = (name: string, samples: [Record<string, string>, number][]) => {
    const spec = FABRIC_METRICS.find((m) => m.name === name) ?? ALL_METRICS.find((m) => m.name === name);
    if (!spec) throw new Error(`${name} is neither a fabric contract metric nor in the catalog`);
    lines.push(`# TYPE ${name} ${spec.type}`);
    for (const [labels, value] of samples) {
      if (Object.keys(labels).sort().join() !== [...spec.labels].sort().join()) throw new Error(`${name}: labels ${Object.keys(labels)} are not ${spec.labels}`);
      lines.push(`${name}{${Object.entries(labels).map(([k, v]) => `${k}="${v}"`).join(',')}} ${value}`);
    }
  };
  const qdr = { rate: 5e9, lanes: 4, laneRate: 1.25e9 };
  const nodes: [string, string, string, string, string, number][] = [
    [FABRIC.spine1, 'switch', 'MF0;spine1:MQM8700/U1', 'spine1', '2', 36],
    [FABRIC.spine2, 'switch', 'MF0;spine2:MQM8700/U1', 'spine2', '3', 36],
    [FABRIC.leaf1, 'switch', 'MF0;leaf1:MQM8700/U1', '', '4', 36],
    [FABRIC.leaf2, 'switch', 'MF0;leaf2:MQM8700/U1', 'leaf2', '5', 36],
    ...FABRIC.hosts.map((guid, i): [string, string, string, string, string, number] => [guid, 'ca', `node0${i + 1} HCA-1`, '', String(10 + i), 1]),
  ];
  family('infiniband_exporter_build_info', [[{ version: '0.2.0', revision: 'synthetic', nodejs_version: 'v20.20.2' }, 1]]);
  family('infiniband_exporter_collector_success', FABRIC_COLLECTORS.map((collector) => [{ collector }, 1]));
  family('infiniband_exporter_last_collection_timestamp_seconds', FABRIC_COLLECTORS.map((collector) => [{ collector }, nowSeconds]));
  family('infiniband_fabric_node_info', nodes.map(([node_guid, node_type, node_desc, node_name, lid, ports]) =>
    [{ node_guid, node_type, node_desc, node_name, lid, ports: String(ports), vendor_id: '0x02c9', device_id: node_type === 'ca' ? '0x1003' : '0xd2f0' }, 1]));

  // Switch ports and their links: [switch, port, peer, peer port, peer type].
  const links: [string, number, string, number, string][] = [
    [FABRIC.leaf1, 1, FABRIC.hosts[0]!, 1, 'ca'],
    [FABRIC.leaf1, 2, FABRIC.hosts[1]!, 1, 'ca'],
    [FABRIC.leaf2, 1, FABRIC.hosts[2]!, 1, 'ca'],
    [FABRIC.leaf2, 5, FABRIC.hosts[4]!, 1, 'ca'],
    [FABRIC.leaf1, 3, FABRIC.spine1, 1, 'switch'],
    [FABRIC.leaf1, 4, FABRIC.spine2, 1, 'switch'],
    [FABRIC.leaf2, 3, FABRIC.spine1, 2, 'switch'],
    [FABRIC.leaf2, 4, FABRIC.spine2, 2, 'switch'],
  ];
  const pulled = scrape >= pullAt;
  if (!pulled) links.push([FABRIC.leaf2, 2, FABRIC.hosts[3]!, 1, 'ca']);
  const both = links.flatMap(([a, ap, b, bp, type]): [string, number, string, number, string][] =>
    type === 'switch' ? [[a, ap, b, bp, type], [b, bp, a, ap, 'switch']] : [[a, ap, b, bp, type]]);
  family('infiniband_fabric_link_info', both.map(([node_guid, port, peer_guid, peer_port, peer_type]) =>
    [{ node_guid, port: String(port), peer_guid, peer_port: String(peer_port), peer_type }, 1]));

  const degraded = (g: string, p: number) => (g === FABRIC.spine1 && p === 1) || (g === FABRIC.leaf1 && p === 3);
  const ports: [string, number][] = [...both.map(([g, p]): [string, number] => [g, p]), [FABRIC.leaf2, 2], [FABRIC.leaf2, 5], [FABRIC.spine1, 36]];
  const unique = [...new Map(ports.map(([g, p]) => [`${g}/${p}`, [g, p] as [string, number]])).values()];
  const key = (g: string, p: number) => ({ node_guid: g, port: String(p) });
  const isPulled = (g: string, p: number) => pulled && g === FABRIC.leaf2 && p === 2;
  const isInit = (g: string, p: number) => g === FABRIC.leaf2 && p === 5;
  const isEmpty = (g: string, p: number) => g === FABRIC.spine1 && p === 36;
  const up = unique.filter(([g, p]) => !isPulled(g, p) && !isEmpty(g, p));
  family('infiniband_fabric_port_state_id', unique.map(([g, p]) => [key(g, p), isPulled(g, p) || isEmpty(g, p) ? 1 : isInit(g, p) ? 2 : 4]));
  family('infiniband_fabric_port_physical_state_id', unique.map(([g, p]) => [key(g, p), isPulled(g, p) || isEmpty(g, p) ? 2 : 5]));
  family('infiniband_fabric_port_rate_bytes_per_second', up.map(([g, p]) => [key(g, p), degraded(g, p) ? qdr.rate / 4 : qdr.rate]));
  family('infiniband_fabric_port_link_width_lanes', up.map(([g, p]) => [key(g, p), degraded(g, p) ? 1 : qdr.lanes]));
  family('infiniband_fabric_port_lane_rate_bytes_per_second', up.map(([g, p]) => [key(g, p), qdr.laneRate]));
  family('infiniband_fabric_port_link_width_expected_lanes', up.map(([g, p]) => [key(g, p), qdr.lanes]));
  family('infiniband_fabric_port_lane_rate_expected_bytes_per_second', up.map(([g, p]) => [key(g, p), qdr.laneRate]));
  family('infiniband_fabric_port_link_degraded', up.flatMap(([g, p]): [Record<string, string>, number][] => [
    [{ ...key(g, p), reason: 'width' }, degraded(g, p) ? 1 : 0],
    [{ ...key(g, p), reason: 'speed' }, 0],
  ]));
  const hot = (g: string, p: number) => g === FABRIC.spine2 && p === 2;
  for (const c of PMA_COUNTERS) {
    const name = `infiniband_fabric_port_${c.name}_total`;
    const value = (g: string, p: number): number => {
      if (c.name === 'symbol_errors') return hot(g, p) ? 5 * scrape : 0;
      if (c.name === 'transmit_wait') return hot(g, p) ? 30_000 * scrape : 10 * scrape;
      if (c.name === 'transmit_packets' || c.name === 'receive_packets') return (hot(g, p) ? 10_000 : 1_000) * scrape;
      if (c.name === 'transmit_data_bytes' || c.name === 'receive_data_bytes') return (hot(g, p) ? 2e9 : 1e8) * scrape;
      return c.error ? 0 : 100 * scrape;
    };
    family(name, up.map(([g, p]) => [key(g, p), value(g, p)]));
  }
  family('infiniband_fabric_port_pma_saturated', [[{ ...key(FABRIC.spine2, 2), counter: 'symbol_errors' }, 1]]);
  family('infiniband_fabric_subnet_manager_info', [
    [{ sm_guid: FABRIC.master, sm_lid: '10', state: 'MASTER', priority: '14' }, 1],
    [{ sm_guid: FABRIC.standby, sm_lid: '11', state: 'STANDBY', priority: '10' }, 1],
  ]);
  const groups: [string, string, number, number, number][] = [
    ['ff12:401b:ffff::ffff:ffff', '0xffff', 2048, 1.25e9, 4],
    ['ff12:401b:8001::ffff:ffff', '0x8001', 4096, 5e9, 2],
  ];
  family('infiniband_fabric_multicast_group_mtu_bytes', groups.map(([mgid, pkey, mtu]) => [{ mgid, pkey }, mtu]));
  family('infiniband_fabric_multicast_group_rate_bytes_per_second', groups.map(([mgid, pkey, , rate]) => [{ mgid, pkey }, rate]));
  family('infiniband_fabric_multicast_group_members', groups.map(([mgid, pkey, , , members]) => [{ mgid, pkey }, members]));
  family('infiniband_fabric_duplicate_guids', [[{}, 0]]);
  family('infiniband_fabric_duplicate_lids', [[{}, 0]]);
  return lines.join('\n') + '\n';
}
