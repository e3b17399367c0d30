// Every metric the exporter serves: name, type, labels and the HELP text a person on call reads.
// The README's metric list is checked against this table by a test.
import { PMA_COUNTERS } from '../infiniband/pma-counters.js';

export interface MetricSpec {
  name: string;
  type: 'gauge' | 'counter';
  labels: readonly string[];
  help: string;
}

const PORT = ['device', 'port'] as const;

function gauge(name: string, labels: readonly string[], help: string): MetricSpec {
  return { name, type: 'gauge', labels, help };
}
function counter(name: string, labels: readonly string[], help: string): MetricSpec {
  return { name, type: 'counter', labels, help };
}

export const DEVICE_METRICS = {
  deviceInfo: gauge('infiniband_device_info', ['device', 'node_type', 'node_guid', 'sys_image_guid', 'firmware_version', 'hca_type', 'board_id', 'hw_rev', 'node_desc'],
    'InfiniBand device identity from /sys/class/infiniband/<device> (value always 1; empty label = file absent). GUIDs as 0x + 16 hex digits.'),
} as const;

export const PORT_METRICS = {
  portInfo: gauge('infiniband_port_info', [...PORT, 'link_layer', 'port_guid', 'width', 'speed'],
    'Port identity (value always 1): link layer (InfiniBand, Ethernet = RoCE), port GUID from GID 0, active width and speed (empty while the physical link is down).'),
  stateId: gauge('infiniband_port_state_id', PORT,
    'Logical port state from ports/<n>/state: 0 NOP, 1 DOWN, 2 INIT (link up but no subnet manager configured it), 3 ARMED, 4 ACTIVE, 5 ACTIVE_DEFER.'),
  state: gauge('infiniband_port_state', [...PORT, 'state'],
    'Logical port state as one series per state name, 1 for the current state, else 0 (only with --metrics.port-state-series; infiniband_port_state_id carries the same).'),
  physicalStateId: gauge('infiniband_port_physical_state_id', PORT,
    'Physical link state from ports/<n>/phys_state: 1 Sleep, 2 Polling (no cable or no peer), 3 Disabled, 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.'),
  physicalState: gauge('infiniband_port_physical_state', [...PORT, 'state'],
    'Physical link state as one series per state name, 1 for the current state, else 0 (only with --metrics.port-state-series; infiniband_port_physical_state_id carries the same).'),
  stateChanges: counter('infiniband_port_state_changes_total', PORT,
    'Logical state changes the exporter observed since it started (sampled every collection interval): flaps between scrapes are counted.'),
  lid: gauge('infiniband_port_lid', PORT, 'Base LID assigned to the port by the subnet manager (0 = not assigned).'),
  smLid: gauge('infiniband_port_sm_lid', PORT,
    'LID of the master subnet manager as the port last heard it (0 = no subnet manager ever configured the port; stays set after the SM dies).'),
  smSl: gauge('infiniband_port_sm_sl', PORT, 'Service level used to reach the subnet manager.'),
  lmc: gauge('infiniband_port_lmc', PORT, 'LID mask control: the port answers 2^LMC consecutive LIDs.'),
  capabilityMask: gauge('infiniband_port_capability_mask', PORT, 'PortInfo CapabilityMask from ports/<n>/cap_mask (bit 0x2 IsSM, 0x4000 extended speeds, 0x10000 CM).'),
  isSm: gauge('infiniband_port_is_sm', PORT, '1 when a subnet manager runs on this port (CapabilityMask IsSM bit 0x2).'),
  rate: gauge('infiniband_port_rate_bytes_per_second', PORT,
    'Nominal link rate from ports/<n>/rate (Gb/s x 1e9 / 8, as node_exporter). Absent while the physical link is down.'),
  dataRate: gauge('infiniband_port_data_rate_bytes_per_second', PORT,
    'Usable data rate after line encoding (8b/10b up to QDR, 64b/66b from FDR10): width x per-lane data rate. Absent while the physical link is down.'),
  widthLanes: gauge('infiniband_port_link_width_lanes', PORT, 'Active link width in lanes (1, 2, 4, 8 or 12). Absent while the physical link is down.'),
  laneRate: gauge('infiniband_port_lane_rate_bytes_per_second', PORT,
    'Nominal rate of one lane at the active speed (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s). Absent while the physical link is down.'),
  widthExpected: gauge('infiniband_port_link_width_expected_lanes', PORT,
    'Width the link should run at: from the config file\'s expectations, else the best width both link ends have enabled (smpquery). Absent when unknown.'),
  laneRateExpected: gauge('infiniband_port_lane_rate_expected_bytes_per_second', PORT,
    'Nominal lane rate the link should run at: from the config file\'s expectations, else the best speed both ends have enabled (smpquery). Absent when unknown.'),
  degraded: gauge('infiniband_port_link_degraded', [...PORT, 'reason'],
    '1 when the link trained below its expected width (reason="width") or speed (reason="speed"): a damaged cable or port. Present while the link is up and an expectation exists.'),
  pmaSaturated: gauge('infiniband_port_pma_saturated', [...PORT, 'counter'],
    'Present (value 1) only while a fixed-width PMA counter sits at its maximum: it no longer counts, new errors are invisible until it is reset (perfquery -R). counter="peer_<name>" is the link peer\'s counter.'),
  hwStat: counter('infiniband_port_hw_stat_total', [...PORT, 'counter'],
    'Driver hardware counter from ports/<n>/hw_counters/<counter> (e.g. mlx5 out_of_buffer, local_ack_timeout_err, np_cnp_sent).'),
} as const;

