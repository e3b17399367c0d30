// The dashboards follow Grafana's conventions and query only metrics the exporter serves.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { allMetrics } from '../../src/metrics/catalog.js';
import { PMA_COUNTERS } from '../../src/model/pma-counters.js';
import { PROJECT_ROOT } from '../support/trees.js';
import { DIAG_METRICS } from './contract.js';
import {
  DASHBOARD_DIR,
  DATASOURCE_REF,
  allPanels,
  emptyWhenHealthy,
  loadDashboards,
  metricNames,
  needsDiag,
  needsExpectation,
  needsHour,
  needsModule,
  needsPcie,
  queries,
  queryPanels,
  selectors,
  variableQuery,
} from './model.js';

const RULES_DIR = path.join(PROJECT_ROOT, 'rules');
const loaded = loadDashboards();
const byFile = Object.fromEntries(loaded.map((d) => [d.file, d.model]));
const overview = byFile['infiniband-overview.json']!;
const host = byFile['infiniband-host.json']!;
const fabric = byFile['infiniband-fabric.json']!;
/** The series the shipped recording rules record (rules/*.yml). */
const RECORDED = readdirSync(RULES_DIR)
  .filter((file) => file.endsWith('.yml'))
  .flatMap((file) => {
    const rules = parseYaml(readFileSync(path.join(RULES_DIR, file), 'utf8')) as { groups: { rules: { record?: string }[] }[] };
    return rules.groups.flatMap((group) => group.rules.flatMap((rule) => (rule.record ? [rule.record] : [])));
  });
// Every metric of the exporter's catalog (fabric mode's included), the shipped recording rules'
// series, and Prometheus's own `up`.
const KNOWN_METRICS = new Set([...allMetrics().map((m) => m.name), ...RECORDED, 'up']);

