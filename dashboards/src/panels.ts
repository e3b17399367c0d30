// Building blocks of the InfiniBand dashboards, on Grafana's own typed builders
// (@grafana/grafana-foundation-sdk, generated from Grafana's schema). Panels are written as plain
// specs (title, description, unit, size, queries, field settings) and turned into the SDK's panel
// builders here, so that every dashboard shares the same conventions: the datasource variable on
// every panel and target, units, descriptions, ids and the grid.
import * as bargauge from '@grafana/grafana-foundation-sdk/bargauge';
import type * as cog from '@grafana/grafana-foundation-sdk/cog';
import * as common from '@grafana/grafana-foundation-sdk/common';
import * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import * as piechart from '@grafana/grafana-foundation-sdk/piechart';
import * as prometheus from '@grafana/grafana-foundation-sdk/prometheus';
import * as stat from '@grafana/grafana-foundation-sdk/stat';
import * as statetimeline from '@grafana/grafana-foundation-sdk/statetimeline';
import * as table from '@grafana/grafana-foundation-sdk/table';
import * as text from '@grafana/grafana-foundation-sdk/text';
import * as timeseries from '@grafana/grafana-foundation-sdk/timeseries';

const TAGS = ['infiniband', 'infiniband-exporter'];
export const OVERVIEW_UID = 'infiniband-overview';
export const HOST_UID = 'infiniband-host';
export const FABRIC_UID = 'infiniband-fabric';
/** Every panel and target queries the data source chosen in the `datasource` variable. */
export const DATASOURCE: common.DataSourceRef = { type: 'prometheus', uid: '${datasource}' };

/** Phrases the tests and the README rely on to know which panels may show nothing. */
export const NEEDS_DIAG = 'Needs the diag collector (infiniband-diags on the host): empty without it.';
export const EMPTY_WHEN_HEALTHY = 'Empty on a healthy fabric.';
export const NEEDS_EXPECTATION =
  'Needs an expectation for the port (exporter config file, or smpquery with the diag collector): empty without one.';
export const NEEDS_PLAN = 'Needs a cabling plan (--fabric.topology-file) or fabric.rails in the exporter config file: empty without them.';
export const NEEDS_HCA_PORTS = 'Needs --fabric.hca-ports for the HCA ends: without it only switch ports show.';
export const NEEDS_HOUR =
  'Needs an hour of data for the link: empty for a link up less than an hour, or whose counter was reset or saturated within it (never a spike).';
export const NEEDS_PCIE =
  'Needs the PCIe link attributes in sysfs (current_link_speed...): empty for adapters without them (a VF, a kernel before 4.13).';
export const NEEDS_MODULE = 'Needs the module collector (mstlink or mlxlink, run as root): empty without it.';

/** PMA error counters, exported locally and for the link peer (DESIGN.md metric contract). */
export type Counter = readonly [name: string, text: string];
export const PHYSICAL_ERRORS: readonly Counter[] = [
  ['symbol_errors', 'symbol errors'],
  ['link_error_recoveries', 'link error recoveries'],
  ['link_downed', 'link downed'],
  ['local_link_integrity_errors', 'local link integrity errors'],
  ['excessive_buffer_overrun_errors', 'excessive buffer overruns'],
];
export const PACKET_ERRORS: readonly Counter[] = [
  ['receive_errors', 'receive errors'],
  ['receive_remote_physical_errors', 'receive remote physical errors'],
  ['receive_switch_relay_errors', 'receive switch relay errors'],
  ['receive_constraint_errors', 'receive constraint errors'],
  ['transmit_discards', 'transmit discards'],
  ['transmit_constraint_errors', 'transmit constraint errors'],
  ['vl15_dropped', 'VL15 dropped'],
];
export const CONGESTION: readonly Counter[] = [['transmit_wait', 'transmit wait']];
export const ERROR_COUNTERS: readonly Counter[] = [...PHYSICAL_ERRORS, ...PACKET_ERRORS, ...CONGESTION];

export const PORT_STATES = ['NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER'] as const;
export const PHYSICAL_STATES = [
  '',
  'Sleep',
  'Polling',
  'Disabled',
  'PortConfigurationTraining',
  'LinkUp',
  'LinkErrorRecovery',
  'PhyTest',
] as const;
const STATE_COLORS: Record<string, string> = {
  NOP: 'purple',
  DOWN: 'red',
  INIT: 'orange',
  ARMED: 'yellow',
  ACTIVE: 'green',
  ACTIVE_DEFER: 'blue',
};
const PHYSICAL_COLORS: Record<string, string> = {
  Sleep: 'purple',
  Polling: 'red',
  Disabled: 'red',
  PortConfigurationTraining: 'yellow',
  LinkUp: 'green',
  LinkErrorRecovery: 'orange',
  PhyTest: 'blue',
};