export const PMA_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.map((c) => [c.name, counter(`infiniband_port_${c.name}_total`, PORT, c.help)]),
);

export const PEER_METRICS = {
  info: gauge('infiniband_port_peer_info', [...PORT, 'peer_guid', 'peer_port', 'peer_lid', 'peer_node_type', 'peer_description'],
    'The port at the other end of this port\'s cable, found by direct route (smpquery nodeinfo/nodedesc, value always 1): node GUID, port number, LID (empty before a subnet manager assigned one), node type (CA, Switch, Router) and description (usually the switch name).'),
} as const;

/** Error counters of the link peer's port (read with perfquery by LID), one metric per PMA error counter. */
export const PEER_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.filter((c) => c.error).map((c) => [
    c.name,
    counter(`infiniband_port_peer_${c.name}_total`, PORT, `At the link peer (the switch port at the other end of this port's cable): ${c.help} Saturation shows as infiniband_port_pma_saturated{counter="peer_${c.name}"}.`),
  ]),
);

export const SUBNET_MANAGER_METRICS = {
  reachable: gauge('infiniband_subnet_manager_reachable', PORT,
    '1 when the subnet manager at the port\'s SM LID answered sminfo, 0 when nobody answered: no SM ever configured the port, or the SM died (ports stay ACTIVE with a stale SM LID). Only for InfiniBand ports with a physical link.'),
  info: gauge('infiniband_subnet_manager_info', [...PORT, 'sm_guid', 'sm_lid', 'state'],
    'Subnet manager seen from the port (value always 1): the one it follows (state MASTER normally) and, when an SM runs on this port without being the master, that one too (STANDBY, DISCOVERING or NOTACTIVE). A new sm_guid/sm_lid on state="MASTER" means a failover.'),
  priority: gauge('infiniband_subnet_manager_priority', PORT,
    'Priority (0-15) of the subnet manager the port follows: the highest priority wins the election for MASTER.'),
  activity: counter('infiniband_subnet_manager_activity_total', PORT,
    'SMInfo ActivityCount of the subnet manager the port follows: it keeps increasing while the master SM is alive; a value that stops moving means a hung SM (it restarts from 0 when the SM restarts).'),
} as const;

