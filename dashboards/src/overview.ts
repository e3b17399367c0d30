// "InfiniBand / Hosts overview": the fleet of hosts running the exporter (port states, degraded
// links, subnet managers, IPoIB, firmware, errors, traffic, the exporters themselves).
import type * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import {
  EMPTY_WHEN_HEALTHY,
  ERROR_COUNTERS,
  NEEDS_DIAG,
  OVERVIEW_UID,
  PACKET_ERRORS,
  PHYSICAL_ERRORS,
  PHYSICAL_MAPPINGS,
  PHYSICAL_STATES,
  PORT_STATES,
  STATE_MAPPINGS,
  YES_NO_MAPPINGS,
  alertAbove,
  buildDashboard,
  colorText,
  column,
  countByStateName,
  datasourceVariable,
  hostColumns,
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
  type PanelSpec,
} from './panels.js';

/** `rate()` of each counter, tagged with a `counter` label so they can share one vector. */
export function labelledRates(sel: string, counters: readonly Counter[], prefix: string): string {
  return counters
    .map(([name]) => `label_replace(rate(infiniband_port_${prefix}${name}_total{${sel}}[$__rate_interval]), "counter", "${name}", "", "")`)
    .join('\n  or ');
}

export function overview(): dashboard.Dashboard {
  const sel = 'job=~"$job", instance=~"$instance"';
  const port = '(job, instance, device, port)';
  const notActive = `infiniband_port_state_id{${sel}} != 4`;
  const degraded = `infiniband_port_link_degraded{${sel}} == 1`;
  const topN = 15;

  const glance: PanelSpec[] = [
    {
      type: 'stat',
      title: 'Exporters up',
      unit: 'short',
      w: 4,
      h: 4,
      description: 'Scrape targets of the selected jobs that answered the last scrape (`up`).',
      targets: [instant(`sum(up{${sel}})`)],
    },
    {
      type: 'stat',
      title: 'Exporters down',
      unit: 'short',
      w: 4,
      h: 4,
      description: 'Scrape targets of the selected jobs whose last scrape failed (`up == 0`): their ports are invisible here.',
      targets: [instant(`count(up{${sel}} == 0) or vector(0)`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat',
      title: 'Ports',
      unit: 'short',
      w: 4,
      h: 4,
      description: 'HCA ports reported by the exporters (InfiniBand, RoCE, Omni-Path and iWARP ports alike).',
      targets: [instant(`count(infiniband_port_state_id{${sel}})`)],
    },
    {
      type: 'stat',
      title: 'Not ACTIVE',
      unit: 'short',
      w: 4,
      h: 4,
      description:
        'Ports whose logical state is anything but ACTIVE (DOWN, INIT, ARMED...). The table "Ports not ACTIVE" below says which.',
      targets: [instant(`count(${notActive}) or vector(0)`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat',
      title: 'Links degraded',
      unit: 'short',
      w: 4,
      h: 4,
      description:
        'Ports whose link trained below its expected width or lane rate (`infiniband_port_link_degraded`). Needs an expectation: from the exporter config file, or from smpquery when the diag collector runs.',
      targets: [instant(`count(max by ${port} (${degraded})) or vector(0)`)],
      defaults: { thresholds: alertAbove(1, 'orange') },
    },
    {
      type: 'stat',
      title: 'Counters saturated',
      unit: 'short',
      w: 4,
      h: 4,
      description:
        'PMA counters stuck at their maximum (`infiniband_port_pma_saturated`): new errors on them are invisible until they are reset with `perfquery -R`.',
      targets: [instant(`count(infiniband_port_pma_saturated{${sel}} == 1) or vector(0)`)],
      defaults: { thresholds: alertAbove(1, 'orange') },
    },
    {
      type: 'bargauge',
      title: 'Ports by logical state',
      unit: 'short',
      w: 8,
      h: 7,
      description:
        'Number of ports in each logical state. ACTIVE is normal; INIT means the link is up but no subnet manager configured the port; DOWN means no physical link.',
      targets: [instant(countByStateName(PORT_STATES, `infiniband_port_state_id{${sel}}`), '{{state}}')],
    },
    {
      type: 'bargauge',
      title: 'Ports by physical state',
      unit: 'short',
      w: 8,
      h: 7,
      description:
        'Number of ports in each physical state. LinkUp is normal; Polling means no cable or no peer; Disabled means switched off.',
      targets: [instant(countByStateName(PHYSICAL_STATES, `infiniband_port_physical_state_id{${sel}}`), '{{state}}')],
    },
    {
      type: 'timeseries',
      title: 'Ports not ACTIVE over time',
      unit: 'short',
      w: 8,
      h: 7,
      description: `Number of ports in each logical state other than ACTIVE, over time: a step up is a port that went down or lost its subnet manager. ${EMPTY_WHEN_HEALTHY}`,
      targets: [series(countByStateName(PORT_STATES, `infiniband_port_state_id{${sel}} != 4`), '{{state}}')],
      defaults: { min: 0, custom: { drawStyle: 'line', lineInterpolation: 'stepAfter', fillOpacity: 10 } },
    },
  ];

  const attention: PanelSpec[] = [
    {
      type: 'table',
      title: 'Ports not ACTIVE',
      unit: 'none',
      w: 24,
      h: 8,
      description: `Every port whose logical state is not ACTIVE, with its physical state, since when it has not been ACTIVE (the last time it was seen ACTIVE in the dashboard's time range, else the start of the range or of the data) and the state changes in the range. ${EMPTY_WHEN_HEALTHY}`,
      targets: [
        tableRow(`max by ${port} (${notActive})`),
        tableRow(`max by ${port} (infiniband_port_physical_state_id{${sel}} and on ${port} (${notActive}))`),
        tableRow(`1000 * max by ${port} (
  (
    max_over_time(timestamp(infiniband_port_state_id{${sel}} == 4)[$__range:])
    or
    min_over_time(timestamp(infiniband_port_state_id{${sel}} != 4)[$__range:])
    or
    timestamp(infiniband_port_state_id{${sel}} != 4)
  )
  and on ${port} (${notActive})
)`),
        tableRow(`max by ${port} (changes(infiniband_port_state_id{${sel}}[$__range]) and on ${port} (${notActive}))`),
      ],
      transformations: mergedTable(),
      overrides: [
        ...hostColumns(true),
        column('A', 'state', [mappingsProp(STATE_MAPPINGS), colorText]),
        column('B', 'physical state', [mappingsProp(PHYSICAL_MAPPINGS), colorText]),
        column('C', 'not ACTIVE since', [unitProp('dateTimeAsIso')]),
        column('D', 'state changes in range', [unitProp('short')]),
      ],
    },
    {
      type: 'table',
      title: 'Degraded links',
      unit: 'none',
      w: 16,
      h: 8,
      description: `Links that trained below what they should run at: active against expected width (lanes) and lane rate, and which of the two is degraded. The expectation comes from the exporter config file, else from smpquery (diag collector). A lost lane or a slower speed usually means a damaged cable, transceiver or port. ${EMPTY_WHEN_HEALTHY}`,
      targets: [
        tableRow(`max by ${port} (infiniband_port_link_width_lanes{${sel}} and on ${port} (${degraded}))`),
        tableRow(`max by ${port} (infiniband_port_link_width_expected_lanes{${sel}} and on ${port} (${degraded}))`),
        tableRow(`8 * max by ${port} (infiniband_port_lane_rate_bytes_per_second{${sel}} and on ${port} (${degraded}))`),
        tableRow(`8 * max by ${port} (infiniband_port_lane_rate_expected_bytes_per_second{${sel}} and on ${port} (${degraded}))`),
        tableRow(`max by ${port} (infiniband_port_link_degraded{${sel}, reason="width"} and on ${port} (${degraded}))`),
        tableRow(`max by ${port} (infiniband_port_link_degraded{${sel}, reason="speed"} and on ${port} (${degraded}))`),
      ],
      transformations: mergedTable(),
      overrides: [
        ...hostColumns(true),
        column('A', 'width (lanes)', [unitProp('none')]),
        column('B', 'expected width (lanes)', [unitProp('none')]),
        column('C', 'lane rate', [unitProp('bps')]),
        column('D', 'expected lane rate', [unitProp('bps')]),
        column('E', 'width degraded', [mappingsProp(YES_NO_MAPPINGS), colorText]),
        column('F', 'speed degraded', [mappingsProp(YES_NO_MAPPINGS), colorText]),
      ],
    },
    {
      type: 'table',
      title: 'Saturated PMA counters',
      unit: 'none',
      w: 8,
      h: 8,
      description: `PMA counters sitting at their maximum: they no longer count, so new errors are invisible. Reset them with \`perfquery -R\` after noting the values. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(`max by (job, instance, device, port, counter) (infiniband_port_pma_saturated{${sel}} == 1)`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: hostColumns(true),
    },
  ];

  const smSel = sel;
  const sm: PanelSpec[] = [
    {
      type: 'stat',
      title: 'Ports reaching a subnet manager',
      unit: 'short',
      w: 5,
      h: 4,
      description: `Local IB ports from which sminfo reached a subnet manager in its last run. ${NEEDS_DIAG}`,
      targets: [instant(`sum(infiniband_subnet_manager_reachable{${smSel}})`)],
    },
    {
      type: 'stat',
      title: 'Ports with no subnet manager',
      unit: 'short',
      w: 5,
      h: 4,
      description: `Local IB ports with a link from which sminfo could not reach any subnet manager: new ports will stay INIT and LID routes will not be repaired. ${NEEDS_DIAG}`,
      targets: [instant(`count(infiniband_subnet_manager_reachable{${smSel}}) - sum(infiniband_subnet_manager_reachable{${smSel}})`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat',
      title: 'Master subnet manager changes',
      unit: 'short',
      w: 5,
      h: 4,
      description: `Changes of the master subnet manager (GUID or LID) seen by the ports in the time range, summed over ports: a failover, or a subnet manager restarting. ${NEEDS_DIAG}`,
      targets: [
        instant(`sum(
  count by ${port} (
    count by (job, instance, device, port, sm_guid, sm_lid) (max_over_time(infiniband_subnet_manager_info{${smSel}, state="MASTER"}[$__range]))
  ) - 1
)`),
      ],
      defaults: { thresholds: alertAbove(1, 'orange') },
    },
    {
      type: 'table',
      title: 'Ports that cannot reach a subnet manager',
      unit: 'none',
      w: 9,
      h: 4,
      description: `Local IB ports where sminfo failed in its last run. ${EMPTY_WHEN_HEALTHY} ${NEEDS_DIAG}`,
      targets: [tableRow(`max by ${port} (infiniband_subnet_manager_reachable{${smSel}} == 0)`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: hostColumns(true),
    },
    {
      type: 'table',
      title: 'Subnet managers',
      unit: 'none',
      w: 14,
      h: 7,
      description: `Each subnet manager the ports see, as sminfo reports it: GUID, LID and state, how many ports and hosts see it, and for the master its priority and activity count (which grows while it is alive and sweeping). A STANDBY row is an SM running on one of the hosts. Two MASTER rows on one fabric mean a split subnet. ${NEEDS_DIAG}`,
      targets: [
        tableRow(`count by (sm_guid, sm_lid, state) (infiniband_subnet_manager_info{${smSel}})`),
        tableRow(
          `count by (sm_guid, sm_lid, state) (count by (job, instance, sm_guid, sm_lid, state) (infiniband_subnet_manager_info{${smSel}}))`,
        ),
        tableRow(
          `max by (sm_guid, sm_lid, state) (infiniband_subnet_manager_priority{${smSel}} * on ${port} group_left (sm_guid, sm_lid, state) infiniband_subnet_manager_info{${smSel}, state="MASTER"})`,
        ),
        tableRow(
          `max by (sm_guid, sm_lid, state) (infiniband_subnet_manager_activity_total{${smSel}} * on ${port} group_left (sm_guid, sm_lid, state) infiniband_subnet_manager_info{${smSel}, state="MASTER"})`,
        ),
      ],
      transformations: mergedTable(),
      overrides: [
        column('A', 'ports', [unitProp('short')]),
        column('B', 'hosts', [unitProp('short')]),
        column('C', 'priority', [unitProp('none')]),
        column('D', 'activity count', [unitProp('none')]),
      ],
    },
    {
      type: 'timeseries',
      title: 'Ports per master subnet manager',
      unit: 'short',
      w: 10,
      h: 7,
      description: `How many ports follow each master subnet manager (by GUID and LID) over time: a failover shows as one line ending while another starts. ${NEEDS_DIAG}`,
      targets: [
        series(`count by (sm_guid, sm_lid) (infiniband_subnet_manager_info{${smSel}, state="MASTER"})`, '{{sm_guid}} (LID {{sm_lid}})'),
      ],
      defaults: { min: 0, custom: { drawStyle: 'line', lineInterpolation: 'stepAfter' } },
    },
  ];

  const ipoib: PanelSpec[] = [
    {
      type: 'piechart',
      title: 'IPoIB interfaces by mode',
      unit: 'short',
      w: 6,
      h: 7,
      description:
        'IPoIB interfaces in connected and datagram mode. Connected mode allows MTUs up to 65520 and is faster for TCP; datagram mode limits the MTU to the IB MTU minus 4 bytes.',
      targets: [instant(`count by (mode) (infiniband_ipoib_info{${sel}})`, '{{mode}}')],
    },
    {
      type: 'piechart',
      title: 'IPoIB interfaces by MTU',
      unit: 'short',
      w: 6,
      h: 7,
      description: 'IPoIB interfaces per MTU. 2044 is the old default and slow; hosts of one IPoIB network should agree.',
      targets: [instant(`count_values("mtu", infiniband_ipoib_mtu_bytes{${sel}})`, 'MTU {{mtu}}')],
    },
    {
      type: 'table',
      title: 'IPoIB settings per P_Key',
      unit: 'short',
      w: 12,
      h: 7,
      description:
        'Interfaces per P_Key (one IPoIB network), mode and MTU. More than one row for a P_Key means the hosts of that network disagree on mode or MTU, which breaks or slows traffic between them.',
      targets: [
        tableRow(`count by (pkey, mode, mtu) (
  infiniband_ipoib_info{${sel}}
  * on (job, instance, interface) group_left (mtu)
  count_values by (job, instance, interface) ("mtu", infiniband_ipoib_mtu_bytes{${sel}})
)`),
      ],
      transformations: mergedTable(),
      overrides: [column('A', 'interfaces', [unitProp('short')])],
    },
    {
      type: 'table',
      title: 'IPoIB interfaces without carrier',
      unit: 'none',
      w: 12,
      h: 6,
      description: `IPoIB interfaces with no carrier: the port under them is not ACTIVE, the broadcast group was not joined, or the interface is administratively down. ${EMPTY_WHEN_HEALTHY}`,
      targets: [
        tableRow(`max by (job, instance, interface, device, port, mode, pkey) (
  infiniband_ipoib_info{${sel}}
  and on (job, instance, interface) (infiniband_ipoib_carrier{${sel}} == 0)
)`),
      ],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: hostColumns(true),
    },
  ];

  const firmware: PanelSpec[] = [
    {
      type: 'table',
      title: 'Firmware versions per HCA type',
      unit: 'short',
      w: 16,
      h: 6,
      description:
        'Devices per HCA type (PCI device id such as MT4129), board and firmware version. Several firmware versions for one HCA type across the fleet is a drift to fix during the next maintenance.',
      targets: [tableRow(`count by (hca_type, board_id, firmware_version) (infiniband_device_info{${sel}})`)],
      transformations: mergedTable(),
      overrides: [column('A', 'devices', [unitProp('short')])],
    },
    {
      type: 'stat',
      title: 'HCA types with mixed firmware',
      unit: 'short',
      w: 8,
      h: 6,
      description: 'HCA types (with a known type) whose devices run more than one firmware version across the selected hosts.',
      targets: [
        instant(
          `count(count by (hca_type) (count by (hca_type, firmware_version) (infiniband_device_info{${sel}, hca_type!=""})) > 1) or vector(0)`,
        ),
      ],
      defaults: { thresholds: alertAbove(1, 'orange') },
    },
  ];

  const errors: PanelSpec[] = [
    {
      type: 'table',
      title: 'Top ports by local error rate',
      unit: 'cps',
      w: 12,
      h: 9,
      description: `The ${topN} highest per-second rates among the PMA error counters of the local HCA ports, with the counter name (symbol errors and link error recoveries point at cables; receive errors and discards at packets lost; transmit wait at congestion).`,
      targets: [tableRow(`topk(${topN},\n  ${labelledRates(sel, ERROR_COUNTERS, '')}\n)`)],
      transformations: mergedTable(),
      overrides: [...hostColumns(true), column('A', 'rate', [unitProp('cps')])],
    },
    {
      type: 'table',
      title: 'Top ports by peer error rate',
      unit: 'cps',
      w: 12,
      h: 9,
      description: `The same for the switch port at the other end of each cable (read with perfquery from the host): errors seen by the switch on the link to this host. ${NEEDS_DIAG}`,
      targets: [tableRow(`topk(${topN},\n  ${labelledRates(sel, ERROR_COUNTERS, 'peer_')}\n)`)],
      transformations: mergedTable(),
      overrides: [...hostColumns(true), column('A', 'rate', [unitProp('cps')])],
    },
    {
      type: 'timeseries',
      title: 'Local error rate, top 10 ports',
      unit: 'cps',
      w: 12,
      h: 8,
      description:
        'Sum of the PMA error counter rates per port (transmit wait excluded), for the 10 ports with the highest sum at each point in time.',
      targets: [
        series(
          `topk(10, sum by ${port} (\n  ${labelledRates(sel, [...PHYSICAL_ERRORS, ...PACKET_ERRORS], '')}\n))`,
          '{{instance}} {{device}}/{{port}}',
        ),
      ],
      defaults: { min: 0 },
    },
    {
      type: 'table',
      title: 'Error counters with a non-zero value',
      unit: 'short',
      w: 12,
      h: 8,
      description: `Current value of every non-zero local PMA error counter but transmit wait (accumulated since the counter was last reset or the host booted), highest first: old damage that the rate panels do not show. ${EMPTY_WHEN_HEALTHY}`,
      targets: [
        tableRow(
          `topk(50,\n  ${[...PHYSICAL_ERRORS, ...PACKET_ERRORS].map(([name]) => `label_replace(infiniband_port_${name}_total{${sel}} > 0, "counter", "${name}", "", "")`).join('\n  or ')}\n)`,
        ),
      ],
      transformations: mergedTable(),
      overrides: [...hostColumns(true), column('A', 'value', [unitProp('short')])],
    },
  ];

  const rx = `rate(infiniband_port_receive_data_bytes_total{${sel}}[$__rate_interval])`;
  const tx = `rate(infiniband_port_transmit_data_bytes_total{${sel}}[$__rate_interval])`;
  const traffic: PanelSpec[] = [
    {
      type: 'timeseries',
      title: 'Fabric throughput',
      unit: 'Bps',
      w: 8,
      h: 8,
      description:
        'Data sent and received by all selected HCA ports, in bytes per second (PMA data counters, already converted from 4-byte words).',
      targets: [series(`sum(${tx})`, 'transmit'), series(`sum(${rx})`, 'receive')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries',
      title: 'Top 10 ports by throughput',
      unit: 'Bps',
      w: 8,
      h: 8,
      description: 'The 10 ports moving the most data (transmit plus receive), in bytes per second.',
      targets: [series(`topk(10, ${tx} + ${rx})`, '{{instance}} {{device}}/{{port}}')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries',
      title: 'Top 10 ports by utilisation',
      unit: 'percentunit',
      w: 8,
      h: 8,
      description:
        'The 10 ports closest to their link capacity: throughput of the busier direction divided by the usable data rate of the link (after line encoding). Near 100 % the link is the bottleneck.',
      targets: [
        series(
          `topk(10, (${tx} > ${rx} or ${rx}) / infiniband_port_data_rate_bytes_per_second{${sel}})`,
          '{{instance}} {{device}}/{{port}}',
        ),
      ],
      defaults: { min: 0, max: 1 },
    },
  ];

  const exporter: PanelSpec[] = [
    {
      type: 'table',
      title: 'Exporters',
      unit: 'none',
      w: 12,
      h: 8,
      description:
        'Each exporter: scrape status, how many collectors failed their last cycle, the age of its oldest collector data, and read errors in the time range. Data older than a few collection intervals means the collection loop is stuck.',
      targets: [
        tableRow(`max by (job, instance) (up{${sel}})`),
        tableRow(`sum by (job, instance) (1 - infiniband_exporter_collector_success{${sel}})`),
        tableRow(`max by (job, instance) (time() - infiniband_exporter_last_collection_timestamp_seconds{${sel}})`),
        tableRow(`sum by (job, instance) (increase(infiniband_exporter_read_errors_total{${sel}}[$__range]))`),
      ],
      transformations: mergedTable(),
      overrides: [
        ...hostColumns(false),
        column('A', 'up', [
          mappingsProp([valueMap({ 0: { text: 'down', color: 'red', index: 0 }, 1: { text: 'up', color: 'green', index: 1 } })]),
          colorText,
        ]),
        column('B', 'failing collectors', [unitProp('short')]),
        column('C', 'oldest data', [unitProp('s')]),
        column('D', 'read errors in range', [unitProp('short')]),
      ],
    },
    {
      type: 'timeseries',
      title: 'Age of collected data',
      unit: 's',
      w: 12,
      h: 8,
      description:
        'Seconds since each collector of each exporter last finished a cycle. It should stay below the collection interval (sysfs, IPoIB) or the diag interval (perfquery, sminfo, smpquery).',
      targets: [series(`time() - infiniband_exporter_last_collection_timestamp_seconds{${sel}}`, '{{instance}} {{collector}}')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries',
      title: 'Failing collectors',
      unit: 'short',
      w: 8,
      h: 7,
      description: 'Number of exporters whose last cycle of each collector failed or was cut off at its deadline.',
      targets: [series(`sum by (collector) (1 - infiniband_exporter_collector_success{${sel}})`, '{{collector}}')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries',
      title: 'Read errors',
      unit: 'cps',
      w: 8,
      h: 7,
      description: 'Files, devices or commands per second that could not be read or parsed, per collector (details in the exporter log).',
      targets: [series(`sum by (collector) (rate(infiniband_exporter_read_errors_total{${sel}}[$__rate_interval]))`, '{{collector}}')],
      defaults: { min: 0 },
    },
    {
      type: 'table',
      title: 'Exporter versions',
      unit: 'short',
      w: 8,
      h: 7,
      description: 'Exporters per version and revision.',
      targets: [tableRow(`count by (version, revision, nodejs_version) (infiniband_exporter_build_info{${sel}})`)],
      transformations: mergedTable(),
      overrides: [column('A', 'exporters', [unitProp('short')])],
    },
  ];

  return buildDashboard({
    uid: OVERVIEW_UID,
    title: 'InfiniBand / Hosts overview',
    description:
      'Fleet view of the InfiniBand exporters: port states, degraded links, subnet managers, IPoIB settings, firmware, errors, throughput and the exporters themselves. Panels marked "Needs the diag collector" stay empty when infiniband-diags is not installed on the hosts; see dashboards/README.md.',
    variables: [
      datasourceVariable(),
      jobVariable(),
      labelVariable({
        name: 'instance',
        label: 'Host',
        metric: 'infiniband_exporter_build_info{job=~"$job"}',
        labelName: 'instance',
        multi: true,
        allValue: '.*',
      }),
    ],
    rows: [
      { title: 'Fabric at a glance', panels: glance },
      { title: 'Ports needing attention', panels: attention },
      { title: 'Subnet manager', panels: sm },
      { title: 'IPoIB', panels: ipoib },
      { title: 'Firmware', panels: firmware },
      { title: 'Errors', panels: errors },
      { title: 'Traffic', panels: traffic },
      { title: 'Exporters', panels: exporter },
    ],
  });
}