/**
 * Ports counted by state name from an `_id` gauge: count_values groups the ports by id, then one
 * label_replace per known id sets `state` (an id without a name shows as "unknown").
 */
export const countByStateName = (names: readonly string[], expr: string): string =>
  names.reduce(
    (inner, name, id) => (name ? `label_replace(${inner}, "state", "${name}", "state_id", "${id}")` : inner),
    `label_replace(count_values("state_id", ${expr}), "state", "unknown", "", "")`,
  );

// ---------------------------------------------------------------------------------------------
// Queries

export interface TargetSpec {
  expr: string;
  legend?: string;
  instant?: boolean;
  table?: boolean;
}

export const series = (expr: string, legend?: string): TargetSpec => ({ expr, ...(legend === undefined ? {} : { legend }) });
/** One row per series at the end of the range (tables, stats, bar gauges). */
export const instant = (expr: string, legend?: string): TargetSpec => ({ ...series(expr, legend), instant: true });
export const tableRow = (expr: string): TargetSpec => ({ expr, instant: true, table: true });

function target(spec: TargetSpec, refId: string): prometheus.DataqueryBuilder {
  const query = new prometheus.DataqueryBuilder()
    .datasource(DATASOURCE)
    .refId(refId)
    .expr(spec.expr)
    .legendFormat(spec.legend ?? '__auto')
    .format(spec.table ? prometheus.PromQueryFormat.Table : prometheus.PromQueryFormat.TimeSeries)
    .editorMode(prometheus.QueryEditorMode.Code);
  return spec.instant ? query.instant() : query.range();
}

// ---------------------------------------------------------------------------------------------
// Field settings

export const valueMap = (options: Record<string, dashboard.ValueMappingResult>): dashboard.ValueMap => ({
  type: dashboard.MappingType.ValueToText,
  options,
});

function mappingsFor(names: readonly string[], colors: Record<string, string>): dashboard.ValueMapping[] {
  const options: Record<string, dashboard.ValueMappingResult> = {};
  names.forEach((name, value) => {
    if (name) options[String(value)] = { text: name, color: colors[name], index: value };
  });
  return [valueMap(options)];
}
export const STATE_MAPPINGS = mappingsFor(PORT_STATES, STATE_COLORS);
export const PHYSICAL_MAPPINGS = mappingsFor(PHYSICAL_STATES, PHYSICAL_COLORS);
export const YES_NO_MAPPINGS = [valueMap({ 0: { text: 'no', color: 'green', index: 0 }, 1: { text: 'yes', color: 'red', index: 1 } })];

/** Thresholds: green, then the given colour from `value` on. */
export const alertAbove = (value: number, color = 'red'): dashboard.Threshold[] => [
  { color: 'green', value: null },
  { color, value },
];
const NEUTRAL: dashboard.Threshold[] = [{ color: 'blue', value: null }];

export interface Override {
  matcher: dashboard.MatcherConfig;
  properties: dashboard.DynamicConfigValue[];
}

/** Override of one table column produced by query `refId` (merged tables name them "Value #A"). */
export const column = (refId: string, displayName: string, properties: dashboard.DynamicConfigValue[] = []): Override => ({
  matcher: { id: 'byName', options: `Value #${refId}` },
  properties: [{ id: 'displayName', value: displayName }, ...properties],
});
export const unitProp = (unit: string): dashboard.DynamicConfigValue => ({ id: 'unit', value: unit });
export const mappingsProp = (mappings: dashboard.ValueMapping[]): dashboard.DynamicConfigValue => ({ id: 'mappings', value: mappings });
export const hiddenProp: dashboard.DynamicConfigValue = { id: 'custom.hidden', value: true };
export const colorText: dashboard.DynamicConfigValue = { id: 'custom.cellOptions', value: { type: 'color-text' } };
/** Draw the series of query `refId` dashed (an expected value beside the actual one). */
export const dashedQuery = (refId: string): Override => ({
  matcher: { id: 'byFrameRefID', options: refId },
  properties: [{ id: 'custom.lineStyle', value: { fill: 'dash', dash: [10, 10] } }],
});
/** Draw the series of query `refId` below the axis (receive beside transmit). */
export const belowAxis = (refId: string): Override => ({
  matcher: { id: 'byFrameRefID', options: refId },
  properties: [{ id: 'custom.transform', value: 'negative-Y' }],
});