export const IPOIB_METRICS = {
  info: gauge('infiniband_ipoib_info', ['interface', 'device', 'port', 'mode', 'pkey', 'parent'],
    'IPoIB interface (value always 1): HCA device and port carrying it, mode (datagram or connected), P_Key, parent of a P_Key child.'),
  mtu: gauge('infiniband_ipoib_mtu_bytes', ['interface'], 'IPoIB interface MTU (2044 or 4092 in datagram mode, up to 65520 in connected mode).'),
  connectedMode: gauge('infiniband_ipoib_connected_mode', ['interface'], '1 when the IPoIB interface runs in connected mode, 0 in datagram mode.'),
  carrier: gauge('infiniband_ipoib_carrier', ['interface'],
    '1 when the IPoIB interface has carrier (port ACTIVE and broadcast group joined), 0 otherwise or when it is administratively down.'),
} as const;

export const EXPORTER_METRICS = {
  buildInfo: gauge('infiniband_exporter_build_info', ['version', 'revision', 'nodejs_version'], 'Version of the exporter (value always 1).'),
  success: gauge('infiniband_exporter_collector_success', ['collector'],
    '1 when the collector\'s last cycle succeeded; 0 when it failed, was cut off at its deadline, or a command\'s output was incomplete (cut short, or lines not understood), so that part of its data is missing. A single file or switch that could not be read counts in read_errors_total only.'),
  duration: gauge('infiniband_exporter_collector_duration_seconds', ['collector'], 'Duration of the collector\'s last cycle.'),
  lastCollection: gauge('infiniband_exporter_last_collection_timestamp_seconds', ['collector'],
    'Unix time at which the collector last finished a cycle: time() - this is the age of its data.'),
  readErrors: counter('infiniband_exporter_read_errors_total', ['collector'],
    'Files, devices or commands that could not be read or parsed, since the exporter started (details in the log).'),
  commandTimeouts: counter('infiniband_exporter_command_timeouts_total', ['command'], 'infiniband-diags commands (diag and fabric mode) killed at --diag.timeout.'),
} as const;

const FABRIC_PORT = ['node_guid', 'port'] as const;

