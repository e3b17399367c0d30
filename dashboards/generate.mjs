#!/usr/bin/env node
// @ts-check
// Source of the two Grafana dashboards. The JSON files next to this script are generated from it:
//   node dashboards/generate.mjs           write infiniband-overview.json and infiniband-host.json
//   node dashboards/generate.mjs --check   exit 1 when the committed JSON differs from this source
// Writing the dashboards as code keeps the conventions uniform (datasource variable on every panel
// and target, units, descriptions, ids, grid layout); test/dashboards/ checks the result, including
// every query against a real Prometheus.
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const SCHEMA_VERSION = 42;
const TAGS = ['infiniband', 'infiniband-exporter'];
export const OVERVIEW_UID = 'infiniband-overview';
export const HOST_UID = 'infiniband-host';
/** Every panel and target queries the data source chosen in the `datasource` variable. */
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

/** Phrases the tests and the README rely on to know which panels may show nothing. */
export const NEEDS_DIAG = 'Needs the diag collector (infiniband-diags on the host): empty without it.';
export const EMPTY_WHEN_HEALTHY = 'Empty on a healthy fabric.';
export const NEEDS_EXPECTATION = 'Needs an expectation for the port (exporter config file, or smpquery with the diag collector): empty without one.';

/** PMA error counters, exported locally and for the link peer (DESIGN.md metric contract). */
const PHYSICAL_ERRORS = [
  ['symbol_errors', 'symbol errors'],
  ['link_error_recoveries', 'link error recoveries'],
  ['link_downed', 'link downed'],
  ['local_link_integrity_errors', 'local link integrity errors'],
  ['excessive_buffer_overrun_errors', 'excessive buffer overruns'],
];
const PACKET_ERRORS = [
  ['receive_errors', 'receive errors'],
  ['receive_remote_physical_errors', 'receive remote physical errors'],
  ['receive_switch_relay_errors', 'receive switch relay errors'],
  ['receive_constraint_errors', 'receive constraint errors'],
  ['transmit_discards', 'transmit discards'],
  ['transmit_constraint_errors', 'transmit constraint errors'],
  ['vl15_dropped', 'VL15 dropped'],
];
const CONGESTION = [['transmit_wait', 'transmit wait']];
const ERROR_COUNTERS = [...PHYSICAL_ERRORS, ...PACKET_ERRORS, ...CONGESTION];

const PORT_STATES = ['NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER'];
const PHYSICAL_STATES = ['', 'Sleep', 'Polling', 'Disabled', 'PortConfigurationTraining', 'LinkUp', 'LinkErrorRecovery', 'PhyTest'];
const STATE_COLORS = { NOP: 'purple', DOWN: 'red', INIT: 'orange', ARMED: 'yellow', ACTIVE: 'green', ACTIVE_DEFER: 'blue' };
const PHYSICAL_COLORS = { Sleep: 'purple', Polling: 'red', Disabled: 'red', PortConfigurationTraining: 'yellow', LinkUp: 'green', LinkErrorRecovery: 'orange', PhyTest: 'blue' };

// ---------------------------------------------------------------------------------------------
// Building blocks

/**
 * Ports counted by state name from an `_id` gauge: count_values groups the ports by id, then one
 * label_replace per known id sets `state` (an id without a name shows as "unknown").
 * @param {readonly string[]} names state names indexed by id ('' for none)
 * @param {string} expr
 */
const countByStateName = (names, expr) =>
  names.reduce(
    (inner, name, id) => (name ? `label_replace(${inner}, "state", "${name}", "state_id", "${id}")` : inner),
    `label_replace(count_values("state_id", ${expr}), "state", "unknown", "", "")`,
  );

/**
 * @typedef {{expr: string, legend?: string, instant?: boolean, table?: boolean}} TargetSpec
 * @typedef {{type: string, title: string, description: string, unit: string, w: number, h: number,
 *   targets: TargetSpec[], options?: object, defaults?: object, overrides?: object[],
 *   transformations?: object[]}} PanelSpec
 */

/** @param {string} expr @param {string} [legend] @returns {TargetSpec} */
const series = (expr, legend) => ({ expr, legend });
/** One row per series at the end of the range (tables, stats, bar gauges). @param {string} expr @param {string} [legend] */
const instant = (expr, legend) => ({ expr, legend, instant: true });
/** @param {string} expr */
const tableRow = (expr) => ({ expr, instant: true, table: true });

/** @param {Record<string, string>} colors @param {string[]} names */
function mappingsFor(names, colors) {
  /** @type {Record<string, {text: string, color?: string, index: number}>} */
  const options = {};
  names.forEach((name, value) => {
    if (name) options[String(value)] = { text: name, color: colors[name], index: value };
  });
  return [{ type: 'value', options }];
}
const STATE_MAPPINGS = mappingsFor(PORT_STATES, STATE_COLORS);
const PHYSICAL_MAPPINGS = mappingsFor(PHYSICAL_STATES, PHYSICAL_COLORS);
const YES_NO_MAPPINGS = [{ type: 'value', options: { 0: { text: 'no', color: 'green', index: 0 }, 1: { text: 'yes', color: 'red', index: 1 } } }];

/** Thresholds: green, then the given colour from `value` on. */
function alertAbove(value, color = 'red') {
  return { mode: 'absolute', steps: [{ color: 'green', value: null }, { color, value }] };
}
const NEUTRAL = { mode: 'absolute', steps: [{ color: 'blue', value: null }] };

/** Override of one table column produced by query `refId` (merged tables name them "Value #A"). */
function column(refId, displayName, properties = []) {
  return {
    matcher: { id: 'byName', options: `Value #${refId}` },
    properties: [{ id: 'displayName', value: displayName }, ...properties],
  };
}
const unitProp = (unit) => ({ id: 'unit', value: unit });
const mappingsProp = (mappings) => ({ id: 'mappings', value: mappings });
const colorText = { id: 'custom.cellOptions', value: { type: 'color-text' } };

/** Merge the instant queries of a table into one row per key and hide the bookkeeping columns. */
function mergedTable(hidden = ['Time', '__name__']) {
  const excludeByName = Object.fromEntries(hidden.map((name) => [name, true]));
  return [{ id: 'merge', options: {} }, { id: 'organize', options: { excludeByName, renameByName: {} } }];
}