/** Merge the instant queries of a table into one row per key and hide the bookkeeping columns. */
export function mergedTable(hidden: string[] = ['Time', '__name__']): dashboard.DataTransformerConfig[] {
  const excludeByName = Object.fromEntries(hidden.map((name) => [name, true]));
  return [
    { id: 'merge', options: {} },
    { id: 'organize', options: { excludeByName, renameByName: {} } },
  ];
}

// ---------------------------------------------------------------------------------------------
// Panels

export type PanelType = 'timeseries' | 'stat' | 'bargauge' | 'piechart' | 'table' | 'state-timeline';

export interface FieldDefaults {
  min?: number;
  max?: number;
  decimals?: number;
  mappings?: dashboard.ValueMapping[];
  thresholds?: dashboard.Threshold[];
  custom?: {
    drawStyle?: 'line';
    lineInterpolation?: 'stepAfter';
    fillOpacity?: number;
    /** A logarithmic y axis (base 10): rates spread over decades, such as bit error rates. */
    logScale?: boolean;
    /** Draw the thresholds as dashed lines across the graph. */
    thresholdLines?: boolean;
  };
}

export interface PanelSpec {
  type: PanelType;
  title: string;
  description: string;
  unit: string;
  w: number;
  h: number;
  targets: TargetSpec[];
  defaults?: FieldDefaults;
  overrides?: Override[];
  transformations?: dashboard.DataTransformerConfig[];
  /** Tables: the column (display name) the rows are sorted by. */
  sortBy?: { column: string; descending: boolean };
}

/** A note in Markdown, for what the panels around it cannot show: no query. */
export interface NoteSpec {
  type: 'text';
  title: string;
  content: string;
  w: number;
  h: number;
}

/** The settings every panel type shares, on any of the SDK's panel builders. */
interface CommonPanelBuilder<Self> extends cog.Builder<dashboard.Panel> {
  id(id: number): Self;
  title(title: string): Self;
  description(description: string): Self;
  datasource(datasource: common.DataSourceRef): Self;
  span(w: number): Self;
  height(h: number): Self;
  unit(unit: string): Self;
  min(min: number): Self;
  max(max: number): Self;
  decimals(decimals: number): Self;
  mappings(mappings: dashboard.ValueMapping[]): Self;
  thresholds(thresholds: cog.Builder<dashboard.ThresholdsConfig>): Self;
  colorScheme(color: cog.Builder<dashboard.FieldColor>): Self;
  withTarget(target: cog.Builder<prometheus.Dataquery>): Self;
  withOverride(override: Override): Self;
  withTransformation(transformation: dashboard.DataTransformerConfig): Self;
}

const allTime = () => new common.ReduceDataOptionsBuilder().calcs(['lastNotNull']).fields('').values(false);

