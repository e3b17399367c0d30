// Reading the Grafana dashboards of dashboards/ the way Grafana would: panels, queries, variables,
// and the variable substitution Grafana performs before a query reaches Prometheus.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

export const DASHBOARD_DIR = fileURLToPath(new URL('../../dashboards/', import.meta.url));
export const DASHBOARD_FILES = [
  'infiniband-overview.json',
  'infiniband-host.json',
  'infiniband-fabric.json',
  'infiniband-jobs.json',
] as const;

/** Phrases of panel descriptions that say a panel may legitimately show nothing (see dashboards/README.md). */
export const NEEDS_DIAG = 'Needs the diag collector';
export const EMPTY_WHEN_HEALTHY = 'Empty on a healthy fabric';
export const NEEDS_EXPECTATION = 'Needs an expectation for the port';
export const NEEDS_HOUR = 'Needs an hour of data for the link';
export const NEEDS_PCIE = 'Needs the PCIe link attributes in sysfs';
export const NEEDS_MODULE = 'Needs the module collector';

export const DATASOURCE_REF = { type: 'prometheus', uid: '${datasource}' };

export interface Target {
  refId: string;
  expr: string;
  range?: boolean;
  instant?: boolean;
  format?: string;
  datasource?: unknown;
  legendFormat?: string;
}

export interface Panel {
  id: number;
  type: string;
  title: string;
  description?: string;
  datasource?: unknown;
  gridPos: { h: number; w: number; x: number; y: number };
  fieldConfig?: { defaults?: { unit?: string; [key: string]: unknown }; overrides?: unknown[] };
  targets?: Target[];
  panels?: Panel[];
  [key: string]: unknown;
}

export interface Variable {
  name: string;
  type: string;
  query?: unknown;
  definition?: string;
  datasource?: unknown;
  multi?: boolean;
  includeAll?: boolean;
  allValue?: string;
}

export interface Dashboard {
  uid: string;
  title: string;
  id: null | number;
  schemaVersion: number;
  tags: string[];
  description?: string;
  links: { type: string; tags?: string[]; includeVars?: boolean; keepTime?: boolean }[];
  templating: { list: Variable[] };
  panels: Panel[];
  [key: string]: unknown;
}

export interface LoadedDashboard {
  file: string;
  text: string;
  model: Dashboard;
}

export function loadDashboards(): LoadedDashboard[] {
  return DASHBOARD_FILES.map((file) => {
    const text = readFileSync(path.join(DASHBOARD_DIR, file), 'utf8');
    return { file, text, model: JSON.parse(text) as Dashboard };
  });
}

/** Every panel, rows included, with the panels of collapsed rows flattened in. */
export function allPanels(dashboard: Dashboard): Panel[] {
  return dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
}

/** Panels that query data (everything but rows and notes). */
export function queryPanels(dashboard: Dashboard): Panel[] {
  return allPanels(dashboard).filter((panel) => panel.type !== 'row' && panel.type !== 'text');
}

export const needsDiag = (panel: Panel): boolean => (panel.description ?? '').includes(NEEDS_DIAG);
export const emptyWhenHealthy = (panel: Panel): boolean => (panel.description ?? '').includes(EMPTY_WHEN_HEALTHY);
export const needsExpectation = (panel: Panel): boolean => (panel.description ?? '').includes(NEEDS_EXPECTATION);
export const needsHour = (panel: Panel): boolean => (panel.description ?? '').includes(NEEDS_HOUR);
export const needsPcie = (panel: Panel): boolean => (panel.description ?? '').includes(NEEDS_PCIE);
export const needsModule = (panel: Panel): boolean => (panel.description ?? '').includes(NEEDS_MODULE);
/** Link health panels: they need an hour of a link's data, the adapters' PCIe attributes or the module collector. */
export const needsLinkPhysics = (panel: Panel): boolean => needsHour(panel) || needsPcie(panel) || needsModule(panel);

/** The PromQL text of a query variable (`label_values(<selector>, <label>)`). */
export function variableQuery(variable: Variable): { selector: string; label: string } | undefined {
  if (variable.type !== 'query') return undefined;
  const text = typeof variable.query === 'string' ? variable.query : (variable.query as { query?: string } | undefined)?.query;
  const match = /^label_values\((.+),\s*(\w+)\)$/s.exec(text ?? '');
  if (!match) throw new Error(`variable ${variable.name}: unsupported query ${JSON.stringify(text)}`);
  return { selector: match[1]!, label: match[2]! };
}

/** Values given to the dashboard variables, the way Grafana substitutes them (regex-ready text). */
export type VariableValues = Record<string, string>;

/**
 * Substitute Grafana's variables in a query: the built-in intervals and every dashboard variable,
 * in the `$name` and `${name}` forms. A variable left over is an error (Grafana would send it raw).
 */
export function substitute(expr: string, values: VariableValues): string {
  const out = expr.replace(/\$\{(\w+)(?::\w+)?\}|\$(\w+)/g, (whole, braced: string | undefined, bare: string | undefined) => {
    const name = (braced ?? bare)!;
    const value = values[name];
    if (value === undefined) throw new Error(`no value for variable ${whole} in ${expr}`);
    return value;
  });
  return out;
}

/** Escape a literal for a PromQL regex matcher inside double quotes (what Grafana does for `=~"$var"`). */
export function regexLiteral(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, (c) => `\\\\${c}`);
}

/** Metric names used in an expression: every identifier directly followed by a label selector. */
export function metricNames(expr: string): string[] {
  const names = new Set<string>();
  for (const match of expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{/g)) names.add(match[1]!);
  for (const match of expr.matchAll(/\binfiniband_[a-z0-9_]+\b/g)) names.add(match[0]);
  // Recorded series (level:metric:operations), used bare where their rule keeps no job or instance.
  for (const match of expr.matchAll(/\binfiniband:[a-z0-9_:]+/g)) names.add(match[0]);
  return [...names];
}

/** Label matchers of every selector `metric{...}` in an expression. */
export function selectors(expr: string): { metric: string; matchers: string }[] {
  return [...expr.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\s*\{([^}]*)\}/g)].map((m) => ({ metric: m[1]!, matchers: m[2]! }));
}

export interface QueryRef {
  file: string;
  panel: Panel;
  target: Target;
}

export function queries(loaded: LoadedDashboard[]): QueryRef[] {
  return loaded.flatMap(({ file, model }) =>
    queryPanels(model).flatMap((panel) => (panel.targets ?? []).map((target) => ({ file, panel, target }))),
  );
}