/** @param {PanelSpec} spec @param {number} id @param {{x: number, y: number}} at */
function buildPanel(spec, id, at) {
  const targets = spec.targets.map((t, i) => {
    const refId = String.fromCharCode(65 + i);
    return {
      datasource: DATASOURCE,
      refId,
      expr: t.expr,
      legendFormat: t.legend ?? '__auto',
      range: !t.instant,
      instant: Boolean(t.instant),
      format: t.table ? 'table' : 'time_series',
      editorMode: 'code',
    };
  });
  const defaults = {
    unit: spec.unit,
    color: { mode: spec.type === 'timeseries' ? 'palette-classic' : 'thresholds' },
    thresholds: NEUTRAL,
    mappings: [],
    ...(spec.defaults ?? {}),
  };
  return {
    id,
    type: spec.type,
    title: spec.title,
    description: spec.description,
    datasource: DATASOURCE,
    gridPos: { h: spec.h, w: spec.w, x: at.x, y: at.y },
    fieldConfig: { defaults, overrides: singleValueColumn(spec.overrides ?? [], targets.length) },
    options: spec.options ?? defaultOptions(spec.type),
    targets,
    ...(spec.transformations ? { transformations: spec.transformations } : {}),
  };
}

/**
 * A table with one query names its value column "Value", with several "Value #<refId>": point the
 * column overrides written for "Value #A" at the right name.
 */
function singleValueColumn(overrides, targetCount) {
  if (targetCount !== 1) return overrides;
  return overrides.map((o) => (o.matcher.id === 'byName' && o.matcher.options === 'Value #A' ? { ...o, matcher: { id: 'byName', options: 'Value' } } : o));
}

function defaultOptions(type) {
  switch (type) {
    case 'timeseries':
      return { legend: { displayMode: 'table', placement: 'bottom', showLegend: true, calcs: ['lastNotNull', 'max'] }, tooltip: { mode: 'multi', sort: 'desc' } };
    case 'stat':
      return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, colorMode: 'background', graphMode: 'none', textMode: 'auto', justifyMode: 'auto', orientation: 'auto' };
    case 'bargauge':
      return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, orientation: 'horizontal', displayMode: 'basic', showUnfilled: true };
    case 'piechart':
      return { reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false }, pieType: 'donut', legend: { displayMode: 'table', placement: 'right', showLegend: true, values: ['value'] }, tooltip: { mode: 'single' } };
    case 'table':
      return { showHeader: true, cellHeight: 'sm', footer: { show: false } };
    case 'state-timeline':
      return { showValue: 'auto', mergeValues: true, alignValue: 'left', rowHeight: 0.9, legend: { showLegend: true, displayMode: 'list', placement: 'bottom' } };
    default:
      return {};
  }
}

/**
 * Lay rows out top to bottom; inside a row, panels flow left to right and wrap at 24 columns.
 * @param {{title: string, panels: PanelSpec[]}[]} rows
 */
function layout(rows) {
  const panels = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    panels.push({ id: id++, type: 'row', title: row.title, collapsed: false, gridPos: { h: 1, w: 24, x: 0, y }, panels: [] });
    y += 1;
    let x = 0;
    let rowHeight = 0;
    for (const spec of row.panels) {
      if (x + spec.w > 24) {
        y += rowHeight;
        x = 0;
        rowHeight = 0;
      }
      panels.push(buildPanel(spec, id++, { x, y }));
      x += spec.w;
      rowHeight = Math.max(rowHeight, spec.h);
    }
    y += rowHeight;
  }
  return panels;
}

const datasourceVariable = {
  name: 'datasource',
  label: 'Data source',
  type: 'datasource',
  query: 'prometheus',
  current: {},
  hide: 0,
  refresh: 1,
  regex: '',
  options: [],
};

/**
 * A query variable on label values (refreshed when the time range changes).
 * @param {{name: string, label: string, metric: string, labelName: string, multi: boolean, allValue?: string}} v
 */
function labelVariable(v) {
  return {
    name: v.name,
    label: v.label,
    type: 'query',
    datasource: DATASOURCE,
    query: `label_values(${v.metric}, ${v.labelName})`,
    definition: `label_values(${v.metric}, ${v.labelName})`,
    refresh: 2,
    sort: 1,
    multi: v.multi,
    includeAll: v.multi,
    ...(v.allValue ? { allValue: v.allValue } : {}),
    current: {},
    hide: 0,
    regex: '',
    options: [],
  };
}

// The `job` variable lists jobs that scrape this exporter; "All" expands to those jobs only (no
// allValue), so `up{job=~"$job"}` never counts other exporters' targets.
const jobVariable = labelVariable({ name: 'job', label: 'Job', metric: 'infiniband_exporter_build_info', labelName: 'job', multi: true });

/** @param {{uid: string, title: string, description: string, variables: object[], rows: {title: string, panels: PanelSpec[]}[], links: object[]}} d */
function dashboard(d) {
  return {
    id: null,
    uid: d.uid,
    title: d.title,
    description: d.description,
    tags: TAGS,
    timezone: 'browser',
    editable: true,
    graphTooltip: 1,
    fiscalYearStartMonth: 0,
    liveNow: false,
    refresh: '1m',
    time: { from: 'now-6h', to: 'now' },
    timepicker: {},
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: { type: 'grafana', uid: '-- Grafana --' },
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
      ],
    },
    links: d.links,
    templating: { list: d.variables },
    panels: layout(d.rows),
    schemaVersion: SCHEMA_VERSION,
    version: 1,
    weekStart: '',
  };
}

/** Links in the dashboard header to the other InfiniBand dashboards, keeping time and variables. */
const dashboardLinks = [
  { title: 'InfiniBand dashboards', type: 'dashboards', tags: ['infiniband'], asDropdown: false, includeVars: true, keepTime: true, targetBlank: false, icon: 'external link', tooltip: '', url: '' },
];

/** Data link from a table row to the host dashboard for that host (and port, when known). */
function hostLink(withPort) {
  const port = withPort ? '&var-device=${__data.fields.device}&var-port=${__data.fields.port}' : '';
  return {
    title: 'Open the host dashboard',
    url: `/d/${HOST_UID}/infiniband-host?\${datasource:queryparam}&var-job=\${__data.fields.job}&var-instance=\${__data.fields.instance}${port}&\${__url_time_range}`,
  };
}
/** Overrides that hide job and turn the instance column into a link to the host dashboard. */
function hostColumns(withPort) {
  return [
    { matcher: { id: 'byName', options: 'instance' }, properties: [{ id: 'displayName', value: 'host' }, { id: 'links', value: [hostLink(withPort)] }] },
    { matcher: { id: 'byName', options: 'job' }, properties: [{ id: 'custom.hidden', value: true }] },
  ];
}