/** The SDK builder of a panel type, with this project's options for that type. */
function builderFor(spec: PanelSpec): CommonPanelBuilder<unknown> {
  const custom = spec.defaults?.custom ?? {};
  switch (spec.type) {
    case 'timeseries': {
      const panel = new timeseries.PanelBuilder()
        .legend(
          new common.VizLegendOptionsBuilder()
            .displayMode(common.LegendDisplayMode.Table)
            .placement(common.LegendPlacement.Bottom)
            .showLegend(true)
            .calcs(['lastNotNull', 'max']),
        )
        .tooltip(new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Multi).sort(common.SortOrder.Descending));
      if (custom.drawStyle) panel.drawStyle(common.GraphDrawStyle.Line);
      if (custom.lineInterpolation) panel.lineInterpolation(common.LineInterpolation.StepAfter);
      if (custom.fillOpacity !== undefined) panel.fillOpacity(custom.fillOpacity);
      if (custom.logScale) panel.scaleDistribution(new common.ScaleDistributionConfigBuilder().type(common.ScaleDistribution.Log).log(10));
      if (custom.thresholdLines)
        panel.thresholdsStyle(new common.GraphThresholdsStyleConfigBuilder().mode(common.GraphThresholdsStyleMode.Dashed));
      return panel;
    }
    case 'stat':
      return new stat.PanelBuilder()
        .reduceOptions(allTime())
        .colorMode(common.BigValueColorMode.Background)
        .graphMode(common.BigValueGraphMode.None)
        .textMode(common.BigValueTextMode.Auto)
        .justifyMode(common.BigValueJustifyMode.Auto)
        .orientation(common.VizOrientation.Auto);
    case 'bargauge':
      return new bargauge.PanelBuilder()
        .reduceOptions(allTime())
        .orientation(common.VizOrientation.Horizontal)
        .displayMode(common.BarGaugeDisplayMode.Basic)
        .showUnfilled(true);
    case 'piechart':
      return new piechart.PanelBuilder()
        .reduceOptions(allTime())
        .pieType(piechart.PieChartType.Donut)
        .legend(
          new piechart.PieChartLegendOptionsBuilder()
            .displayMode(common.LegendDisplayMode.Table)
            .placement(common.LegendPlacement.Right)
            .showLegend(true)
            .values([piechart.PieChartLegendValues.Value]),
        )
        .tooltip(new common.VizTooltipOptionsBuilder().mode(common.TooltipDisplayMode.Single));
    case 'table': {
      const panel = new table.PanelBuilder()
        .showHeader(true)
        .cellHeight(common.TableCellHeight.Sm)
        .footer(new common.TableFooterOptionsBuilder().show(false));
      if (spec.sortBy)
        panel.sortBy([new common.TableSortByFieldStateBuilder().displayName(spec.sortBy.column).desc(spec.sortBy.descending)]);
      return panel;
    }
    case 'state-timeline':
      return new statetimeline.PanelBuilder()
        .showValue(common.VisibilityMode.Auto)
        .mergeValues(true)
        .alignValue(common.TimelineValueAlignment.Left)
        .rowHeight(0.9)
        .legend(
          new common.VizLegendOptionsBuilder()
            .showLegend(true)
            .displayMode(common.LegendDisplayMode.List)
            .placement(common.LegendPlacement.Bottom),
        );
  }
}

/**
 * A table with one query names its value column "Value", with several "Value #<refId>": point the
 * column overrides written for "Value #A" at the right name.
 */
function singleValueColumn(overrides: Override[], targetCount: number): Override[] {
  if (targetCount !== 1) return overrides;
  return overrides.map((o) =>
    o.matcher.id === 'byName' && o.matcher.options === 'Value #A' ? { ...o, matcher: { id: 'byName', options: 'Value' } } : o,
  );
}

function buildNote(spec: NoteSpec, id: number): cog.Builder<dashboard.Panel> {
  return new text.PanelBuilder().id(id).title(spec.title).span(spec.w).height(spec.h).mode(text.TextMode.Markdown).content(spec.content);
}

function buildPanel(spec: PanelSpec, id: number): cog.Builder<dashboard.Panel> {
  const panel = builderFor(spec);
  panel.id(id);
  panel.title(spec.title);
  panel.description(spec.description);
  panel.datasource(DATASOURCE);
  panel.span(spec.w);
  panel.height(spec.h);
  panel.unit(spec.unit);
  panel.colorScheme(
    new dashboard.FieldColorBuilder().mode(
      spec.type === 'timeseries' ? dashboard.FieldColorModeId.PaletteClassic : dashboard.FieldColorModeId.Thresholds,
    ),
  );
  panel.thresholds(
    new dashboard.ThresholdsConfigBuilder().mode(dashboard.ThresholdsMode.Absolute).steps(spec.defaults?.thresholds ?? NEUTRAL),
  );
  panel.mappings(spec.defaults?.mappings ?? []);
  const defaults = spec.defaults ?? {};
  if (defaults.min !== undefined) panel.min(defaults.min);
  if (defaults.max !== undefined) panel.max(defaults.max);
  if (defaults.decimals !== undefined) panel.decimals(defaults.decimals);
  spec.targets.forEach((t, i) => panel.withTarget(target(t, String.fromCharCode(65 + i))));
  for (const override of singleValueColumn(spec.overrides ?? [], spec.targets.length)) panel.withOverride(override);
  for (const transformation of spec.transformations ?? []) panel.withTransformation(transformation);
  return panel;
}

// ---------------------------------------------------------------------------------------------
// Variables, links, dashboards

export const datasourceVariable = () => new dashboard.DatasourceVariableBuilder('datasource').label('Data source').type('prometheus');

export interface LabelVariable {
  name: string;
  label: string;
  metric: string;
  labelName: string;
  multi: boolean;
  allValue?: string;
}

