// "InfiniBand / Fabric": the whole subnet as the exporter's fabric mode (--collector.fabric) sees
// it: nodes and links, subnet managers, unhealthy links with both ends named, errors, congestion,
// switch port utilisation and the IPoIB broadcast groups. One or two fabric-mode instances usually
// scrape the same subnet, so every query aggregates per port (max by node_guid, port) and counts
// distinct GUIDs: selecting both instances shows each port once.
import type * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { BIT_ERROR_RATE_THRESHOLD } from '../../src/model/bit-error-rate.js';
import {
  EMPTY_WHEN_HEALTHY,
  FABRIC_UID,
  HOST_UID,
  NEEDS_HCA_PORTS,
  NEEDS_HOUR,
  NEEDS_PLAN,
  PHYSICAL_MAPPINGS,
  PHYSICAL_STATES,
  STATE_MAPPINGS,
  alertAbove,
  buildDashboard,
  colorText,
  column,
  countByStateName,
  datasourceVariable,
  hiddenProp,
  instant,
  jobVariable,
  labelVariable,
  mappingsProp,
  mergedTable,
  series,
  tableRow,
  unitProp,
  valueMap,
  type Counter,
  type NoteSpec,
  type Override,
  type PanelSpec,
  type TargetSpec,
} from './panels.js';

/** Error counters of the fabric ports shown in the error panels. */
const FABRIC_ERRORS: readonly Counter[] = [
  ['symbol_errors', 'symbol errors'],
  ['link_error_recoveries', 'link error recoveries'],
  ['link_downed', 'link downed'],
  ['local_link_integrity_errors', 'local link integrity errors'],
  ['receive_errors', 'receive errors'],
  ['receive_remote_physical_errors', 'receive remote physical errors'],
  ['transmit_discards', 'transmit discards'],
  ['excessive_buffer_overrun_errors', 'excessive buffer overruns'],
];

