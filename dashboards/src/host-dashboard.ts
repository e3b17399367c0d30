// "InfiniBand / Host": one host, its devices and ports in detail.
import type * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { BIT_ERROR_RATE_THRESHOLD } from '../../src/model/bit-error-rate.js';
import {
  CONGESTION,
  EMPTY_WHEN_HEALTHY,
  ERROR_COUNTERS,
  HOST_UID,
  NEEDS_DIAG,
  NEEDS_EXPECTATION,
  NEEDS_HOUR,
  NEEDS_MODULE,
  NEEDS_PCIE,
  PACKET_ERRORS,
  PHYSICAL_ERRORS,
  PHYSICAL_MAPPINGS,
  STATE_MAPPINGS,
  alertAbove,
  belowAxis,
  buildDashboard,
  colorText,
  column,
  dashedQuery,
  datasourceVariable,
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
  type Override,
  type PanelSpec,
} from './panels.js';

export function host(): dashboard.Dashboard {
  const hostSel = 'job=~"$job", instance=~"$instance"';
  const sel = `${hostSel}, device=~"$device", port=~"$port"`;
  const port = '(job, instance, device, port)';
  const legend = '{{device}}/{{port}}';
  const rateOf = (name: string) => `rate(infiniband_port_${name}_total{${sel}}[$__rate_interval])`;
  /** Draw the receive direction (query B) below the axis. */
  const receiveBelow = [belowAxis('B')];

  const identity: PanelSpec[] = [
    {
      type: 'table',
      title: 'Devices',
      unit: 'none',
      w: 24,
      h: 5,
      description:
        'HCA devices of the host: type (node type, HCA type), firmware, board, GUIDs and node description. Empty cells are files the driver does not provide.',
      targets: [tableRow(`infiniband_device_info{${hostSel}, device=~"$device"}`)],
      transformations: mergedTable(['Time', '__name__', 'Value', 'job', 'instance']),
    },
    {
      type: 'table',
      title: 'Ports',
      unit: 'none',
      w: 24,
      h: 7,
      description:
        'Each port: link layer (InfiniBand, or Ethernet for RoCE and iWARP), port GUID, active width and speed, logical and physical state, LID, the subnet manager LID it last heard from (0 = never configured) and whether a subnet manager runs on it.',
      targets: [
        tableRow(`max by (job, instance, device, port, link_layer, port_guid, width, speed) (infiniband_port_info{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_state_id{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_physical_state_id{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_lid{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_sm_lid{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_is_sm{${sel}})`),
      ],
      transformations: mergedTable(['Time', '__name__', 'Value #A', 'job', 'instance']),
      overrides: [
        column('B', 'state', [mappingsProp(STATE_MAPPINGS), colorText]),
        column('C', 'physical state', [mappingsProp(PHYSICAL_MAPPINGS), colorText]),
        column('D', 'LID', [unitProp('none')]),
        column('E', 'SM LID', [unitProp('none')]),
        column('F', 'runs an SM', [mappingsProp([valueMap({ 0: { text: 'no', index: 0 }, 1: { text: 'yes', index: 1 } })])]),
      ],
    },
  ];

  const state: PanelSpec[] = [
    {
      type: 'state-timeline',
      title: 'Logical state',
      unit: 'none',
      w: 12,
      h: 8,
      description:
        'Logical state of each port over time. ACTIVE is normal; INIT = link up but not configured by a subnet manager; DOWN = no physical link.',
      targets: [series(`infiniband_port_state_id{${sel}}`, legend)],
      defaults: { mappings: STATE_MAPPINGS },
    },
    {
      type: 'state-timeline',
      title: 'Physical state',
      unit: 'none',
      w: 12,
      h: 8,
      description:
        'Physical state of each port over time. LinkUp is normal; Polling = no cable or no peer; LinkErrorRecovery = the link is retraining.',
      targets: [series(`infiniband_port_physical_state_id{${sel}}`, legend)],
      defaults: { mappings: PHYSICAL_MAPPINGS },
    },
    {
      type: 'timeseries',
      title: 'Link flaps',
      unit: 'short',
      w: 12,
      h: 7,
      description:
        'Logical state changes the exporter sampled (it samples more often than Prometheus scrapes) and link-downed events counted by the port (PMA LinkDownedCounter), per rate interval.',
      targets: [
        series(`increase(infiniband_port_state_changes_total{${sel}}[$__rate_interval])`, `${legend} state changes`),
        series(`increase(infiniband_port_link_downed_total{${sel}}[$__rate_interval])`, `${legend} link downed`),
      ],
      defaults: { min: 0 },
    },
    {
      type: 'stat',
      title: 'Link degraded',
      unit: 'none',
      w: 12,
      h: 7,
      description: `Is the link below its expected width or lane rate (one value per port and reason). ${NEEDS_EXPECTATION}`,
      targets: [instant(`infiniband_port_link_degraded{${sel}}`, `${legend} {{reason}}`)],
      defaults: {
        mappings: [valueMap({ 0: { text: 'OK', color: 'green', index: 0 }, 1: { text: 'DEGRADED', color: 'red', index: 1 } })],
        thresholds: alertAbove(1),
      },
    },
  ];

  const rate: PanelSpec[] = [
    {
      type: 'timeseries',
      title: 'Width against expected',
      unit: 'none',
      w: 8,
      h: 8,
      description: 'Active link width in lanes and the width the link should run at (dashed). A drop from 4 to 1 is a lost lane.',
      targets: [
        series(`infiniband_port_link_width_lanes{${sel}}`, `${legend} active`),
        series(`infiniband_port_link_width_expected_lanes{${sel}}`, `${legend} expected`),
      ],
      defaults: { min: 0, decimals: 0, custom: { lineInterpolation: 'stepAfter' } },
      overrides: [dashedQuery('B')],
    },
    {
      type: 'timeseries',
      title: 'Lane rate against expected',
      unit: 'bps',
      w: 8,
      h: 8,
      description:
        'Nominal per-lane signalling rate at the active speed (HDR 50, NDR 100 Gb/s...) and the rate the link should run at (dashed).',
      targets: [
        series(`8 * infiniband_port_lane_rate_bytes_per_second{${sel}}`, `${legend} active`),
        series(`8 * infiniband_port_lane_rate_expected_bytes_per_second{${sel}}`, `${legend} expected`),
      ],
      defaults: { min: 0, custom: { lineInterpolation: 'stepAfter' } },
      overrides: [dashedQuery('B')],
    },
    {
      type: 'timeseries',
      title: 'Link rate',
      unit: 'bps',
      w: 8,
      h: 8,
      description:
        'Nominal link rate (width x lane rate, as the kernel reports it) and the usable data rate after line encoding, in bits per second.',
      targets: [
        series(`8 * infiniband_port_rate_bytes_per_second{${sel}}`, `${legend} nominal`),
        series(`8 * infiniband_port_data_rate_bytes_per_second{${sel}}`, `${legend} data`),
      ],
      defaults: { min: 0, custom: { lineInterpolation: 'stepAfter' } },
    },
  ];

  const traffic: PanelSpec[] = [
    {
      type: 'timeseries',
      title: 'Throughput',
      unit: 'Bps',
      w: 12,
      h: 8,
      description: 'Bytes per second sent (above the axis) and received (below) by each port, from the PMA data counters.',
      targets: [series(rateOf('transmit_data_bytes'), `${legend} transmit`), series(rateOf('receive_data_bytes'), `${legend} receive`)],
      overrides: receiveBelow,
    },
    {
      type: 'timeseries',
      title: 'Utilisation of the data rate',
      unit: 'percentunit',
      w: 12,
      h: 8,
      description: 'Throughput of each direction divided by the usable data rate of the link: near 100 % the link is saturated.',
      targets: [
        series(`${rateOf('transmit_data_bytes')} / infiniband_port_data_rate_bytes_per_second{${sel}}`, `${legend} transmit`),
        series(`${rateOf('receive_data_bytes')} / infiniband_port_data_rate_bytes_per_second{${sel}}`, `${legend} receive`),
      ],
      defaults: { min: 0, max: 1 },
    },
    {
      type: 'timeseries',
      title: 'Packet rates',
      unit: 'pps',
      w: 12,
      h: 8,
      description:
        'Packets per second sent (above the axis) and received (below) by each port. A port that is ACTIVE but receives nothing for a long time passes no traffic.',
      targets: [series(rateOf('transmit_packets'), `${legend} transmit`), series(rateOf('receive_packets'), `${legend} receive`)],
      overrides: receiveBelow,
    },
    {
      type: 'timeseries',
      title: 'Unicast and multicast packet rates',
      unit: 'pps',
      w: 12,
      h: 8,
      description:
        'Unicast and multicast packets per second (extended PMA counters only; older HCAs do not have them). Heavy multicast on an IPoIB network is broadcast traffic such as ARP.',
      targets: [
        series(rateOf('unicast_transmit_packets'), `${legend} unicast transmit`),
        series(rateOf('unicast_receive_packets'), `${legend} unicast receive`),
        series(rateOf('multicast_transmit_packets'), `${legend} multicast transmit`),
        series(rateOf('multicast_receive_packets'), `${legend} multicast receive`),
      ],
    },
  ];

  const errorPanels = (prefix: string, side: string): PanelSpec[] => {
    const peer = prefix === 'peer_';
    const suffix = peer ? ` ${NEEDS_DIAG}` : '';
    const who = peer ? 'the switch port at the other end of the cable (peer)' : 'the local HCA port';
    const targets = (counters: readonly Counter[]) =>
      counters.map(([name, text]) => series(`rate(infiniband_port_${prefix}${name}_total{${sel}}[$__rate_interval])`, `${legend} ${text}`));
    return [
      {
        type: 'timeseries',
        title: `${side} physical link errors`,
        unit: 'cps',
        w: 8,
        h: 8,
        description: `Per-second rates of the physical-layer PMA counters of ${who}: symbol errors, link error recoveries, link downed, local link integrity errors, excessive buffer overruns. A steady rise means a bad cable, transceiver or port.${suffix}`,
        targets: targets(PHYSICAL_ERRORS),
        defaults: { min: 0 },
      },
      {
        type: 'timeseries',
        title: `${side} packet errors and discards`,
        unit: 'cps',
        w: 8,
        h: 8,
        description: `Per-second rates of the receive and transmit error PMA counters of ${who}: packets received with errors, marked bad elsewhere, not relayable, rejected by partition/constraint checks, discarded on transmit, dropped on VL15.${suffix}`,
        targets: targets(PACKET_ERRORS),
        defaults: { min: 0 },
      },
      {
        type: 'timeseries',
        title: `${side} transmit wait`,
        unit: 'cps',
        w: 8,
        h: 8,
        description: `PortXmitWait of ${who}: ticks per second during which data was ready to send but no flow-control credits were available. A large share of time means congestion.${suffix}`,
        targets: targets(CONGESTION),
        defaults: { min: 0 },
      },
    ];
  };

  const errors: PanelSpec[] = [
    ...errorPanels('', 'Local'),
    ...errorPanels('peer_', 'Peer'),
    {
      type: 'table',
      title: 'Error counter values',
      unit: 'short',
      w: 16,
      h: 7,
      description:
        'Current value of every local PMA error counter, accumulated since the last reset or boot: old damage the rate panels do not show. Counters the port does not have are blank.',
      targets: ERROR_COUNTERS.map(([name]) => tableRow(`max by ${port} (infiniband_port_${name}_total{${sel}})`)),
      transformations: mergedTable(['Time', '__name__', 'job', 'instance']),
      overrides: ERROR_COUNTERS.map(([, text], i) => column(String.fromCharCode(65 + i), text, [unitProp('short')])),
    },
    {
      type: 'table',
      title: 'Saturated counters',
      unit: 'none',
      w: 8,
      h: 7,
      description: `PMA counters of this host stuck at their maximum: they hide every later error until reset with \`perfquery -R\`. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(`max by (device, port, counter) (infiniband_port_pma_saturated{${sel}} == 1)`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
    },
  ];

  const deviceSel = `${hostSel}, device=~"$device"`;
  const perDevice = '(job, instance, device)';
  const yesNo = (yes: string, no = 'no') => [
    mappingsProp([valueMap({ 0: { text: no, color: 'green', index: 0 }, 1: { text: yes, color: 'red', index: 1 } })]),
    colorText,
  ];
  const berThresholds = alertAbove(BIT_ERROR_RATE_THRESHOLD);
  /** The module's own threshold for `measure` on one side, as its alert judges it: the warning level, else the alarm level. */
  const moduleThreshold = (measure: string, side: 'high' | 'low') =>
    `max by ${port} (infiniband_port_module_threshold{${sel}, measure="${measure}", level="${side}_warning"})\nor max by ${port} (infiniband_port_module_threshold{${sel}, measure="${measure}", level="${side}_alarm"})`;
  /** A module's measurement (`metric`, per lane or not) with its own threshold for `measure` dashed. */
  const moduleAgainstThreshold = (
    title: string,
    unit: string,
    metric: string,
    measure: string,
    side: 'high' | 'low',
    what: string,
  ): PanelSpec => ({
    type: 'timeseries',
    title,
    unit,
    w: 8,
    h: 8,
    description: `${what} The dashed line is the module's own ${side} threshold from its EEPROM (the warning level, else the alarm level), as the alert judges it. ${NEEDS_MODULE}`,
    targets: [
      series(`${metric}{${sel}}`, metric.endsWith('_dbm') ? `${legend} lane {{lane}}` : legend),
      series(moduleThreshold(measure, side), `${legend} ${side} threshold`),
    ],
    overrides: [dashedQuery('B')],
  });
  const moduleColumns: Override[] = [
    { matcher: { id: 'byName', options: 'part_number' }, properties: [{ id: 'displayName', value: 'part number' }] },
    { matcher: { id: 'byName', options: 'cable_type' }, properties: [{ id: 'displayName', value: 'type' }] },
    { matcher: { id: 'byName', options: 'length_meters' }, properties: [{ id: 'displayName', value: 'length (m)' }] },
  ];

  const linkHealth: PanelSpec[] = [
    {
      type: 'table',
      title: 'Worst links by bit error rate',
      unit: 'sci',
      w: 10,
      h: 8,
      description: `Symbol bit error rate of each link of this host over the last hour, worst first (recording rule infiniband:port_symbol_ber:1h: symbol errors over lanes x signalling rate x 3600 s). end "local": what this port received; end "peer": what the switch port at the other end of the cable received (needs the diag collector). Red above ${BIT_ERROR_RATE_THRESHOLD}, where InfiniBandLinkBitErrorRateHigh fires; 0 is an hour without an error. ${NEEDS_HOUR}`,
      targets: [tableRow(`max by (job, instance, device, port, end) (infiniband:port_symbol_ber:1h{${sel}})`)],
      transformations: mergedTable(['Time', '__name__', 'job', 'instance']),
      overrides: [column('A', 'bit error rate', [colorText])],
      defaults: { thresholds: berThresholds },
      sortBy: { column: 'bit error rate', descending: true },
    },
    {
      type: 'timeseries',
      title: 'Bit error rate over time',
      unit: 'sci',
      w: 14,
      h: 8,
      description: `Symbol bit error rate of each link over the preceding hour, on a logarithmic axis; the dashed line is the alert threshold (${BIT_ERROR_RATE_THRESHOLD}). A rate climbing over days is a cable or transceiver going bad before the link flaps. An hour without an error (0) has no place on the axis. ${NEEDS_HOUR}`,
      targets: [series(`infiniband:port_symbol_ber:1h{${sel}}`, `${legend} {{end}}`)],
      defaults: { thresholds: berThresholds, custom: { logScale: true, thresholdLines: true } },
    },
    {
      type: 'table',
      title: 'PCIe links',
      unit: 'none',
      w: 24,
      h: 6,
      description: `The PCIe link each adapter trained at against what it can do (lanes and GT/s per lane: 8 Gen3, 16 Gen4, 32 Gen5), the bandwidth it leaves after line coding, whether it is degraded by width or speed (InfiniBandPCIeLinkDegraded: a riser, the wrong slot, BIOS bifurcation), and its AER error totals since boot. ${NEEDS_PCIE}`,
      targets: [
        tableRow(`max by ${perDevice} (infiniband_device_pcie_link_width_lanes{${deviceSel}})`),
        tableRow(`max by ${perDevice} (infiniband_device_pcie_link_width_max_lanes{${deviceSel}})`),
        tableRow(`max by ${perDevice} (infiniband_device_pcie_link_transfer_rate{${deviceSel}})`),
        tableRow(`max by ${perDevice} (infiniband_device_pcie_link_max_transfer_rate{${deviceSel}})`),
        tableRow(`max by ${perDevice} (infiniband_device_pcie_bandwidth_bytes_per_second{${deviceSel}})`),
        tableRow(`max by ${perDevice} (infiniband_device_pcie_link_degraded{${deviceSel}, reason="width"})`),
        tableRow(`max by ${perDevice} (infiniband_device_pcie_link_degraded{${deviceSel}, reason="speed"})`),
        tableRow(`sum by ${perDevice} (infiniband_device_pcie_aer_errors_total{${deviceSel}, severity="correctable"})`),
        tableRow(`sum by ${perDevice} (infiniband_device_pcie_aer_errors_total{${deviceSel}, severity=~"nonfatal|fatal"})`),
      ],
      transformations: mergedTable(['Time', '__name__', 'job', 'instance']),
      overrides: [
        column('A', 'width', [unitProp('prefix:x')]),
        column('B', 'of width', [unitProp('prefix:x')]),
        column('C', 'rate', [unitProp('suffix: GT/s')]),
        column('D', 'of rate', [unitProp('suffix: GT/s')]),
        column('E', 'bandwidth', [unitProp('Bps')]),
        column('F', 'width degraded', yesNo('DEGRADED')),
        column('G', 'speed degraded', yesNo('DEGRADED')),
        column('H', 'AER correctable', [unitProp('short')]),
        column('I', 'AER uncorrectable', [unitProp('short'), colorText]),
      ],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'table',
      title: 'Ports limited by PCIe',
      unit: 'none',
      w: 12,
      h: 7,
      description: `Each active port with the data rate it carries and the PCIe bandwidth of its adapter: limited when the adapter's PCIe link moves less than the data rates of its active ports add up to (a degraded link, or a card whose ports together exceed its slot). The port says ACTIVE at full rate; the host cannot feed it. ${NEEDS_PCIE}`,
      targets: [
        tableRow(`max by ${port} (infiniband_port_pcie_limited{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_data_rate_bytes_per_second{${sel}} and on ${port} infiniband_port_pcie_limited{${sel}})`),
        tableRow(
          `max by ${port} (0 * infiniband_port_pcie_limited{${sel}} + on (job, instance, device) group_left infiniband_device_pcie_bandwidth_bytes_per_second{${deviceSel}})`,
        ),
      ],
      transformations: mergedTable(['Time', '__name__', 'job', 'instance']),
      overrides: [
        column('A', 'limited by PCIe', yesNo('LIMITED')),
        column('B', 'port data rate', [unitProp('Bps')]),
        column('C', 'adapter PCIe bandwidth', [unitProp('Bps')]),
      ],
    },
    {
      type: 'timeseries',
      title: 'PCIe AER error rate',
      unit: 'cps',
      w: 12,
      h: 7,
      description: `PCIe errors per second each adapter reported by Advanced Error Reporting, by severity. Correctable errors that keep coming are a marginal slot, riser or card; a non-fatal or fatal one lost a transaction (check dmesg). The totals since boot are in the PCIe links table. ${NEEDS_PCIE}`,
      targets: [series(`rate(infiniband_device_pcie_aer_errors_total{${deviceSel}}[$__rate_interval])`, '{{device}} {{severity}}')],
      defaults: { min: 0 },
    },
    {
      type: 'table',
      title: 'Cables and modules',
      unit: 'none',
      w: 24,
      h: 6,
      description: `The cable or transceiver in each port, from its EEPROM (vendor, part number, serial: what a replacement order needs; type and length), with the temperature and supply voltage it reports (copper cables have no sensor) and the post-FEC bit error rate the adapter's PHY measured since its counters were cleared. An empty cage has no row. ${NEEDS_MODULE}`,
      targets: [
        tableRow(
          `max by (job, instance, device, port, vendor, part_number, serial, cable_type, length_meters) (infiniband_port_module_info{${sel}})`,
        ),
        tableRow(`max by ${port} (infiniband_port_module_temperature_celsius{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_module_voltage_volts{${sel}})`),
        tableRow(`max by ${port} (infiniband_port_phy_ber{${sel}, kind="effective"})`),
      ],
      transformations: mergedTable(['Time', '__name__', 'Value #A', 'job', 'instance']),
      overrides: [
        ...moduleColumns,
        column('B', 'temperature', [unitProp('celsius')]),
        column('C', 'voltage', [unitProp('volt')]),
        column('D', 'PHY effective BER', [unitProp('sci')]),
      ],
    },
    moduleAgainstThreshold(
      'Module temperature against threshold',
      'celsius',
      'infiniband_port_module_temperature_celsius',
      'temperature',
      'high',
      'Temperature each module reports. At its own threshold a module drifts out of spec (InfiniBandModuleTemperatureHigh): all modules hot is the cooling, one hot is the module.',
    ),
    moduleAgainstThreshold(
      'Module receive power against threshold',
      'dBm',
      'infiniband_port_module_rx_power_dbm',
      'rx_power',
      'low',
      'Optical power each lane of each module receives (-40 dBm: no light). At its own low threshold (InfiniBandModuleOpticalPowerLow): a dirty connector or fibre, or a failing transmitter at the other end. Copper cables have none.',
    ),
    moduleAgainstThreshold(
      'Module transmit power against threshold',
      'dBm',
      'infiniband_port_module_tx_power_dbm',
      'tx_power',
      'low',
      'Optical power each lane of each module transmits. A lane sinking to its own low threshold is a laser wearing out: the other end will soon receive too little. Copper cables have none.',
    ),
  ];

  const smAndIpoib: PanelSpec[] = [
    {
      type: 'table',
      title: 'Subnet manager seen from this host',
      unit: 'none',
      w: 12,
      h: 6,
      description: `Per local IB port, as sminfo reports it: is a subnet manager reachable, and the master's GUID, LID, priority and activity count. An SM running on this host in standby shows in the overview's "Subnet managers" table. ${NEEDS_DIAG}`,
      targets: [
        tableRow(`max by ${port} (infiniband_subnet_manager_reachable{${sel}})`),
        tableRow(`max by (job, instance, device, port, sm_guid, sm_lid, state) (infiniband_subnet_manager_info{${sel}, state="MASTER"})`),
        tableRow(`max by ${port} (infiniband_subnet_manager_priority{${sel}})`),
        tableRow(`max by ${port} (infiniband_subnet_manager_activity_total{${sel}})`),
      ],
      transformations: mergedTable(['Time', '__name__', 'Value #B', 'job', 'instance']),
      overrides: [
        column('A', 'reachable', [
          mappingsProp([valueMap({ 0: { text: 'no', color: 'red', index: 0 }, 1: { text: 'yes', color: 'green', index: 1 } })]),
          colorText,
        ]),
        column('C', 'priority', [unitProp('none')]),
        column('D', 'activity count', [unitProp('none')]),
      ],
    },
    {
      type: 'table',
      title: 'IPoIB interfaces',
      unit: 'none',
      w: 12,
      h: 6,
      description:
        'IPoIB interfaces carried by the selected ports: mode, P_Key, parent (P_Key child interfaces), MTU and carrier. Datagram mode or an MTU of 2044 cost throughput; hosts of one P_Key should agree on both.',
      targets: [
        tableRow(`max by (job, instance, interface, device, port, mode, pkey, parent) (infiniband_ipoib_info{${sel}})`),
        tableRow(
          `max by (job, instance, interface) (infiniband_ipoib_mtu_bytes{${hostSel}} and on (job, instance, interface) infiniband_ipoib_info{${sel}})`,
        ),
        tableRow(
          `max by (job, instance, interface) (infiniband_ipoib_carrier{${hostSel}} and on (job, instance, interface) infiniband_ipoib_info{${sel}})`,
        ),
      ],
      transformations: mergedTable(['Time', '__name__', 'Value #A', 'job', 'instance']),
      overrides: [
        column('B', 'MTU', [unitProp('bytes')]),
        column('C', 'carrier', [
          mappingsProp([valueMap({ 0: { text: 'no carrier', color: 'red', index: 0 }, 1: { text: 'up', color: 'green', index: 1 } })]),
          colorText,
        ]),
      ],
    },
  ];

  const hw: PanelSpec[] = [
    {
      type: 'timeseries',
      title: 'Driver hw_counters rates',
      unit: 'cps',
      w: 16,
      h: 9,
      description:
        'Per-second rates of the driver hw_counters of the selected ports (choose them with the hw_counter variable): e.g. mlx5 out_of_buffer (receive queue drops), local_ack_timeout_err and packet_seq_err (RDMA retransmissions), np_cnp_sent / rp_cnp_handled (RoCE congestion control).',
      targets: [series(`rate(infiniband_port_hw_stat_total{${sel}, counter=~"$hw_counter"}[$__rate_interval])`, `${legend} {{counter}}`)],
    },
    {
      type: 'table',
      title: 'Driver hw_counters values',
      unit: 'short',
      w: 8,
      h: 9,
      description: 'Current value of each selected driver hw_counter, since the driver loaded.',
      targets: [tableRow(`max by (device, port, counter) (infiniband_port_hw_stat_total{${sel}, counter=~"$hw_counter"})`)],
      transformations: mergedTable(),
      overrides: [column('A', 'value', [unitProp('short')])],
    },
  ];

  const exporterPanels: PanelSpec[] = [
    {
      type: 'stat',
      title: 'Collectors',
      unit: 'none',
      w: 6,
      h: 5,
      description: 'Whether each collector of this exporter succeeded in its last cycle.',
      targets: [instant(`infiniband_exporter_collector_success{${hostSel}}`, '{{collector}}')],
      defaults: {
        mappings: [valueMap({ 0: { text: 'FAILING', color: 'red', index: 0 }, 1: { text: 'OK', color: 'green', index: 1 } })],
        thresholds: [
          { color: 'red', value: null },
          { color: 'green', value: 1 },
        ],
      },
    },
    {
      type: 'timeseries',
      title: 'Collection age and duration',
      unit: 's',
      w: 6,
      h: 5,
      description: 'Seconds since each collector last finished a cycle, and how long its last cycle took.',
      targets: [
        series(`time() - infiniband_exporter_last_collection_timestamp_seconds{${hostSel}}`, '{{collector}} age'),
        series(`infiniband_exporter_collector_duration_seconds{${hostSel}}`, '{{collector}} duration'),
      ],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries',
      title: 'Read errors',
      unit: 'cps',
      w: 6,
      h: 5,
      description: 'Files, devices or commands per second that could not be read or parsed, per collector (details in the exporter log).',
      targets: [series(`rate(infiniband_exporter_read_errors_total{${hostSel}}[$__rate_interval])`, '{{collector}}')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries',
      title: 'Command timeouts',
      unit: 'cps',
      w: 6,
      h: 5,
      description: `infiniband-diags commands per second killed at --diag.timeout, per command: a fabric that does not answer MADs, or a timeout too short for it. ${NEEDS_DIAG}`,
      targets: [series(`rate(infiniband_exporter_command_timeouts_total{${hostSel}}[$__rate_interval])`, '{{command}}')],
      defaults: { min: 0 },
    },
  ];

  return buildDashboard({
    uid: HOST_UID,
    title: 'InfiniBand / Host',
    description:
      'One InfiniBand host: identity, port state history, link width and speed against expected, throughput, packet rates, every PMA error counter (local and peer), saturated counters, link health (bit error rate, PCIe link, cables and optical modules), subnet manager, IPoIB settings, driver hw_counters and the exporter. Panels marked "Needs the diag collector" stay empty when infiniband-diags is not installed; see dashboards/README.md.',
    variables: [
      datasourceVariable(),
      jobVariable(),
      labelVariable({
        name: 'instance',
        label: 'Host',
        metric: 'infiniband_exporter_build_info{job=~"$job"}',
        labelName: 'instance',
        multi: false,
      }),
      labelVariable({
        name: 'device',
        label: 'Device',
        metric: 'infiniband_port_info{job=~"$job", instance=~"$instance"}',
        labelName: 'device',
        multi: true,
        allValue: '.*',
      }),
      labelVariable({
        name: 'port',
        label: 'Port',
        metric: 'infiniband_port_info{job=~"$job", instance=~"$instance", device=~"$device"}',
        labelName: 'port',
        multi: true,
        allValue: '.*',
      }),
      labelVariable({
        name: 'hw_counter',
        label: 'hw_counter',
        metric: 'infiniband_port_hw_stat_total{job=~"$job", instance=~"$instance", device=~"$device", port=~"$port"}',
        labelName: 'counter',
        multi: true,
        allValue: '.*',
      }),
    ],
    rows: [
      { title: 'Identity', panels: identity },
      { title: 'Port state', panels: state },
      { title: 'Link width and speed', panels: rate },
      { title: 'Traffic', panels: traffic },
      { title: 'Errors', panels: errors },
      { title: 'Link health', panels: linkHealth },
      { title: 'Subnet manager and IPoIB', panels: smAndIpoib },
      { title: 'Driver hw_counters', panels: hw },
      { title: 'Exporter', panels: exporterPanels },
    ],
  });
}