describe.each(loaded)('dashboards: $file', ({ text, model }) => {
  it('is a provisionable dashboard of the current schema with a stable uid', () => {
    expect(model.schemaVersion).toBe(42);
    expect(model.id).toBeNull();
    expect(model.uid).toMatch(/^[a-z0-9-]{1,40}$/);
    expect(model.tags).toContain('infiniband');
    expect(model.title).toMatch(/^InfiniBand \/ /);
    expect(model.description).toBeTruthy();
  });

  it('uses the datasource variable everywhere and no import placeholders', () => {
    expect(text).not.toContain('${DS_');
    expect(text).not.toContain('__inputs');
    const [first, ...rest] = model.templating.list;
    expect(first).toMatchObject({ name: 'datasource', type: 'datasource', query: 'prometheus' });
    expect(rest.map((v) => v.name)).toContain('job');
    for (const variable of rest) {
      expect(variable.type, variable.name).toBe('query');
      expect(variable.datasource, variable.name).toEqual(DATASOURCE_REF);
    }
    for (const panel of queryPanels(model)) {
      expect(panel.datasource, panel.title).toEqual(DATASOURCE_REF);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource, `${panel.title} ${target.refId}`).toEqual(DATASOURCE_REF);
    }
  });

  it('has unique panel ids and a grid without overlaps', () => {
    const panels = allPanels(model);
    const ids = panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const { title, gridPos: g } of panels) {
      expect(g.w, title).toBeGreaterThan(0);
      expect(g.h, title).toBeGreaterThan(0);
      expect(g.x, title).toBeGreaterThanOrEqual(0);
      expect(g.x + g.w, title).toBeLessThanOrEqual(24);
    }
    for (const [i, a] of panels.entries()) {
      for (const b of panels.slice(i + 1)) {
        const overlap =
          a.gridPos.x < b.gridPos.x + b.gridPos.w &&
          b.gridPos.x < a.gridPos.x + a.gridPos.w &&
          a.gridPos.y < b.gridPos.y + b.gridPos.h &&
          b.gridPos.y < a.gridPos.y + a.gridPos.h;
        expect(overlap, `${a.title} overlaps ${b.title}`).toBe(false);
      }
    }
    const titles = queryPanels(model).map((p) => p.title);
    expect(new Set(titles).size, 'panel titles are unique (the README refers to them)').toBe(titles.length);
  });

  it('gives every panel a unit and a description', () => {
    for (const panel of queryPanels(model)) {
      expect(panel.fieldConfig?.defaults?.unit, panel.title).toMatch(/^\w+$/);
      expect((panel.description ?? '').length, panel.title).toBeGreaterThan(30);
    }
  });

  it('names table value columns the way Grafana does ("Value" for one query, "Value #<refId>" for several)', () => {
    for (const panel of queryPanels(model).filter((p) => p.type === 'table')) {
      const refIds = (panel.targets ?? []).map((t) => t.refId);
      const named = JSON.stringify([panel.fieldConfig?.overrides ?? [], panel.transformations ?? []]).match(/Value #\w+/g) ?? [];
      for (const name of named) {
        expect(refIds.length, `${panel.title}: ${name} with one query`).toBeGreaterThan(1);
        expect(refIds, `${panel.title}: ${name}`).toContain(name.slice('Value #'.length));
      }
      for (const target of panel.targets ?? []) expect(target, panel.title).toMatchObject({ instant: true, range: false, format: 'table' });
    }
  });

  it('links to the other InfiniBand dashboards, keeping time range and variables', () => {
    expect(model.links).toContainEqual(
      expect.objectContaining({ type: 'dashboards', tags: ['infiniband'], includeVars: true, keepTime: true }),
    );
  });

  it('filters every selector by $job and $instance, and hard-codes no host', () => {
    const exprs = [
      ...queries([{ file: '', text, model }]).map((q) => q.target.expr),
      ...model.templating.list.flatMap((v) => {
        const q = variableQuery(v);
        return q && v.name !== 'job' && v.name !== 'instance' ? [q.selector] : [];
      }),
    ];
    for (const expr of exprs) {
      expect(expr).not.toMatch(/instance\s*=~?\s*"(?!\$instance")/);
      for (const { metric, matchers } of selectors(expr)) {
        expect(matchers, `${metric} in ${expr}`).toContain('job=~"$job"');
        expect(matchers, `${metric} in ${expr}`).toContain('instance=~"$instance"');
      }
    }
  });

  it('uses $__rate_interval in every rate and only dashboard-controlled ranges', () => {
    for (const { panel, target } of queries([{ file: '', text, model }])) {
      const where = `${panel.title} ${target.refId}`;
      for (const match of target.expr.matchAll(
        /\b(rate|irate|increase|changes|max_over_time|min_over_time)\((?:[^()[]|\([^()]*\))*\[([^\]]*)\]/g,
      )) {
        const [, fn, range] = match;
        if (fn === 'rate' || fn === 'irate') expect(range, where).toBe('$__rate_interval');
        else expect(['$__rate_interval', '$__range', '$__range:'], where).toContain(range);
      }
      // No hard-coded windows anywhere, e.g. [5m].
      for (const [, range] of target.expr.matchAll(/\[([^\]]*)\]/g)) expect(range, where).toMatch(/^\$__(rate_interval|range:?)$/);
    }
  });

  it('queries only metrics of the exporter catalog or Prometheus itself', () => {
    const used = queries([{ file: '', text, model }]).flatMap((q) => metricNames(q.target.expr));
    const fromVariables = model.templating.list.flatMap((v) => (variableQuery(v) ? metricNames(variableQuery(v)!.selector) : []));
    for (const name of [...used, ...fromVariables]) expect(KNOWN_METRICS.has(name), name).toBe(true);
  });

  it('marks the panels that use diag metrics as needing the diag collector', () => {
    const diagOnly = new Set([...DIAG_METRICS, 'infiniband_exporter_command_timeouts_total']);
    for (const panel of queryPanels(model)) {
      const usesDiag = (panel.targets ?? []).some((t) => metricNames(t.expr).some((n) => diagOnly.has(n)));
      expect(needsDiag(panel), panel.title).toBe(usesDiag);
    }
  });
});