/** A query variable on label values (refreshed when the time range changes). */
export function labelVariable(v: LabelVariable): dashboard.QueryVariableBuilder {
  const query = `label_values(${v.metric}, ${v.labelName})`;
  const variable = new dashboard.QueryVariableBuilder(v.name)
    .label(v.label)
    .datasource(DATASOURCE)
    .query(query)
    .definition(query)
    .refresh(dashboard.VariableRefresh.OnTimeRangeChanged)
    .sort(dashboard.VariableSort.AlphabeticalAsc)
    .multi(v.multi)
    .includeAll(v.multi);
  return v.allValue ? variable.allValue(v.allValue) : variable;
}

// The `job` variable lists jobs that scrape this exporter; "All" expands to those jobs only (no
// allValue), so `up{job=~"$job"}` never counts other exporters' targets.
export const jobVariable = () =>
  labelVariable({ name: 'job', label: 'Job', metric: 'infiniband_exporter_build_info', labelName: 'job', multi: true });

/** Data link from a table row to the host dashboard for that host (and port, when known). */
function hostLink(withPort: boolean): { title: string; url: string } {
  const port = withPort ? '&var-device=${__data.fields.device}&var-port=${__data.fields.port}' : '';
  return {
    title: 'Open the host dashboard',
    url: `/d/${HOST_UID}/infiniband-host?\${datasource:queryparam}&var-job=\${__data.fields.job}&var-instance=\${__data.fields.instance}${port}&\${__url_time_range}`,
  };
}
/** Overrides that hide job and turn the instance column into a link to the host dashboard. */
export const hostColumns = (withPort: boolean): Override[] => [
  {
    matcher: { id: 'byName', options: 'instance' },
    properties: [
      { id: 'displayName', value: 'host' },
      { id: 'links', value: [hostLink(withPort)] },
    ],
  },
  { matcher: { id: 'byName', options: 'job' }, properties: [hiddenProp] },
];

export interface Row {
  title: string;
  panels: (PanelSpec | NoteSpec)[];
}

export interface DashboardSpec {
  uid: string;
  title: string;
  description: string;
  variables: cog.Builder<dashboard.VariableModel>[];
  rows: Row[];
}

/**
 * The whole dashboard. Rows are laid out top to bottom and the SDK flows the panels of a row left
 * to right; a row's widths add up to whole lines of 24 columns (the structure test checks it).
 */
export function buildDashboard(d: DashboardSpec): dashboard.Dashboard {
  const builder = new dashboard.DashboardBuilder(d.title)
    .id(null)
    .uid(d.uid)
    .description(d.description)
    .tags(TAGS)
    .timezone('browser')
    .editable()
    .tooltip(dashboard.DashboardCursorSync.Crosshair)
    .fiscalYearStartMonth(0)
    .liveNow(false)
    .refresh('1m')
    .time({ from: 'now-6h', to: 'now' })
    .version(1)
    .weekStart('')
    .annotation(
      new dashboard.AnnotationQueryBuilder()
        .name('Annotations & Alerts')
        .builtIn(1)
        .datasource({ type: 'grafana', uid: '-- Grafana --' })
        .enable(true)
        .hide(true)
        .iconColor('rgba(0, 211, 255, 1)')
        .type('dashboard'),
    )
    // Links in the header to the other InfiniBand dashboards, keeping time and variables.
    .link(
      new dashboard.DashboardLinkBuilder('InfiniBand dashboards')
        .type(dashboard.DashboardLinkType.Dashboards)
        .tags(['infiniband'])
        .asDropdown(false)
        .includeVars(true)
        .keepTime(true)
        .targetBlank(false)
        .icon('external link')
        .tooltip('')
        .url(''),
    );
  for (const variable of d.variables) builder.withVariable(variable);
  let id = 1;
  for (const row of d.rows) {
    builder.withRow(new dashboard.RowBuilder(row.title).id(id++));
    for (const spec of row.panels) builder.withPanel(spec.type === 'text' ? buildNote(spec, id++) : buildPanel(spec, id++));
  }
  return linksInHeader(builder.build());
}

/**
 * The one step the SDK cannot express. Its DashboardLinkBuilder starts from the schema default
 * `placement: "inControlsMenu"` (the only value the schema allows), which Grafana 12 renders inside
 * the controls dropdown; a link without `placement` shows in the dashboard header, where it is
 * meant to be, and no builder method removes the field. So it is deleted after build().
 */
function linksInHeader(model: dashboard.Dashboard): dashboard.Dashboard {
  for (const link of model.links ?? []) delete link.placement;
  return model;
}

/** The JSON file of a dashboard, as committed under dashboards/. */
export const render = (model: dashboard.Dashboard): string => JSON.stringify(model, null, 2) + '\n';