/** Fabric mode (--collector.fabric): every node, switch port and link of the subnet, seen from one host. */
export const FABRIC_METRICS = {
  nodeInfo: gauge('infiniband_fabric_node_info', ['node_guid', 'node_type', 'node_desc', 'node_name', 'lid', 'ports', 'vendor_id', 'device_id'],
    'Every node the last discovery found (value always 1): type (switch, ca, router), NodeDescription, name from --fabric.node-name-map (empty when unmapped), LID (a switch\'s port 0, a CA\'s first port), number of ports, vendor and device ID. A switch that disappears from here was lost from the fabric.'),
  stateId: gauge('infiniband_fabric_port_state_id', FABRIC_PORT,
    'Logical state of a fabric port, numbered as the kernel numbers host ports: 1 DOWN (no link), 2 INIT (link up, but no subnet manager configured it), 3 ARMED, 4 ACTIVE. Down ports stay listed: a pulled cable shows as 1 here, not as a missing series.'),
  physicalStateId: gauge('infiniband_fabric_port_physical_state_id', FABRIC_PORT,
    'Physical state of a fabric port: 1 Sleep, 2 Polling (no cable, or nobody at the other end), 3 Disabled (switched off by management), 4 PortConfigurationTraining, 5 LinkUp, 6 LinkErrorRecovery, 7 PhyTest.'),
  rate: gauge('infiniband_fabric_port_rate_bytes_per_second', FABRIC_PORT,
    'Nominal rate of a fabric port\'s link: width x lane rate (Gb/s x 1e9 / 8, as for host ports). Absent while the port is down.'),
  widthLanes: gauge('infiniband_fabric_port_link_width_lanes', FABRIC_PORT, 'Active width of a fabric port\'s link in lanes (1, 2, 4, 8 or 12). Absent while the port is down.'),
  laneRate: gauge('infiniband_fabric_port_lane_rate_bytes_per_second', FABRIC_PORT,
    'Nominal rate of one lane at the active speed (SDR 2.5, DDR 5, QDR 10, FDR10 10, FDR 14, EDR 25, HDR 50, NDR 100, XDR 200 Gb/s). Absent while the port is down.'),
  widthExpected: gauge('infiniband_fabric_port_link_width_expected_lanes', FABRIC_PORT,
    'Width the link should run at: from fabric.expectations in the config file (first rule matching either end), else the widest both ends enable (PortInfo LinkWidthEnabled, from discovery). Absent when unknown.'),
  laneRateExpected: gauge('infiniband_fabric_port_lane_rate_expected_bytes_per_second', FABRIC_PORT,
    'Lane rate the link should run at: from fabric.expectations in the config file, else the fastest speed both ends enable (PortInfo LinkSpeed(Ext)Enabled). Absent when unknown.'),
  degraded: gauge('infiniband_fabric_port_link_degraded', [...FABRIC_PORT, 'reason'],
    '1 when a fabric link trained below its expected width (reason="width") or speed (reason="speed"): a damaged cable, transceiver or port. Set on both ends of an inter-switch link. Present while the link is up and an expectation exists.'),
  linkInfo: gauge('infiniband_fabric_link_info', [...FABRIC_PORT, 'peer_guid', 'peer_port', 'peer_type'],
    'The port at the other end of a fabric port\'s cable (value always 1): its node GUID, port number and node type (switch, ca, router). Switch ports as last read; CA ports as last discovered.'),
  pmaSaturated: gauge('infiniband_fabric_port_pma_saturated', [...FABRIC_PORT, 'counter'],
    'Present (value 1) only while a fixed-width PMA counter of a fabric port sits at its maximum: it no longer counts and new errors are invisible until it is reset (perfquery -R).'),
  subnetManagerInfo: gauge('infiniband_fabric_subnet_manager_info', ['sm_guid', 'sm_lid', 'state', 'priority'],
    'Every subnet manager of the subnet (value always 1), from the SA\'s SMInfoRecords, state and priority as each SM reports them itself: MASTER, STANDBY, DISCOVERING or NOTACTIVE. One MASTER and at least one STANDBY is a redundant subnet; equal top priorities make the election depend on GUIDs.'),
  multicastMtu: gauge('infiniband_fabric_multicast_group_mtu_bytes', ['mgid', 'pkey'],
    'MTU of a multicast group (SA MCMemberRecord). opensm creates the IPoIB broadcast group (mgid ff12:401b:...) with 2048 bytes unless configured; a fabric whose ports all do 4096 wastes half of every IPoIB datagram.'),
  multicastRate: gauge('infiniband_fabric_multicast_group_rate_bytes_per_second', ['mgid', 'pkey'],
    'Rate of a multicast group (Gb/s x 1e9 / 8). Every member sends multicast at this rate: opensm\'s default IPoIB broadcast group is 10 Gb/s whatever the links run at (ibdiagnet\'s "Suboptimal rate for group").'),
  multicastMembers: gauge('infiniband_fabric_multicast_group_members', ['mgid', 'pkey'], 'Ports joined to a multicast group, as the SA lists them.'),
  duplicateGuids: gauge('infiniband_fabric_duplicate_guids', [],
    'GUIDs that more than one node or port of the fabric claims (a cloned or mis-programmed GUID makes one of the devices invisible to the subnet manager). 0 on a sane fabric.'),
  duplicateLids: gauge('infiniband_fabric_duplicate_lids', [], 'LIDs assigned to more than one port: traffic to them goes astray. 0 on a sane fabric.'),
} as const;

/** PMA counters of fabric ports: the host contract's names under infiniband_fabric_port_. */
export const FABRIC_PMA_COUNTER_METRICS: ReadonlyMap<string, MetricSpec> = new Map(
  PMA_COUNTERS.map((c) => [c.name, counter(`infiniband_fabric_port_${c.name}_total`, FABRIC_PORT, `Of a fabric port: ${c.help}`)]),
);

export const ALL_METRICS: readonly MetricSpec[] = [
  ...Object.values(DEVICE_METRICS),
  ...Object.values(PORT_METRICS),
  ...PMA_COUNTER_METRICS.values(),
  ...Object.values(PEER_METRICS),
  ...PEER_COUNTER_METRICS.values(),
  ...Object.values(SUBNET_MANAGER_METRICS),
  ...Object.values(IPOIB_METRICS),
  ...Object.values(FABRIC_METRICS),
  ...FABRIC_PMA_COUNTER_METRICS.values(),
  ...Object.values(EXPORTER_METRICS),
];