describe('dashboards: content', () => {
  const exprsOf = (model: typeof host) =>
    queries([{ file: '', text: '', model }])
      .map((q) => q.target.expr)
      .join('\n');

  it('have distinct uids', () => {
    expect(overview.uid).toBe('infiniband-overview');
    expect(host.uid).toBe('infiniband-host');
    expect(fabric.uid).toBe('infiniband-fabric');
  });

  it('have titles that tell the hosts overview from the fabric dashboard', () => {
    expect([overview.title, host.title, fabric.title]).toEqual(['InfiniBand / Hosts overview', 'InfiniBand / Host', 'InfiniBand / Fabric']);
  });

  it('the fabric dashboard covers nodes and links, subnet managers, unhealthy links, errors, congestion, utilisation and IPoIB groups', () => {
    const exprs = exprsOf(fabric);
    for (const name of [
      'infiniband_fabric_node_info',
      'infiniband_fabric_link_info',
      'infiniband_fabric_subnet_manager_info',
      'infiniband_fabric_port_physical_state_id',
      'infiniband_fabric_port_link_degraded',
      'infiniband_fabric_port_state_id',
      'infiniband_fabric_port_symbol_errors_total',
      'infiniband_fabric_port_transmit_wait_total',
      'infiniband_fabric_port_transmit_data_bytes_total',
      'infiniband_fabric_port_rate_bytes_per_second',
      'infiniband_fabric_multicast_group_rate_bytes_per_second',
      'infiniband_fabric_multicast_group_mtu_bytes',
      'infiniband_fabric_duplicate_lids',
    ]) {
      expect(exprs, name).toContain(name);
    }
    const vars = Object.fromEntries(fabric.templating.list.map((v) => [v.name, v]));
    expect(vars.instance).toMatchObject({ multi: true, includeAll: true, allValue: '.*' });
  });

  it('the host dashboard selects one host, its devices and ports', () => {
    const vars = Object.fromEntries(host.templating.list.map((v) => [v.name, v]));
    expect(vars.instance).toMatchObject({ multi: false, includeAll: false });
    expect(vars.device).toMatchObject({ multi: true, includeAll: true, allValue: '.*' });
    expect(vars.port).toMatchObject({ multi: true, includeAll: true, allValue: '.*' });
    expect(vars.job).not.toHaveProperty('allValue');
  });

  it('the host dashboard shows every PMA error counter as a rate, locally and for the peer', () => {
    const exprs = exprsOf(host);
    const errorCounters = PMA_COUNTERS.filter((c) => c.error).map((c) => c.name);
    expect(errorCounters.length).toBeGreaterThanOrEqual(13);
    for (const name of errorCounters) {
      expect(exprs, name).toMatch(new RegExp(`rate\\(infiniband_port_${name}_total\\{`));
      expect(exprs, `peer ${name}`).toMatch(new RegExp(`rate\\(infiniband_port_peer_${name}_total\\{`));
    }
    for (const name of [
      'infiniband_port_pma_saturated',
      'infiniband_port_hw_stat_total',
      'infiniband_ipoib_info',
      'infiniband_ipoib_mtu_bytes',
      'infiniband_port_state_id',
      'infiniband_port_physical_state_id',
      'infiniband_port_link_width_expected_lanes',
      'infiniband_port_lane_rate_expected_bytes_per_second',
      'infiniband_port_data_rate_bytes_per_second',
      'infiniband_port_transmit_packets_total',
      'infiniband_port_receive_packets_total',
    ]) {
      expect(exprs, name).toContain(name);
    }
  });

  it('the overview covers states, degraded links, subnet manager, IPoIB, firmware, errors, traffic and exporter health', () => {
    const exprs = exprsOf(overview);
    for (const name of [
      'infiniband_port_state_id',
      'infiniband_port_physical_state_id',
      'infiniband_port_link_degraded',
      'infiniband_subnet_manager_info',
      'infiniband_subnet_manager_reachable',
      'infiniband_subnet_manager_priority',
      'infiniband_ipoib_mtu_bytes',
      'infiniband_device_info',
      'infiniband_port_peer_symbol_errors_total',
      'infiniband_port_transmit_data_bytes_total',
      'infiniband_port_data_rate_bytes_per_second',
      'up{',
      'infiniband_exporter_collector_success',
      'infiniband_exporter_last_collection_timestamp_seconds',
      'infiniband_exporter_read_errors_total',
    ]) {
      expect(exprs, name).toContain(name);
    }
  });

  it('the host and fabric dashboards have a Link health row: bit error rate, PCIe link and modules on the host, bit error rate on the fabric', () => {
    const rowOf = (model: typeof host) => {
      const rows = model.panels;
      const start = rows.findIndex((p) => p.type === 'row' && p.title === 'Link health');
      expect(start, model.uid).toBeGreaterThanOrEqual(0);
      const end = rows.findIndex((p, i) => i > start && p.type === 'row');
      return rows.slice(start + 1, end < 0 ? undefined : end);
    };
    const hostRow = rowOf(host);
    const hostExprs = hostRow.flatMap((p) => (p.targets ?? []).map((t) => t.expr)).join('\n');
    expect(RECORDED).toEqual(expect.arrayContaining(['infiniband:port_symbol_ber:1h', 'infiniband:fabric_port_symbol_ber:1h']));
    for (const name of [
      'infiniband:port_symbol_ber:1h',
      'infiniband_device_pcie_link_width_lanes',
      'infiniband_device_pcie_link_width_max_lanes',
      'infiniband_device_pcie_link_transfer_rate',
      'infiniband_device_pcie_link_max_transfer_rate',
      'infiniband_device_pcie_bandwidth_bytes_per_second',
      'infiniband_device_pcie_link_degraded',
      'infiniband_device_pcie_aer_errors_total',
      'infiniband_port_pcie_limited',
      'infiniband_port_module_info',
      'infiniband_port_module_temperature_celsius',
      'infiniband_port_module_rx_power_dbm',
      'infiniband_port_module_tx_power_dbm',
      'infiniband_port_module_threshold',
    ]) {
      expect(hostExprs, name).toContain(name);
    }
    // Every panel of the row says what it needs, so that "No data" reads as what it is.
    for (const panel of hostRow.filter((p) => p.type !== 'text'))
      expect(needsHour(panel) || needsPcie(panel) || needsModule(panel), panel.title).toBe(true);

    const fabricRow = rowOf(fabric);
    const fabricExprs = fabricRow.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    expect(fabricExprs.join('\n')).toContain('infiniband:fabric_port_symbol_ber:1h');
    // The fabric rule keeps no job or instance: each query keeps the ports of the selected exporters.
    for (const expr of fabricExprs.filter((e) => e.includes('infiniband:fabric_port_symbol_ber:1h'))) {
      expect(expr).toContain(
        'infiniband:fabric_port_symbol_ber:1h > 0 and on (node_guid, port) max by (node_guid, port) (infiniband_fabric_port_state_id{job=~"$job", instance=~"$instance"})',
      );
    }
    // No module or PCIe panel (the fabric mode reads neither): a note sends the reader to the host dashboard.
    expect(fabricExprs.join('\n')).not.toMatch(/module|pcie/);
    const note = fabricRow.find((p) => p.type === 'text') as { options?: { content?: string } } | undefined;
    expect(note?.options?.content).toContain('(/d/infiniband-host/infiniband-host)');
  });

  it('overview tables link each host to the host dashboard', () => {
    const text = JSON.stringify(overview);
    expect(text).toContain(
      '/d/infiniband-host/infiniband-host?${datasource:queryparam}&var-job=${__data.fields.job}&var-instance=${__data.fields.instance}',
    );
  });

  it('the README describes every panel and names the ones that may be empty', () => {
    const readme = readFileSync(path.join(DASHBOARD_DIR, 'README.md'), 'utf8');
    for (const model of [overview, host, fabric]) {
      for (const panel of queryPanels(model)) {
        expect(readme, panel.title).toContain(`**${panel.title}**`);
      }
      const section = (heading: string) => (readme.split(`## ${heading}`)[1]?.split('\n## ')[0] ?? '').replace(/\s+/g, ' ');
      for (const panel of queryPanels(model).filter(needsDiag))
        expect(section('Panels that need the diag collector'), panel.title).toContain(panel.title);
      for (const panel of queryPanels(model).filter(emptyWhenHealthy))
        expect(section('Panels that are empty on a healthy fabric'), panel.title).toContain(panel.title);
      for (const panel of queryPanels(model).filter(needsExpectation))
        expect(section('Panels that need an expectation'), panel.title).toContain(panel.title);
      for (const panel of queryPanels(model).filter(needsHour))
        expect(section('Panels that need an hour of data'), panel.title).toContain(panel.title);
      for (const panel of queryPanels(model).filter(needsPcie))
        expect(section('Panels that need the PCIe attributes'), panel.title).toContain(panel.title);
      for (const panel of queryPanels(model).filter(needsModule))
        expect(section('Panels that need the module collector'), panel.title).toContain(panel.title);
    }
  });
});

describe('dashboards: provisioning', () => {
  it('is a file provider (apiVersion 1) for the dashboards folder', () => {
    const config = parseYaml(readFileSync(path.join(DASHBOARD_DIR, 'provisioning/infiniband.yml'), 'utf8')) as {
      apiVersion: number;
      providers: { name: string; type: string; folder: string; options: { path: string } }[];
    };
    expect(config.apiVersion).toBe(1);
    expect(config.providers).toHaveLength(1);
    expect(config.providers[0]).toMatchObject({ type: 'file', name: expect.any(String), folder: 'InfiniBand' });
    expect(config.providers[0]!.options.path).toMatch(/^\//);
  });
});