export function fabric(): dashboard.Dashboard {
  const sel = 'job=~"$job", instance=~"$instance"';
  const port = '(node_guid, port)';
  const metric = (name: string, extra = '') => `infiniband_fabric_${name}{${sel}${extra ? `, ${extra}` : ''}}`;
  /** One value per port, however many instances report it. */
  const perPort = (name: string) => `max by ${port} (${metric(name)})`;
  const rate = (name: string) => `max by ${port} (rate(${metric(`port_${name}_total`)}[$__rate_interval]))`;
  const nodeNames = `max by (node_guid, node_name, node_desc) (${metric('node_info')})`;
  /** Adds node_name and node_desc to a per-port expression; keeps the rows of nodes without info. */
  const named = (expr: string, key = 'node_guid, port') =>
    `(${expr}) * on (node_guid) group_left (node_name, node_desc) ${nodeNames}\nor on (${key}) (${expr})`;
  /**
   * Names of the nodes discovered now, and of those seen earlier in the time range: a host whose
   * cable was pulled drops out of the next discovery, and it is the name on-call needs. One row
   * per node (topk) even if a vanished node was renamed within the range.
   */
  const knownNodeNames = `${nodeNames}\n  or on (node_guid) topk by (node_guid) (1, max by (node_guid, node_name, node_desc) (max_over_time(${metric('node_info')}[$__range])))`;
  /** The other end of each port of `expr` in the time range: peer GUID and port, and its names. */
  const peerOf = (expr: string) => {
    const peers = `max by (node_guid, port, peer_guid, peer_port) (max_over_time(${metric('link_info')}[$__range]) and on ${port} (${expr}))`;
    // label_join copies a label without a "$1" (which Grafana would read as a variable).
    const peerNames = `label_join(label_join(label_join(${knownNodeNames}, "peer_guid", "", "node_guid"), "peer_name", "", "node_name"), "peer_desc", "", "node_desc")`;
    return `${peers} * on (peer_guid) group_left (peer_name, peer_desc) max by (peer_guid, peer_name, peer_desc) (${peerNames})\nor on (node_guid, port) ${peers}`;
  };
  const names: Override[] = [
    { matcher: { id: 'byName', options: 'node_guid' }, properties: [{ id: 'displayName', value: 'GUID' }] },
    { matcher: { id: 'byName', options: 'node_name' }, properties: [{ id: 'displayName', value: 'name' }] },
    { matcher: { id: 'byName', options: 'node_desc' }, properties: [{ id: 'displayName', value: 'description' }] },
    { matcher: { id: 'byName', options: 'peer_guid' }, properties: [{ id: 'displayName', value: 'peer GUID' }] },
    { matcher: { id: 'byName', options: 'peer_name' }, properties: [{ id: 'displayName', value: 'peer name' }] },
    { matcher: { id: 'byName', options: 'peer_desc' }, properties: [{ id: 'displayName', value: 'peer description' }] },
  ];
  /** A table of unhealthy ports: the condition's value, names, then the other end of the link. */
  const linkTable = (
    title: string,
    description: string,
    condition: string,
    valueColumn: Override,
    extra: TargetSpec[] = [],
    extraColumns: Override[] = [],
  ): PanelSpec => ({
    type: 'table',
    title,
    description: `${description} ${EMPTY_WHEN_HEALTHY}`,
    unit: 'none',
    w: 24,
    h: 7,
    targets: [tableRow(named(condition)), tableRow(peerOf(condition)), ...extra],
    transformations: mergedTable(['Time', '__name__', 'Value #B']),
    overrides: [...names, valueColumn, ...extraColumns],
  });

  const switches = metric('node_info', 'node_type="switch"');
  const linkedSwitchPorts = `max by (node_guid, port, peer_type) (${metric('link_info')}) and on (node_guid) ${switches}`;
  const downThatWasUp = `${perPort('port_physical_state_id')} >= 1 <= 4
and on ${port} max by ${port} (max_over_time(${metric('port_physical_state_id')}[$__range])) >= 5
and on (node_guid) ${switches}`;
  const degraded = `${perPort('port_link_degraded')} == 1`;
  const stuckInit = `${perPort('port_state_id')} == 2 and on ${port} ${perPort('port_physical_state_id')} == 5`;
  const labelledRates = (counters: readonly Counter[]) =>
    counters.map(([name]) => `label_replace(${rate(name)}, "counter", "${name}", "", "")`).join('\n  or ');
  /** The fraction of time a port had data and sent nothing: wait ticks per second times the node's tick (as infiniband:fabric_port_congestion:ratio5m). */
  const stalled = `clamp(max by ${port} (rate(${metric('port_transmit_wait_total')}[$__rate_interval]) * on (instance, job, node_guid) group_left max by (instance, job, node_guid) (${metric('node_xmit_wait_tick_seconds')})), 0, 1)`;
  const busier = `(${rate('transmit_data_bytes')} > ${rate('receive_data_bytes')} or ${rate('receive_data_bytes')})`;
  const switchUtilisation = `${busier} / ${perPort('port_rate_bytes_per_second')} and on (node_guid) ${switches}`;
  const caLinkRates = `(
    ${metric('port_rate_bytes_per_second')} and on ${port} ${metric('link_info', 'peer_type=~"(?i)ca"')}
    or ${metric('port_rate_bytes_per_second')} and on (node_guid) ${metric('node_info', 'node_type=~"(?i)ca"')}
  ) unless on ${port} ${metric('port_state_id')} != 4`;
  const broadcast = 'mgid=~"(?i)ff1.:401b:.*"';

  const glance: PanelSpec[] = [
    {
      type: 'stat',
      title: 'Switches',
      unit: 'short',
      w: 4,
      h: 4,
      description: 'Switches found by the fabric discovery (distinct node GUIDs, however many fabric-mode exporters report them).',
      targets: [instant(`count(count by (node_guid) (${switches}))`)],
    },
    {
      type: 'stat',
      title: 'HCAs',
      unit: 'short',
      w: 4,
      h: 4,
      description: 'Channel adapters (HCA nodes) found by the fabric discovery: the hosts cabled to the fabric.',
      targets: [instant(`count(count by (node_guid) (${metric('node_info', 'node_type="ca"')})) or vector(0)`)],
    },
    {
      type: 'stat',
      title: 'Inter-switch links',
      unit: 'short',
      w: 4,
      h: 4,
      description: 'Cables between two switches (counted once, although both ends report them).',
      targets: [
        instant(`count(max by ${port} (${metric('link_info', 'peer_type="switch"')}) and on (node_guid) ${switches}) / 2 or vector(0)`),
      ],
    },
    {
      type: 'stat',
      title: 'Unhealthy links',
      unit: 'short',
      w: 4,
      h: 4,
      description:
        'Switch ports down that were up in the time range, ports whose link is degraded, and ports stuck in INIT with LinkUp: the rows of the three tables below.',
      targets: [instant(`count((${downThatWasUp}) or (${degraded}) or (${stuckInit})) or vector(0)`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat',
      title: 'Subnet managers and standbys',
      unit: 'short',
      w: 4,
      h: 4,
      description:
        'Subnet managers in the SM records (saquery SMIR), master and standbys. Fewer than two means no standby: nothing takes over when the master fails.',
      targets: [instant(`count(count by (sm_guid) (${metric('subnet_manager_info')})) or vector(0)`)],
      defaults: {
        thresholds: [
          { color: 'red', value: null },
          { color: 'orange', value: 1 },
          { color: 'green', value: 2 },
        ],
      },
    },
    {
      type: 'stat',
      title: 'Address conflicts',
      unit: 'short',
      w: 4,
      h: 4,
      description: 'Duplicate GUIDs plus duplicate LIDs found by the discovery: 0 on a sane fabric.',
      targets: [instant(`(max(${metric('duplicate_guids')}) or vector(0)) + (max(${metric('duplicate_lids')}) or vector(0))`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'bargauge',
      title: 'Nodes by type',
      unit: 'short',
      w: 8,
      h: 6,
      description: 'Nodes of the fabric by type: switch, ca (HCAs, one per host adapter) and router.',
      targets: [instant(`count by (node_type) (count by (node_guid, node_type) (${metric('node_info')}))`, '{{node_type}}')],
    },
    {
      type: 'bargauge',
      title: 'Switch ports by what they are cabled to',
      unit: 'short',
      w: 8,
      h: 6,
      description:
        'Connected switch ports by the type of node at the other end: ca (host links) and switch (inter-switch links, counted at both ends).',
      targets: [instant(`count by (peer_type) (${linkedSwitchPorts})`, '{{peer_type}}')],
    },
    {
      type: 'bargauge',
      title: 'Switch ports by physical state',
      unit: 'short',
      w: 8,
      h: 6,
      description:
        'Switch ports by physical state: LinkUp is a cable with a live peer, Polling an empty port or a lost peer, Disabled switched off.',
      targets: [
        instant(countByStateName(PHYSICAL_STATES, `${perPort('port_physical_state_id')} and on (node_guid) ${switches}`), '{{state}}'),
      ],
    },
  ];

  const sm: PanelSpec[] = [
    {
      type: 'table',
      title: 'Subnet managers',
      unit: 'none',
      w: 24,
      h: 5,
      description:
        'Every subnet manager of the subnet as the SA lists it (saquery SMIR): GUID, LID, state (MASTER, STANDBY...) and priority (0-15, highest wins), and how many fabric-mode exporters see it. One row means no standby; two rows at the highest priority leave the election to the GUID.',
      targets: [tableRow(`count by (sm_guid, sm_lid, state, priority) (${metric('subnet_manager_info')})`)],
      transformations: mergedTable(),
      overrides: [
        { matcher: { id: 'byName', options: 'sm_guid' }, properties: [{ id: 'displayName', value: 'SM GUID' }] },
        { matcher: { id: 'byName', options: 'sm_lid' }, properties: [{ id: 'displayName', value: 'LID' }] },
        column('A', 'seen by exporters', [unitProp('short')]),
      ],
    },
  ];

  const unhealthy: PanelSpec[] = [
    linkTable(
      'Switch ports down that were up',
      'Switch ports in physical state Sleep, Polling, Disabled or PortConfigurationTraining that were LinkUp earlier in the time range (a cable pulled, a peer gone), with what they were cabled to. Ports that never had a cable are not listed.',
      downThatWasUp,
      column('A', 'physical state', [mappingsProp(PHYSICAL_MAPPINGS), colorText]),
    ),
    linkTable(
      'Degraded links',
      'Ports whose link trained below the width or lane speed both ends enable (or the configured expectation), both ends named, with active and expected width and lane rate. A link is degraded at both of its ends, so an inter-switch link shows twice.',
      degraded,
      column('A', 'degraded', [mappingsProp([valueMap({ 1: { text: 'yes', color: 'red', index: 1 } })]), colorText]),
      [
        tableRow(`${perPort('port_link_width_lanes')} and on ${port} (${degraded})`),
        tableRow(`${perPort('port_link_width_expected_lanes')} and on ${port} (${degraded})`),
        tableRow(`8 * ${perPort('port_lane_rate_bytes_per_second')} and on ${port} (${degraded})`),
        tableRow(`8 * ${perPort('port_lane_rate_expected_bytes_per_second')} and on ${port} (${degraded})`),
      ],
      [
        column('C', 'width (lanes)', [unitProp('none')]),
        column('D', 'expected width (lanes)', [unitProp('none')]),
        column('E', 'lane rate', [unitProp('bps')]),
        column('F', 'expected lane rate', [unitProp('bps')]),
      ],
    ),
    linkTable(
      'Ports stuck in INIT',
      'Fabric ports with a physical link (LinkUp) whose logical state is INIT: trained, but not configured by a subnet manager, so they carry no traffic.',
      stuckInit,
      column('A', 'state', [mappingsProp(STATE_MAPPINGS), colorText]),
    ),
  ];

  const errors: PanelSpec[] = [
    {
      type: 'table',
      title: 'Top ports by error rate',
      unit: 'cps',
      w: 12,
      h: 9,
      description: `The 15 highest per-second rates among the PMA error counters of the fabric ports, with the counter name: symbol errors and link error recoveries point at a cable or transceiver, receive errors and discards at packets lost. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(named(`topk(15,\n  ${labelledRates(FABRIC_ERRORS)}\n) > 0`, 'node_guid, port, counter'))],
      transformations: mergedTable(),
      overrides: [...names, column('A', 'rate', [unitProp('cps')])],
    },
    {
      type: 'table',
      title: 'Top ports by congestion',
      unit: 'percentunit',
      w: 12,
      h: 9,
      description: `The 15 fabric ports stalled the largest share of the time: PortXmitWait ticks per second times the switch's tick (infiniband_fabric_node_xmit_wait_tick_seconds). From 30 % for 15 minutes: InfiniBandFabricLinkCongested. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(named(`topk(15, ${stalled} > 0)`))],
      transformations: mergedTable(),
      overrides: [...names, column('A', 'stalled', [unitProp('percentunit')])],
    },
    {
      type: 'timeseries',
      title: 'Fabric port error rate, top 10 ports',
      unit: 'cps',
      w: 12,
      h: 8,
      description: `Sum of the PMA error counter rates per fabric port, for the 10 ports with the highest sum at each point in time. A fabric port's error counters are served once one of them is non-zero: ${EMPTY_WHEN_HEALTHY}`,
      targets: [series(`topk(10, sum by ${port} (\n  ${labelledRates(FABRIC_ERRORS)}\n))`, '{{node_guid}}/{{port}}')],
      defaults: { min: 0 },
    },
    {
      type: 'table',
      title: 'Saturated fabric port counters',
      unit: 'none',
      w: 12,
      h: 8,
      description: `PMA counters of fabric ports stuck at their maximum: new events on them are invisible until they are reset (perfquery -R). ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(named(`max by (node_guid, port, counter) (${metric('port_pma_saturated')} == 1)`, 'node_guid, port, counter'))],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: names,
    },
  ];

  // The recording rule keeps one series per port whatever instances read it (no job or instance
  // label): the ports of the selected exporters are those with a state in their data.
  const ber = `infiniband:fabric_port_symbol_ber:1h > 0 and on ${port} ${perPort('port_state_id')}`;
  const berThresholds = alertAbove(BIT_ERROR_RATE_THRESHOLD);
  const linkHealth: (PanelSpec | NoteSpec)[] = [
    {
      ...linkTable(
        'Worst links by bit error rate',
        `The 15 fabric ports with the highest symbol bit error rate over the last hour (recording rule infiniband:fabric_port_symbol_ber:1h: symbol errors over lanes x signalling rate x 3600 s), with the other end of each cable. Red above ${BIT_ERROR_RATE_THRESHOLD}, where InfiniBandFabricLinkBitErrorRateHigh fires. On HDR and NDR links these are errors forward error correction could not fix. ${NEEDS_HOUR}`,
        `topk(15, ${ber})`,
        column('A', 'bit error rate', [unitProp('sci'), colorText]),
      ),
      defaults: { thresholds: berThresholds },
      sortBy: { column: 'bit error rate', descending: true },
    },
    {
      type: 'timeseries',
      title: 'Bit error rate over time, worst 10 links',
      unit: 'sci',
      w: 16,
      h: 8,
      description: `Symbol bit error rate over the preceding hour of the 10 worst fabric ports at each point in time, on a logarithmic axis; the dashed line is the alert threshold (${BIT_ERROR_RATE_THRESHOLD}). A rate that climbs for days is a cable or transceiver going bad before the link flaps. ${NEEDS_HOUR} ${EMPTY_WHEN_HEALTHY}`,
      targets: [series(`topk(10, ${ber})`, '{{node_guid}}/{{port}}')],
      defaults: { thresholds: berThresholds, custom: { logScale: true, thresholdLines: true } },
    },
    {
      type: 'text',
      title: 'Cables, modules and PCIe links',
      w: 8,
      h: 8,
      content: [
        "The fabric mode reads every switch port's counters, hence the bit error rates beside this note.",
        '',
        `**Optical modules and cables** (temperature, receive and transmit power against the module's own thresholds) and **the PCIe link of each adapter** are read on each host by its own exporter (collectors \`module\` and \`pcie\`): open [InfiniBand / Host](/d/${HOST_UID}/infiniband-host) on that host, row **Link health**.`,
        '',
        'Their alerts: InfiniBandModuleTemperatureHigh, InfiniBandModuleOpticalPowerLow, InfiniBandPCIeLinkDegraded.',
      ].join('\n'),
    },
  ];

  const utilisation: PanelSpec[] = [
    {
      type: 'timeseries',
      title: 'Top 10 switch ports by utilisation',
      unit: 'percentunit',
      w: 12,
      h: 8,
      description:
        'The 10 switch ports closest to their link capacity: the busier direction divided by the nominal link rate (the usable data rate is 97 % of it from FDR on, 80 % up to QDR).',
      targets: [series(`topk(10, ${switchUtilisation})`, '{{node_guid}}/{{port}}')],
      defaults: { min: 0, max: 1 },
    },
    {
      type: 'timeseries',
      title: 'Switch port traffic',
      unit: 'Bps',
      w: 12,
      h: 8,
      description:
        'Bytes per second sent by all switch ports: every hop of a packet counts, so this is the load on the switches, not the traffic between hosts.',
      targets: [series(`sum(${rate('transmit_data_bytes')} and on (node_guid) ${switches})`, 'transmit')],
      defaults: { min: 0 },
    },
  ];

  const tierLegend = 'tier {{tier}} {{direction}}';
  const congestion: PanelSpec[] = [
    {
      type: 'timeseries',
      title: 'Mean stalled share per tier and direction',
      unit: 'percentunit',
      w: 12,
      h: 8,
      description:
        'The mean fraction of time the switch ports of each tier were stalled (data to send, nothing sent) between two ports cycles, over every shard: the sums over the port counts the exporters serve. Tier 1 is the switches with hosts, counting up; "down" sends toward the hosts, "up" away. A whole tier\'s uplinks rising together is oversubscription; one link alone is routing or placement.',
      targets: [
        series(
          `sum by (tier, direction) (${metric('congestion_ratio_sum')}) / sum by (tier, direction) (${metric('congestion_ports')})`,
          tierLegend,
        ),
      ],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries',
      title: 'Worst port per tier and direction',
      unit: 'percentunit',
      w: 12,
      h: 8,
      description:
        'The largest stalled fraction among the switch ports of each tier and direction between two ports cycles, the maximum over the shards. Above 0.3 a link is congested (InfiniBandFabricLinkCongested after 15 minutes).',
      targets: [series(`max by (tier, direction) (${metric('congestion_ratio_max')})`, tierLegend)],
      defaults: { min: 0, max: 1 },
    },
  ];

  const multicast: PanelSpec[] = [
    {
      type: 'table',
      title: 'IPoIB broadcast groups',
      unit: 'none',
      w: 16,
      h: 6,
      description:
        'The IPoIB broadcast group of each partition (MGID ff12:401b:<P_Key>::ffff:ffff) with its MTU, rate and members. opensm creates it at 10 Gb/s and MTU 2048 unless partitions.conf sets rate= and mtu=; every IPoIB broadcast and multicast packet moves at that rate.',
      targets: [
        tableRow(`max by (mgid, pkey) (${metric('multicast_group_mtu_bytes', broadcast)})`),
        tableRow(`8 * max by (mgid, pkey) (${metric('multicast_group_rate_bytes_per_second', broadcast)})`),
        tableRow(`max by (mgid, pkey) (${metric('multicast_group_members', broadcast)})`),
      ],
      transformations: mergedTable(),
      overrides: [
        column('A', 'MTU', [unitProp('bytes')]),
        column('B', 'rate', [unitProp('bps')]),
        column('C', 'members', [unitProp('short')]),
      ],
    },
    {
      type: 'stat',
      title: 'Slowest active HCA link',
      unit: 'bps',
      w: 8,
      h: 6,
      description: `The nominal rate of the slowest ACTIVE link to an HCA, read at the switch end of each host link. A broadcast group slower than this is suboptimal (InfiniBandMulticastGroupSuboptimal). HCA ports themselves count too with --fabric.hca-ports; the switch ends are enough.`,
      targets: [instant(`8 * min(${caLinkRates})`)],
    },
  ];

  const exporters: PanelSpec[] = [
    {
      type: 'table',
      title: 'Fabric collectors',
      unit: 'none',
      w: 24,
      h: 5,
      description:
        'Each fabric-mode exporter and collector (fabric_discovery, fabric_ports, fabric_sa): did its last cycle succeed, and how old is its data. A failed discovery keeps the last topology.',
      targets: [
        tableRow(`max by (job, instance, collector) (infiniband_exporter_collector_success{${sel}, collector=~"fabric_.*"})`),
        tableRow(
          `max by (job, instance, collector) (time() - infiniband_exporter_last_collection_timestamp_seconds{${sel}, collector=~"fabric_.*"})`,
        ),
      ],
      transformations: mergedTable(),
      overrides: [
        { matcher: { id: 'byName', options: 'job' }, properties: [hiddenProp] },
        column('A', 'last cycle', [
          mappingsProp([valueMap({ 0: { text: 'FAILED', color: 'red', index: 0 }, 1: { text: 'OK', color: 'green', index: 1 } })]),
          colorText,
        ]),
        column('B', 'data age', [unitProp('s')]),
      ],
    },
  ];

  // The cabling plan (--fabric.topology-file) and the rails: each cable not as planned, by what is
  // wrong with it, and each adapter on another rail's switch.
  const planned = (status: number, problem: string) =>
    `label_replace(max by (node_guid, port, peer_guid, peer_port) (${metric('planned_link_status')}) == ${status}, "problem", "${problem}", "", "")`;
  const notAsPlanned = [
    planned(1, 'no link'),
    planned(2, 'connected elsewhere'),
    planned(3, "below the plan's width or speed"),
    `label_replace(max by (node_guid, port, peer_guid, peer_port, rail, peer_rail) (${metric('rail_violation')}), "problem", "on another rail's switch", "", "")`,
  ].join('\n  or ');
  const cabling: PanelSpec[] = [
    {
      type: 'stat',
      title: 'Cables not as planned',
      unit: 'short',
      w: 6,
      h: 5,
      description: `Cables of the plan without a link, connected elsewhere or below the plan's width or speed, plus adapters cabled to another rail's switch. \`infiniband-exporter check --collector.fabric --fabric.topology-file FILE\` and /fabric say which cable to move where. ${NEEDS_PLAN}`,
      targets: [instant(`count(${notAsPlanned}) or vector(0)`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat',
      title: 'Plan nodes missing',
      unit: 'short',
      w: 6,
      h: 5,
      description: `Nodes the cabling plan names that the fabric does not have: powered off, not installed yet, or every cable unplugged. ${NEEDS_PLAN}`,
      targets: [instant(`max(${metric('plan_nodes_missing')})`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'table',
      title: 'Cables not as the plan has them',
      unit: 'none',
      w: 12,
      h: 8,
      description: `Each planned cable that is not as the plan has it (its two ends as the plan writes them, and what is wrong), and each host adapter on a switch of another rail. ${EMPTY_WHEN_HEALTHY} ${NEEDS_PLAN}`,
      targets: [tableRow(named(notAsPlanned, 'node_guid, port, peer_guid, peer_port, problem'))],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: names,
    },
  ];

  return buildDashboard({
    uid: FABRIC_UID,
    title: 'InfiniBand / Fabric',
    description: `The whole InfiniBand subnet from the exporter's fabric mode (--collector.fabric on one or two hosts): nodes and links, subnet managers, unhealthy links with both ends named, errors and congestion, the links' bit error rates, switch port utilisation, IPoIB broadcast groups. ${NEEDS_HCA_PORTS} See dashboards/README.md.`,
    variables: [
      datasourceVariable(),
      jobVariable(),
      labelVariable({
        name: 'instance',
        label: 'Fabric exporter',
        metric: 'infiniband_fabric_node_info{job=~"$job"}',
        labelName: 'instance',
        multi: true,
        allValue: '.*',
      }),
    ],
    rows: [
      { title: 'Fabric at a glance', panels: glance },
      { title: 'Subnet managers', panels: sm },
      { title: 'Unhealthy links', panels: unhealthy },
      { title: 'Cabling', panels: cabling },
      { title: 'Errors and congestion', panels: errors },
      { title: 'Congestion per tier', panels: congestion },
      { title: 'Link health', panels: linkHealth },
      { title: 'Switch port utilisation', panels: utilisation },
      { title: 'IPoIB broadcast groups', panels: multicast },
      { title: 'Fabric exporters', panels: exporters },
    ],
  });
}
