// The fabric metrics exactly as DESIGN.md's "Fabric mode" contract names them: users' queries, the
// fabric rules and the fabric dashboard depend on these names, types and labels.
import { describe, expect, it } from 'vitest';
import { PMA_COUNTERS } from '../../src/model/pma-counters.js';
import { FABRIC_DISCOVERY } from '../../src/collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../../src/collectors/fabric/ports/index.js';
import { FABRIC_SA } from '../../src/collectors/fabric/sa.js';

const PORT = ['node_guid', 'port'];

const CONTRACT: readonly { name: string; type: 'gauge' | 'counter'; labels: readonly string[] }[] = [
  {
    name: 'infiniband_fabric_node_info',
    type: 'gauge',
    labels: ['node_guid', 'node_type', 'node_desc', 'node_name', 'lid', 'ports', 'vendor_id', 'device_id', 'tier'],
  },
  ...[
    'infiniband_fabric_port_state_id',
    'infiniband_fabric_port_physical_state_id',
    'infiniband_fabric_port_rate_bytes_per_second',
    'infiniband_fabric_port_link_width_lanes',
    'infiniband_fabric_port_lane_rate_bytes_per_second',
    'infiniband_fabric_port_link_width_expected_lanes',
    'infiniband_fabric_port_lane_rate_expected_bytes_per_second',
  ].map((name) => ({ name, type: 'gauge' as const, labels: PORT })),
  { name: 'infiniband_fabric_port_link_degraded', type: 'gauge', labels: [...PORT, 'reason'] },
  { name: 'infiniband_fabric_link_info', type: 'gauge', labels: [...PORT, 'peer_guid', 'peer_port', 'peer_type'] },
  // Every PMA counter of the host contract, same names.
  ...PMA_COUNTERS.map((c) => ({ name: `infiniband_fabric_port_${c.name}_total`, type: 'counter' as const, labels: PORT })),
  { name: 'infiniband_fabric_port_pma_saturated', type: 'gauge', labels: [...PORT, 'counter'] },
  { name: 'infiniband_fabric_subnet_manager_info', type: 'gauge', labels: ['sm_guid', 'sm_lid', 'state', 'priority'] },
  { name: 'infiniband_fabric_multicast_group_mtu_bytes', type: 'gauge', labels: ['mgid', 'pkey'] },
  { name: 'infiniband_fabric_multicast_group_rate_bytes_per_second', type: 'gauge', labels: ['mgid', 'pkey'] },
  { name: 'infiniband_fabric_multicast_group_members', type: 'gauge', labels: ['mgid', 'pkey'] },
  { name: 'infiniband_fabric_duplicate_guids', type: 'gauge', labels: [] },
  { name: 'infiniband_fabric_duplicate_lids', type: 'gauge', labels: [] },
  // "Congestion and jobs"
  { name: 'infiniband_fabric_node_xmit_wait_tick_seconds', type: 'gauge', labels: ['node_guid', 'source'] },
  { name: 'infiniband_fabric_port_congestion_ratio', type: 'gauge', labels: PORT },
  ...['infiniband_fabric_congestion_ratio_max', 'infiniband_fabric_congestion_ratio_sum', 'infiniband_fabric_congestion_ports'].map(
    (name) => ({ name, type: 'gauge' as const, labels: ['tier', 'direction'] }),
  ),
];

describe('fabric metric contract', () => {
  it("the catalog has exactly the contract's fabric metrics, types and labels", () => {
    const catalog = [FABRIC_DISCOVERY, FABRIC_PORTS, FABRIC_SA]
      .flatMap((collector) => collector.metrics!.families)
      .map(({ name, type, labels }) => ({ name, type, labels: [...labels] }))
      .sort((a, b) => a.name.localeCompare(b.name));
    const contract = CONTRACT.map(({ name, type, labels }) => ({ name, type, labels: [...labels] })).sort((a, b) =>
      a.name.localeCompare(b.name),
    );
    expect(catalog).toEqual(contract);
  });
});