/** `rate()` of each counter, tagged with a `counter` label so they can share one vector. */
function labelledRates(sel, counters, prefix) {
  return counters
    .map(([name]) => `label_replace(rate(infiniband_port_${prefix}${name}_total{${sel}}[$__rate_interval]), "counter", "${name}", "", "")`)
    .join('\n  or ');
}

// ---------------------------------------------------------------------------------------------
// Fleet overview

function overview() {
  const sel = 'job=~"$job", instance=~"$instance"';
  const port = '(job, instance, device, port)';
  const notActive = `infiniband_port_state_id{${sel}} != 4`;
  const degraded = `infiniband_port_link_degraded{${sel}} == 1`;
  const topN = 15;

  const glance = [
    {
      type: 'stat', title: 'Exporters up', unit: 'short', w: 4, h: 4,
      description: 'Scrape targets of the selected jobs that answered the last scrape (`up`).',
      targets: [instant(`sum(up{${sel}})`)],
    },
    {
      type: 'stat', title: 'Exporters down', unit: 'short', w: 4, h: 4,
      description: 'Scrape targets of the selected jobs whose last scrape failed (`up == 0`): their ports are invisible here.',
      targets: [instant(`count(up{${sel}} == 0) or vector(0)`)], defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat', title: 'Ports', unit: 'short', w: 4, h: 4,
      description: 'HCA ports reported by the exporters (InfiniBand, RoCE, Omni-Path and iWARP ports alike).',
      targets: [instant(`count(infiniband_port_state_id{${sel}})`)],
    },
    {
      type: 'stat', title: 'Not ACTIVE', unit: 'short', w: 4, h: 4,
      description: 'Ports whose logical state is anything but ACTIVE (DOWN, INIT, ARMED...). The table "Ports not ACTIVE" below says which.',
      targets: [instant(`count(${notActive}) or vector(0)`)], defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat', title: 'Links degraded', unit: 'short', w: 4, h: 4,
      description: 'Ports whose link trained below its expected width or lane rate (`infiniband_port_link_degraded`). Needs an expectation: from the exporter config file, or from smpquery when the diag collector runs.',
      targets: [instant(`count(max by ${port} (${degraded})) or vector(0)`)], defaults: { thresholds: alertAbove(1, 'orange') },
    },
    {
      type: 'stat', title: 'Counters saturated', unit: 'short', w: 4, h: 4,
      description: 'PMA counters stuck at their maximum (`infiniband_port_pma_saturated`): new errors on them are invisible until they are reset with `perfquery -R`.',
      targets: [instant(`count(infiniband_port_pma_saturated{${sel}} == 1) or vector(0)`)], defaults: { thresholds: alertAbove(1, 'orange') },
    },
    {
      type: 'bargauge', title: 'Ports by logical state', unit: 'short', w: 8, h: 7,
      description: 'Number of ports in each logical state. ACTIVE is normal; INIT means the link is up but no subnet manager configured the port; DOWN means no physical link.',
      targets: [instant(countByStateName(PORT_STATES, `infiniband_port_state_id{${sel}}`), '{{state}}')],
    },
    {
      type: 'bargauge', title: 'Ports by physical state', unit: 'short', w: 8, h: 7,
      description: 'Number of ports in each physical state. LinkUp is normal; Polling means no cable or no peer; Disabled means switched off.',
      targets: [instant(countByStateName(PHYSICAL_STATES, `infiniband_port_physical_state_id{${sel}}`), '{{state}}')],
    },
    {
      type: 'timeseries', title: 'Ports not ACTIVE over time', unit: 'short', w: 8, h: 7,
      description: `Number of ports in each logical state other than ACTIVE, over time: a step up is a port that went down or lost its subnet manager. ${EMPTY_WHEN_HEALTHY}`,
      targets: [series(countByStateName(PORT_STATES, `infiniband_port_state_id{${sel}} != 4`), '{{state}}')],
      defaults: { min: 0, custom: { drawStyle: 'line', lineInterpolation: 'stepAfter', fillOpacity: 10 } },
    },
  ];

  const attention = [
    {
      type: 'table', title: 'Ports not ACTIVE', unit: 'none', w: 24, h: 8,
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
      type: 'table', title: 'Degraded links', unit: 'none', w: 16, h: 8,
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
      type: 'table', title: 'Saturated PMA counters', unit: 'none', w: 8, h: 8,
      description: `PMA counters sitting at their maximum: they no longer count, so new errors are invisible. Reset them with \`perfquery -R\` after noting the values. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(`max by (job, instance, device, port, counter) (infiniband_port_pma_saturated{${sel}} == 1)`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: hostColumns(true),
    },
  ];

  const smSel = sel;
  const sm = [
    {
      type: 'stat', title: 'Ports reaching a subnet manager', unit: 'short', w: 5, h: 4,
      description: `Local IB ports from which sminfo reached a subnet manager in its last run. ${NEEDS_DIAG}`,
      targets: [instant(`sum(infiniband_subnet_manager_reachable{${smSel}})`)],
    },
    {
      type: 'stat', title: 'Ports with no subnet manager', unit: 'short', w: 5, h: 4,
      description: `Local IB ports with a link from which sminfo could not reach any subnet manager: new ports will stay INIT and LID routes will not be repaired. ${NEEDS_DIAG}`,
      targets: [instant(`count(infiniband_subnet_manager_reachable{${smSel}}) - sum(infiniband_subnet_manager_reachable{${smSel}})`)],
      defaults: { thresholds: alertAbove(1) },
    },
    {
      type: 'stat', title: 'Master subnet manager changes', unit: 'short', w: 5, h: 4,
      description: `Changes of the master subnet manager (GUID or LID) seen by the ports in the time range, summed over ports: a failover, or a subnet manager restarting. ${NEEDS_DIAG}`,
      targets: [instant(`sum(
  count by ${port} (
    count by (job, instance, device, port, sm_guid, sm_lid) (max_over_time(infiniband_subnet_manager_info{${smSel}, state="MASTER"}[$__range]))
  ) - 1
)`)],
      defaults: { thresholds: alertAbove(1, 'orange') },
    },
    {
      type: 'table', title: 'Ports that cannot reach a subnet manager', unit: 'none', w: 9, h: 4,
      description: `Local IB ports where sminfo failed in its last run. ${EMPTY_WHEN_HEALTHY} ${NEEDS_DIAG}`,
      targets: [tableRow(`max by ${port} (infiniband_subnet_manager_reachable{${smSel}} == 0)`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: hostColumns(true),
    },
    {
      type: 'table', title: 'Subnet managers', unit: 'none', w: 14, h: 7,
      description: `Each subnet manager the ports see, as sminfo reports it: GUID, LID and state, how many ports and hosts see it, and for the master its priority and activity count (which grows while it is alive and sweeping). A STANDBY row is an SM running on one of the hosts. Two MASTER rows on one fabric mean a split subnet. ${NEEDS_DIAG}`,
      targets: [
        tableRow(`count by (sm_guid, sm_lid, state) (infiniband_subnet_manager_info{${smSel}})`),
        tableRow(`count by (sm_guid, sm_lid, state) (count by (job, instance, sm_guid, sm_lid, state) (infiniband_subnet_manager_info{${smSel}}))`),
        tableRow(`max by (sm_guid, sm_lid, state) (infiniband_subnet_manager_priority{${smSel}} * on ${port} group_left (sm_guid, sm_lid, state) infiniband_subnet_manager_info{${smSel}, state="MASTER"})`),
        tableRow(`max by (sm_guid, sm_lid, state) (infiniband_subnet_manager_activity_total{${smSel}} * on ${port} group_left (sm_guid, sm_lid, state) infiniband_subnet_manager_info{${smSel}, state="MASTER"})`),
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
      type: 'timeseries', title: 'Ports per master subnet manager', unit: 'short', w: 10, h: 7,
      description: `How many ports follow each master subnet manager (by GUID and LID) over time: a failover shows as one line ending while another starts. ${NEEDS_DIAG}`,
      targets: [series(`count by (sm_guid, sm_lid) (infiniband_subnet_manager_info{${smSel}, state="MASTER"})`, '{{sm_guid}} (LID {{sm_lid}})')],
      defaults: { min: 0, custom: { drawStyle: 'line', lineInterpolation: 'stepAfter' } },
    },
  ];

  const ipoib = [
    {
      type: 'piechart', title: 'IPoIB interfaces by mode', unit: 'short', w: 6, h: 7,
      description: 'IPoIB interfaces in connected and datagram mode. Connected mode allows MTUs up to 65520 and is faster for TCP; datagram mode limits the MTU to the IB MTU minus 4 bytes.',
      targets: [instant(`count by (mode) (infiniband_ipoib_info{${sel}})`, '{{mode}}')],
    },
    {
      type: 'piechart', title: 'IPoIB interfaces by MTU', unit: 'short', w: 6, h: 7,
      description: 'IPoIB interfaces per MTU. 2044 is the old default and slow; hosts of one IPoIB network should agree.',
      targets: [instant(`count_values("mtu", infiniband_ipoib_mtu_bytes{${sel}})`, 'MTU {{mtu}}')],
    },
    {
      type: 'table', title: 'IPoIB settings per P_Key', unit: 'short', w: 12, h: 7,
      description: 'Interfaces per P_Key (one IPoIB network), mode and MTU. More than one row for a P_Key means the hosts of that network disagree on mode or MTU, which breaks or slows traffic between them.',
      targets: [tableRow(`count by (pkey, mode, mtu) (
  infiniband_ipoib_info{${sel}}
  * on (job, instance, interface) group_left (mtu)
  count_values by (job, instance, interface) ("mtu", infiniband_ipoib_mtu_bytes{${sel}})
)`)],
      transformations: mergedTable(),
      overrides: [column('A', 'interfaces', [unitProp('short')])],
    },
    {
      type: 'table', title: 'IPoIB interfaces without carrier', unit: 'none', w: 12, h: 6,
      description: `IPoIB interfaces with no carrier: the port under them is not ACTIVE, the broadcast group was not joined, or the interface is administratively down. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(`max by (job, instance, interface, device, port, mode, pkey) (
  infiniband_ipoib_info{${sel}}
  and on (job, instance, interface) (infiniband_ipoib_carrier{${sel}} == 0)
)`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
      overrides: hostColumns(true),
    },
  ];

  const firmware = [
    {
      type: 'table', title: 'Firmware versions per HCA type', unit: 'short', w: 16, h: 6,
      description: 'Devices per HCA type (PCI device id such as MT4129), board and firmware version. Several firmware versions for one HCA type across the fleet is a drift to fix during the next maintenance.',
      targets: [tableRow(`count by (hca_type, board_id, firmware_version) (infiniband_device_info{${sel}})`)],
      transformations: mergedTable(),
      overrides: [column('A', 'devices', [unitProp('short')])],
    },
    {
      type: 'stat', title: 'HCA types with mixed firmware', unit: 'short', w: 8, h: 6,
      description: 'HCA types (with a known type) whose devices run more than one firmware version across the selected hosts.',
      targets: [instant(`count(count by (hca_type) (count by (hca_type, firmware_version) (infiniband_device_info{${sel}, hca_type!=""})) > 1) or vector(0)`)],
      defaults: { thresholds: alertAbove(1, 'orange') },
    },
  ];

  const errors = [
    {
      type: 'table', title: 'Top ports by local error rate', unit: 'cps', w: 12, h: 9,
      description: `The ${topN} highest per-second rates among the PMA error counters of the local HCA ports, with the counter name (symbol errors and link error recoveries point at cables; receive errors and discards at packets lost; transmit wait at congestion).`,
      targets: [tableRow(`topk(${topN},\n  ${labelledRates(sel, ERROR_COUNTERS, '')}\n)`)],
      transformations: mergedTable(),
      overrides: [...hostColumns(true), column('A', 'rate', [unitProp('cps')])],
    },
    {
      type: 'table', title: 'Top ports by peer error rate', unit: 'cps', w: 12, h: 9,
      description: `The same for the switch port at the other end of each cable (read with perfquery from the host): errors seen by the switch on the link to this host. ${NEEDS_DIAG}`,
      targets: [tableRow(`topk(${topN},\n  ${labelledRates(sel, ERROR_COUNTERS, 'peer_')}\n)`)],
      transformations: mergedTable(),
      overrides: [...hostColumns(true), column('A', 'rate', [unitProp('cps')])],
    },
    {
      type: 'timeseries', title: 'Local error rate, top 10 ports', unit: 'cps', w: 12, h: 8,
      description: 'Sum of the PMA error counter rates per port (transmit wait excluded), for the 10 ports with the highest sum at each point in time.',
      targets: [series(`topk(10, sum by ${port} (\n  ${labelledRates(sel, [...PHYSICAL_ERRORS, ...PACKET_ERRORS], '')}\n))`, '{{instance}} {{device}}/{{port}}')],
      defaults: { min: 0 },
    },
    {
      type: 'table', title: 'Error counters with a non-zero value', unit: 'short', w: 12, h: 8,
      description: `Current value of every non-zero local PMA error counter but transmit wait (accumulated since the counter was last reset or the host booted), highest first: old damage that the rate panels do not show. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(`topk(50,\n  ${[...PHYSICAL_ERRORS, ...PACKET_ERRORS].map(([name]) => `label_replace(infiniband_port_${name}_total{${sel}} > 0, "counter", "${name}", "", "")`).join('\n  or ')}\n)`)],
      transformations: mergedTable(),
      overrides: [...hostColumns(true), column('A', 'value', [unitProp('short')])],
    },
  ];

  const rx = `rate(infiniband_port_receive_data_bytes_total{${sel}}[$__rate_interval])`;
  const tx = `rate(infiniband_port_transmit_data_bytes_total{${sel}}[$__rate_interval])`;
  const traffic = [
    {
      type: 'timeseries', title: 'Fabric throughput', unit: 'Bps', w: 8, h: 8,
      description: 'Data sent and received by all selected HCA ports, in bytes per second (PMA data counters, already converted from 4-byte words).',
      targets: [series(`sum(${tx})`, 'transmit'), series(`sum(${rx})`, 'receive')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries', title: 'Top 10 ports by throughput', unit: 'Bps', w: 8, h: 8,
      description: 'The 10 ports moving the most data (transmit plus receive), in bytes per second.',
      targets: [series(`topk(10, ${tx} + ${rx})`, '{{instance}} {{device}}/{{port}}')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries', title: 'Top 10 ports by utilisation', unit: 'percentunit', w: 8, h: 8,
      description: 'The 10 ports closest to their link capacity: throughput of the busier direction divided by the usable data rate of the link (after line encoding). Near 100 % the link is the bottleneck.',
      targets: [series(`topk(10, (${tx} > ${rx} or ${rx}) / infiniband_port_data_rate_bytes_per_second{${sel}})`, '{{instance}} {{device}}/{{port}}')],
      defaults: { min: 0, max: 1 },
    },
  ];

  const exporter = [
    {
      type: 'table', title: 'Exporters', unit: 'none', w: 12, h: 8,
      description: 'Each exporter: scrape status, how many collectors failed their last cycle, the age of its oldest collector data, and read errors in the time range. Data older than a few collection intervals means the collection loop is stuck.',
      targets: [
        tableRow(`max by (job, instance) (up{${sel}})`),
        tableRow(`sum by (job, instance) (1 - infiniband_exporter_collector_success{${sel}})`),
        tableRow(`max by (job, instance) (time() - infiniband_exporter_last_collection_timestamp_seconds{${sel}})`),
        tableRow(`sum by (job, instance) (increase(infiniband_exporter_read_errors_total{${sel}}[$__range]))`),
      ],
      transformations: mergedTable(),
      overrides: [
        ...hostColumns(false),
        column('A', 'up', [mappingsProp([{ type: 'value', options: { 0: { text: 'down', color: 'red', index: 0 }, 1: { text: 'up', color: 'green', index: 1 } } }]), colorText]),
        column('B', 'failing collectors', [unitProp('short')]),
        column('C', 'oldest data', [unitProp('s')]),
        column('D', 'read errors in range', [unitProp('short')]),
      ],
    },
    {
      type: 'timeseries', title: 'Age of collected data', unit: 's', w: 12, h: 8,
      description: 'Seconds since each collector of each exporter last finished a cycle. It should stay below the collection interval (sysfs, IPoIB) or the diag interval (perfquery, sminfo, smpquery).',
      targets: [series(`time() - infiniband_exporter_last_collection_timestamp_seconds{${sel}}`, '{{instance}} {{collector}}')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries', title: 'Failing collectors', unit: 'short', w: 8, h: 7,
      description: 'Number of exporters whose last cycle of each collector failed or was cut off at its deadline.',
      targets: [series(`sum by (collector) (1 - infiniband_exporter_collector_success{${sel}})`, '{{collector}}')],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries', title: 'Read errors', unit: 'cps', w: 8, h: 7,
      description: 'Files, devices or commands per second that could not be read or parsed, per collector (details in the exporter log).',
      targets: [series(`sum by (collector) (rate(infiniband_exporter_read_errors_total{${sel}}[$__rate_interval]))`, '{{collector}}')],
      defaults: { min: 0 },
    },
    {
      type: 'table', title: 'Exporter versions', unit: 'short', w: 8, h: 7,
      description: 'Exporters per version and revision.',
      targets: [tableRow(`count by (version, revision, nodejs_version) (infiniband_exporter_build_info{${sel}})`)],
      transformations: mergedTable(),
      overrides: [column('A', 'exporters', [unitProp('short')])],
    },
  ];

  return dashboard({
    uid: OVERVIEW_UID,
    title: 'InfiniBand / Fabric overview',
    description: 'Fleet view of the InfiniBand exporters: port states, degraded links, subnet managers, IPoIB settings, firmware, errors, throughput and the exporters themselves. Panels marked "Needs the diag collector" stay empty when infiniband-diags is not installed on the hosts; see dashboards/README.md.',
    variables: [
      datasourceVariable,
      jobVariable,
      labelVariable({ name: 'instance', label: 'Host', metric: 'infiniband_exporter_build_info{job=~"$job"}', labelName: 'instance', multi: true, allValue: '.*' }),
    ],
    links: dashboardLinks,
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

// ---------------------------------------------------------------------------------------------
// One host

function host() {
  const hostSel = 'job=~"$job", instance=~"$instance"';
  const sel = `${hostSel}, device=~"$device", port=~"$port"`;
  const port = '(job, instance, device, port)';
  const legend = '{{device}}/{{port}}';
  const rateOf = (name) => `rate(infiniband_port_${name}_total{${sel}}[$__rate_interval])`;
  /** Draw the receive direction (query B) below the axis. */
  const receiveBelow = [{ matcher: { id: 'byFrameRefID', options: 'B' }, properties: [{ id: 'custom.transform', value: 'negative-Y' }] }];

  const identity = [
    {
      type: 'table', title: 'Devices', unit: 'none', w: 24, h: 5,
      description: 'HCA devices of the host: type (node type, HCA type), firmware, board, GUIDs and node description. Empty cells are files the driver does not provide.',
      targets: [tableRow(`infiniband_device_info{${hostSel}, device=~"$device"}`)],
      transformations: mergedTable(['Time', '__name__', 'Value', 'job', 'instance']),
    },
    {
      type: 'table', title: 'Ports', unit: 'none', w: 24, h: 7,
      description: 'Each port: link layer (InfiniBand, or Ethernet for RoCE and iWARP), port GUID, active width and speed, logical and physical state, LID, the subnet manager LID it last heard from (0 = never configured) and whether a subnet manager runs on it.',
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
        column('F', 'runs an SM', [mappingsProp([{ type: 'value', options: { 0: { text: 'no', index: 0 }, 1: { text: 'yes', index: 1 } } }])]),
      ],
    },
  ];

  const state = [
    {
      type: 'state-timeline', title: 'Logical state', unit: 'none', w: 12, h: 8,
      description: 'Logical state of each port over time. ACTIVE is normal; INIT = link up but not configured by a subnet manager; DOWN = no physical link.',
      targets: [series(`infiniband_port_state_id{${sel}}`, legend)],
      defaults: { mappings: STATE_MAPPINGS },
    },
    {
      type: 'state-timeline', title: 'Physical state', unit: 'none', w: 12, h: 8,
      description: 'Physical state of each port over time. LinkUp is normal; Polling = no cable or no peer; LinkErrorRecovery = the link is retraining.',
      targets: [series(`infiniband_port_physical_state_id{${sel}}`, legend)],
      defaults: { mappings: PHYSICAL_MAPPINGS },
    },
    {
      type: 'timeseries', title: 'Link flaps', unit: 'short', w: 12, h: 7,
      description: 'Logical state changes the exporter sampled (it samples more often than Prometheus scrapes) and link-downed events counted by the port (PMA LinkDownedCounter), per rate interval.',
      targets: [
        series(`increase(infiniband_port_state_changes_total{${sel}}[$__rate_interval])`, `${legend} state changes`),
        series(`increase(infiniband_port_link_downed_total{${sel}}[$__rate_interval])`, `${legend} link downed`),
      ],
      defaults: { min: 0 },
    },
    {
      type: 'stat', title: 'Link degraded', unit: 'none', w: 12, h: 7,
      description: `Is the link below its expected width or lane rate (one value per port and reason). ${NEEDS_EXPECTATION}`,
      targets: [instant(`infiniband_port_link_degraded{${sel}}`, `${legend} {{reason}}`)],
      defaults: { mappings: [{ type: 'value', options: { 0: { text: 'OK', color: 'green', index: 0 }, 1: { text: 'DEGRADED', color: 'red', index: 1 } } }], thresholds: alertAbove(1) },
    },
  ];

  const rate = [
    {
      type: 'timeseries', title: 'Width against expected', unit: 'none', w: 8, h: 8,
      description: 'Active link width in lanes and the width the link should run at (dashed). A drop from 4 to 1 is a lost lane.',
      targets: [
        series(`infiniband_port_link_width_lanes{${sel}}`, `${legend} active`),
        series(`infiniband_port_link_width_expected_lanes{${sel}}`, `${legend} expected`),
      ],
      defaults: { min: 0, decimals: 0, custom: { lineInterpolation: 'stepAfter' } },
      overrides: [{ matcher: { id: 'byFrameRefID', options: 'B' }, properties: [{ id: 'custom.lineStyle', value: { fill: 'dash', dash: [10, 10] } }] }],
    },
    {
      type: 'timeseries', title: 'Lane rate against expected', unit: 'bps', w: 8, h: 8,
      description: 'Nominal per-lane signalling rate at the active speed (HDR 50, NDR 100 Gb/s...) and the rate the link should run at (dashed).',
      targets: [
        series(`8 * infiniband_port_lane_rate_bytes_per_second{${sel}}`, `${legend} active`),
        series(`8 * infiniband_port_lane_rate_expected_bytes_per_second{${sel}}`, `${legend} expected`),
      ],
      defaults: { min: 0, custom: { lineInterpolation: 'stepAfter' } },
      overrides: [{ matcher: { id: 'byFrameRefID', options: 'B' }, properties: [{ id: 'custom.lineStyle', value: { fill: 'dash', dash: [10, 10] } }] }],
    },
    {
      type: 'timeseries', title: 'Link rate', unit: 'bps', w: 8, h: 8,
      description: 'Nominal link rate (width x lane rate, as the kernel reports it) and the usable data rate after line encoding, in bits per second.',
      targets: [
        series(`8 * infiniband_port_rate_bytes_per_second{${sel}}`, `${legend} nominal`),
        series(`8 * infiniband_port_data_rate_bytes_per_second{${sel}}`, `${legend} data`),
      ],
      defaults: { min: 0, custom: { lineInterpolation: 'stepAfter' } },
    },
  ];

  const traffic = [
    {
      type: 'timeseries', title: 'Throughput', unit: 'Bps', w: 12, h: 8,
      description: 'Bytes per second sent (above the axis) and received (below) by each port, from the PMA data counters.',
      targets: [
        series(rateOf('transmit_data_bytes'), `${legend} transmit`),
        series(rateOf('receive_data_bytes'), `${legend} receive`),
      ],
      overrides: receiveBelow,
    },
    {
      type: 'timeseries', title: 'Utilisation of the data rate', unit: 'percentunit', w: 12, h: 8,
      description: 'Throughput of each direction divided by the usable data rate of the link: near 100 % the link is saturated.',
      targets: [
        series(`${rateOf('transmit_data_bytes')} / infiniband_port_data_rate_bytes_per_second{${sel}}`, `${legend} transmit`),
        series(`${rateOf('receive_data_bytes')} / infiniband_port_data_rate_bytes_per_second{${sel}}`, `${legend} receive`),
      ],
      defaults: { min: 0, max: 1 },
    },
    {
      type: 'timeseries', title: 'Packet rates', unit: 'pps', w: 12, h: 8,
      description: 'Packets per second sent (above the axis) and received (below) by each port. A port that is ACTIVE but receives nothing for a long time passes no traffic.',
      targets: [
        series(rateOf('transmit_packets'), `${legend} transmit`),
        series(rateOf('receive_packets'), `${legend} receive`),
      ],
      overrides: receiveBelow,
    },
    {
      type: 'timeseries', title: 'Unicast and multicast packet rates', unit: 'pps', w: 12, h: 8,
      description: 'Unicast and multicast packets per second (extended PMA counters only; older HCAs do not have them). Heavy multicast on an IPoIB network is broadcast traffic such as ARP.',
      targets: [
        series(rateOf('unicast_transmit_packets'), `${legend} unicast transmit`),
        series(rateOf('unicast_receive_packets'), `${legend} unicast receive`),
        series(rateOf('multicast_transmit_packets'), `${legend} multicast transmit`),
        series(rateOf('multicast_receive_packets'), `${legend} multicast receive`),
      ],
    },
  ];

  /** @param {string} prefix @param {string} side */
  const errorPanels = (prefix, side) => {
    const peer = prefix === 'peer_';
    const suffix = peer ? ` ${NEEDS_DIAG}` : '';
    const who = peer ? 'the switch port at the other end of the cable (peer)' : 'the local HCA port';
    /** @param {string[][]} counters */
    const targets = (counters) => counters.map(([name, text]) => series(`rate(infiniband_port_${prefix}${name}_total{${sel}}[$__rate_interval])`, `${legend} ${text}`));
    return [
      {
        type: 'timeseries', title: `${side} physical link errors`, unit: 'cps', w: 8, h: 8,
        description: `Per-second rates of the physical-layer PMA counters of ${who}: symbol errors, link error recoveries, link downed, local link integrity errors, excessive buffer overruns. A steady rise means a bad cable, transceiver or port.${suffix}`,
        targets: targets(PHYSICAL_ERRORS),
        defaults: { min: 0 },
      },
      {
        type: 'timeseries', title: `${side} packet errors and discards`, unit: 'cps', w: 8, h: 8,
        description: `Per-second rates of the receive and transmit error PMA counters of ${who}: packets received with errors, marked bad elsewhere, not relayable, rejected by partition/constraint checks, discarded on transmit, dropped on VL15.${suffix}`,
        targets: targets(PACKET_ERRORS),
        defaults: { min: 0 },
      },
      {
        type: 'timeseries', title: `${side} transmit wait`, unit: 'cps', w: 8, h: 8,
        description: `PortXmitWait of ${who}: ticks per second during which data was ready to send but no flow-control credits were available. A large share of time means congestion.${suffix}`,
        targets: targets(CONGESTION),
        defaults: { min: 0 },
      },
    ];
  };

  const errors = [
    ...errorPanels('', 'Local'),
    ...errorPanels('peer_', 'Peer'),
    {
      type: 'table', title: 'Error counter values', unit: 'short', w: 16, h: 7,
      description: 'Current value of every local PMA error counter, accumulated since the last reset or boot: old damage the rate panels do not show. Counters the port does not have are blank.',
      targets: ERROR_COUNTERS.map(([name]) => tableRow(`max by ${port} (infiniband_port_${name}_total{${sel}})`)),
      transformations: mergedTable(['Time', '__name__', 'job', 'instance']),
      overrides: ERROR_COUNTERS.map(([, text], i) => column(String.fromCharCode(65 + i), text, [unitProp('short')])),
    },
    {
      type: 'table', title: 'Saturated counters', unit: 'none', w: 8, h: 7,
      description: `PMA counters of this host stuck at their maximum: they hide every later error until reset with \`perfquery -R\`. ${EMPTY_WHEN_HEALTHY}`,
      targets: [tableRow(`max by (device, port, counter) (infiniband_port_pma_saturated{${sel}} == 1)`)],
      transformations: mergedTable(['Time', '__name__', 'Value']),
    },
  ];

  const smAndIpoib = [
    {
      type: 'table', title: 'Subnet manager seen from this host', unit: 'none', w: 12, h: 6,
      description: `Per local IB port, as sminfo reports it: is a subnet manager reachable, and the master's GUID, LID, priority and activity count. An SM running on this host in standby shows in the overview's "Subnet managers" table. ${NEEDS_DIAG}`,
      targets: [
        tableRow(`max by ${port} (infiniband_subnet_manager_reachable{${sel}})`),
        tableRow(`max by (job, instance, device, port, sm_guid, sm_lid, state) (infiniband_subnet_manager_info{${sel}, state="MASTER"})`),
        tableRow(`max by ${port} (infiniband_subnet_manager_priority{${sel}})`),
        tableRow(`max by ${port} (infiniband_subnet_manager_activity_total{${sel}})`),
      ],
      transformations: mergedTable(['Time', '__name__', 'Value #B', 'job', 'instance']),
      overrides: [
        column('A', 'reachable', [mappingsProp([{ type: 'value', options: { 0: { text: 'no', color: 'red', index: 0 }, 1: { text: 'yes', color: 'green', index: 1 } } }]), colorText]),
        column('C', 'priority', [unitProp('none')]),
        column('D', 'activity count', [unitProp('none')]),
      ],
    },
    {
      type: 'table', title: 'IPoIB interfaces', unit: 'none', w: 12, h: 6,
      description: 'IPoIB interfaces carried by the selected ports: mode, P_Key, parent (P_Key child interfaces), MTU and carrier. Datagram mode or an MTU of 2044 cost throughput; hosts of one P_Key should agree on both.',
      targets: [
        tableRow(`max by (job, instance, interface, device, port, mode, pkey, parent) (infiniband_ipoib_info{${sel}})`),
        tableRow(`max by (job, instance, interface) (infiniband_ipoib_mtu_bytes{${hostSel}} and on (job, instance, interface) infiniband_ipoib_info{${sel}})`),
        tableRow(`max by (job, instance, interface) (infiniband_ipoib_carrier{${hostSel}} and on (job, instance, interface) infiniband_ipoib_info{${sel}})`),
      ],
      transformations: mergedTable(['Time', '__name__', 'Value #A', 'job', 'instance']),
      overrides: [
        column('B', 'MTU', [unitProp('bytes')]),
        column('C', 'carrier', [mappingsProp([{ type: 'value', options: { 0: { text: 'no carrier', color: 'red', index: 0 }, 1: { text: 'up', color: 'green', index: 1 } } }]), colorText]),
      ],
    },
  ];

  const hw = [
    {
      type: 'timeseries', title: 'Driver hw_counters rates', unit: 'cps', w: 16, h: 9,
      description: 'Per-second rates of the driver hw_counters of the selected ports (choose them with the hw_counter variable): e.g. mlx5 out_of_buffer (receive queue drops), local_ack_timeout_err and packet_seq_err (RDMA retransmissions), np_cnp_sent / rp_cnp_handled (RoCE congestion control).',
      targets: [series(`rate(infiniband_port_hw_stat_total{${sel}, counter=~"$hw_counter"}[$__rate_interval])`, `${legend} {{counter}}`)],
    },
    {
      type: 'table', title: 'Driver hw_counters values', unit: 'short', w: 8, h: 9,
      description: 'Current value of each selected driver hw_counter, since the driver loaded.',
      targets: [tableRow(`max by (device, port, counter) (infiniband_port_hw_stat_total{${sel}, counter=~"$hw_counter"})`)],
      transformations: mergedTable(),
      overrides: [column('A', 'value', [unitProp('short')])],
    },
  ];

  const exporterPanels = [
    {
      type: 'stat', title: 'Collectors', unit: 'none', w: 6, h: 5,
      description: 'Whether each collector of this exporter succeeded in its last cycle.',
      targets: [instant(`infiniband_exporter_collector_success{${hostSel}}`, '{{collector}}')],
      defaults: { mappings: [{ type: 'value', options: { 0: { text: 'FAILING', color: 'red', index: 0 }, 1: { text: 'OK', color: 'green', index: 1 } } }], thresholds: { mode: 'absolute', steps: [{ color: 'red', value: null }, { color: 'green', value: 1 }] } },
    },
    {
      type: 'timeseries', title: 'Collection age and duration', unit: 's', w: 6, h: 5,
      description: 'Seconds since each collector last finished a cycle, and how long its last cycle took.',
      targets: [
        series(`time() - infiniband_exporter_last_collection_timestamp_seconds{${hostSel}}`, '{{collector}} age'),
        series(`infiniband_exporter_collector_duration_seconds{${hostSel}}`, '{{collector}} duration'),
      ],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries', title: 'Read errors', unit: 'cps', w: 6, h: 5,
      description: 'Files, devices or commands per second that could not be read or parsed, per collector (details in the exporter log).',
      targets: [
        series(`rate(infiniband_exporter_read_errors_total{${hostSel}}[$__rate_interval])`, '{{collector}}'),
      ],
      defaults: { min: 0 },
    },
    {
      type: 'timeseries', title: 'Command timeouts', unit: 'cps', w: 6, h: 5,
      description: `infiniband-diags commands per second killed at --diag.timeout, per command: a fabric that does not answer MADs, or a timeout too short for it. ${NEEDS_DIAG}`,
      targets: [series(`rate(infiniband_exporter_command_timeouts_total{${hostSel}}[$__rate_interval])`, '{{command}}')],
      defaults: { min: 0 },
    },
  ];

  return dashboard({
    uid: HOST_UID,
    title: 'InfiniBand / Host',
    description: 'One InfiniBand host: identity, port state history, link width and speed against expected, throughput, packet rates, every PMA error counter (local and peer), saturated counters, subnet manager, IPoIB settings, driver hw_counters and the exporter. Panels marked "Needs the diag collector" stay empty when infiniband-diags is not installed; see dashboards/README.md.',
    variables: [
      datasourceVariable,
      jobVariable,
      labelVariable({ name: 'instance', label: 'Host', metric: 'infiniband_exporter_build_info{job=~"$job"}', labelName: 'instance', multi: false }),
      labelVariable({ name: 'device', label: 'Device', metric: 'infiniband_port_info{job=~"$job", instance=~"$instance"}', labelName: 'device', multi: true, allValue: '.*' }),
      labelVariable({ name: 'port', label: 'Port', metric: 'infiniband_port_info{job=~"$job", instance=~"$instance", device=~"$device"}', labelName: 'port', multi: true, allValue: '.*' }),
      labelVariable({ name: 'hw_counter', label: 'hw_counter', metric: 'infiniband_port_hw_stat_total{job=~"$job", instance=~"$instance", device=~"$device", port=~"$port"}', labelName: 'counter', multi: true, allValue: '.*' }),
    ],
    links: dashboardLinks,
    rows: [
      { title: 'Identity', panels: identity },
      { title: 'Port state', panels: state },
      { title: 'Link width and speed', panels: rate },
      { title: 'Traffic', panels: traffic },
      { title: 'Errors', panels: errors },
      { title: 'Subnet manager and IPoIB', panels: smAndIpoib },
      { title: 'Driver hw_counters', panels: hw },
      { title: 'Exporter', panels: exporterPanels },
    ],
  });
}

// ---------------------------------------------------------------------------------------------

export const DASHBOARDS = { 'infiniband-overview.json': overview, 'infiniband-host.json': host };

/** @param {() => object} build */
const render = (build) => JSON.stringify(build(), null, 2) + '\n';

function main(argv) {
  const check = argv.includes('--check');
  let stale = 0;
  for (const [file, build] of Object.entries(DASHBOARDS)) {
    const target = fileURLToPath(new URL(file, import.meta.url));
    const text = render(build);
    if (check) {
      let current = '';
      try {
        current = readFileSync(target, 'utf8');
      } catch {
        // missing counts as stale
      }
      if (current !== text) {
        process.stderr.write(`dashboards/${file} is not what dashboards/generate.mjs produces: run node dashboards/generate.mjs\n`);
        stale++;
      }
    } else {
      writeFileSync(target, text);
    }
  }
  return stale === 0 ? 0 : 1;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main(process.argv.slice(2));
