// The shipped alerting rules, their promtool unit tests, the runbooks and the deploy configs.
// Structural checks run everywhere; promtool and amtool checks need the Debian packages
// prometheus and prometheus-alertmanager (skipped with a reason without them).
import { readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { requireSystemTools } from '../support/system.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES_DIR = path.join(ROOT, 'rules');
const RULE_TESTS_DIR = path.join(RULES_DIR, 'tests');
const RUNBOOKS = path.join(ROOT, 'docs/runbooks.md');
const PROMETHEUS_CONFIG = path.join(ROOT, 'deploy/prometheus/prometheus.yml');
const ALERTMANAGER_CONFIG = path.join(ROOT, 'deploy/alertmanager/alertmanager.yml');

type Severity = 'critical' | 'warning' | 'info';

/** The alert contract of DESIGN.md: every alert, exactly this name and severity. */
const CONTRACT: Record<string, Severity> = {
  InfiniBandPortStuckInitializing: 'critical',
  InfiniBandSubnetManagerUnreachable: 'critical',
  InfiniBandSubnetManagerChanged: 'warning',
  InfiniBandPortLinkDown: 'critical',
  InfiniBandLinkWidthDegraded: 'warning',
  InfiniBandLinkSpeedDegraded: 'warning',
  InfiniBandLinkFlapping: 'warning',
  InfiniBandPhysicalErrors: 'warning',
  InfiniBandReceiveErrors: 'warning',
  InfiniBandTransmitDiscards: 'warning',
  InfiniBandCongestion: 'info',
  InfiniBandCounterSaturated: 'warning',
  InfiniBandIPoIBSuboptimalMode: 'info',
  InfiniBandIPoIBMTUMismatch: 'warning',
  InfiniBandFirmwareMismatch: 'info',
  InfiniBandPortSilent: 'warning',
  InfiniBandExporterDown: 'critical',
  InfiniBandExporterCollectorFailing: 'warning',
  InfiniBandExporterStale: 'warning',
  InfiniBandLinkBitErrorRateHigh: 'warning',
  InfiniBandPCIeLinkDegraded: 'warning',
  InfiniBandAdapterUnhealthy: 'critical',
  InfiniBandModuleTemperatureHigh: 'warning',
  InfiniBandModuleOpticalPowerLow: 'warning',
};

/** The fabric alert contract of DESIGN.md ("Alerts (fabric)"), in rules/infiniband-fabric-alerts.yml. */
const FABRIC_CONTRACT: Record<string, Severity> = {
  InfiniBandFabricPortDown: 'critical',
  InfiniBandFabricPortStuckInitializing: 'critical',
  InfiniBandFabricLinkDegraded: 'warning',
  InfiniBandFabricPhysicalErrors: 'warning',
  InfiniBandFabricCongestion: 'info',
  InfiniBandFabricPortOutlier: 'warning',
  InfiniBandFabricNodeMissing: 'warning',
  InfiniBandSubnetManagerNotRedundant: 'warning',
  InfiniBandSubnetManagerPriorityTie: 'info',
  InfiniBandMulticastGroupSuboptimal: 'info',
  InfiniBandFabricAddressConflict: 'critical',
  InfiniBandFabricLinkBitErrorRateHigh: 'warning',
  // "Cabling plan and fabric map"
  InfiniBandFabricCableMiswired: 'warning',
  InfiniBandFabricPlannedLinkMissing: 'warning',
  InfiniBandFabricRailViolation: 'warning',
  // "Congestion and jobs"
  InfiniBandFabricLinkCongested: 'warning',
  InfiniBandJobNetworkImpaired: 'warning',
  InfiniBandFabricLinkBad: 'warning',
};
const FABRIC_RULES = path.join(RULES_DIR, 'infiniband-fabric-alerts.yml');
const ALL_CONTRACT: Record<string, Severity> = { ...CONTRACT, ...FABRIC_CONTRACT };

/** RoCE/Ethernet ports must never trigger these: their expressions join on the IB link layer. */
const INFINIBAND_ONLY = ['InfiniBandPortStuckInitializing', 'InfiniBandSubnetManagerUnreachable', 'InfiniBandSubnetManagerChanged'];

/** Where each severity is delivered by deploy/alertmanager/alertmanager.yml. */
const RECEIVER: Record<Severity, string> = { critical: 'pager', warning: 'ticket', info: 'no-notification' };

// --- reading the YAML files with their shape checked --------------------------------------------

type Node = Record<string, unknown>;

function record(value: unknown, where: string): Node {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where}: expected a mapping`);
  return value as Node;
}

function list(value: unknown, where: string): unknown[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) throw new Error(`${where}: expected a list`);
  return value;
}

function text(value: unknown, where: string): string {
  if (typeof value !== 'string') throw new Error(`${where}: expected a string`);
  return value;
}

function strings(value: unknown, where: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, item] of Object.entries(record(value ?? {}, where))) out[key] = text(item, `${where}.${key}`);
  return out;
}

const yamlFiles = (dir: string): string[] =>
  readdirSync(dir)
    .filter((name) => name.endsWith('.yml'))
    .sort()
    .map((name) => path.join(dir, name));

const loadYaml = (file: string): Node => record(parse(readFileSync(file, 'utf8')), file);

interface AlertRule {
  file: string;
  alert: string;
  expr: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** Rules of every kind (alerts and recording rules) per rules file, as promtool counts them. */
const ruleCounts = new Map<string, number>();

function loadAlerts(): AlertRule[] {
  const alerts: AlertRule[] = [];
  for (const file of yamlFiles(RULES_DIR)) {
    for (const [g, group] of list(loadYaml(file).groups, `${file} groups`).entries()) {
      for (const [r, rule] of list(record(group, `${file} group ${g}`).rules, `${file} group ${g} rules`).entries()) {
        const where = `${file} group ${g} rule ${r}`;
        const node = record(rule, where);
        ruleCounts.set(file, (ruleCounts.get(file) ?? 0) + 1);
        if (node.alert === undefined) continue;
        alerts.push({
          file,
          alert: text(node.alert, `${where} alert`),
          expr: text(node.expr, `${where} expr`),
          labels: strings(node.labels, `${where} labels`),
          annotations: strings(node.annotations, `${where} annotations`),
        });
      }
    }
  }
  return alerts;
}

interface ExpectedAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

interface AlertCase {
  file: string;
  alertname: string;
  evalTime: string;
  expected: ExpectedAlert[];
}

interface RuleTestFile {
  file: string;
  ruleFiles: string[];
  cases: AlertCase[];
}

function loadRuleTests(): RuleTestFile[] {
  return yamlFiles(RULE_TESTS_DIR).map((file) => {
    const document = loadYaml(file);
    const cases: AlertCase[] = [];
    for (const [t, group] of list(document.tests, `${file} tests`).entries()) {
      for (const [c, item] of list(record(group, `${file} test ${t}`).alert_rule_test, `${file} test ${t}`).entries()) {
        const where = `${file} test ${t} case ${c}`;
        const node = record(item, where);
        cases.push({
          file,
          alertname: text(node.alertname, `${where} alertname`),
          evalTime: text(node.eval_time, `${where} eval_time`),
          expected: list(node.exp_alerts, `${where} exp_alerts`).map((alert, a) => {
            const expectation = record(alert, `${where} alert ${a}`);
            return {
              labels: strings(expectation.exp_labels, `${where} alert ${a} exp_labels`),
              annotations: strings(expectation.exp_annotations, `${where} alert ${a} exp_annotations`),
            };
          }),
        });
      }
    }
    const ruleFiles = list(document.rule_files, `${file} rule_files`).map((rule) =>
      path.resolve(path.dirname(file), text(rule, `${file} rule_files`)),
    );
    return { file, ruleFiles, cases };
  });
}

/** GitHub's anchor for a Markdown heading. */
const anchorOf = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');

const alerts = loadAlerts();
const ruleTests = loadRuleTests();
const cases = ruleTests.flatMap((testFile) => testFile.cases);
const runbooks = readFileSync(RUNBOOKS, 'utf8');
const runbookAnchors = new Set([...runbooks.matchAll(/^#{1,6} (.+)$/gm)].map((match) => anchorOf(match[1] ?? '')));
const rulesHeader = (file: string): string =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('#'))
    .join('\n');

/** The one runbook base every runbook_url uses (everything before the '#'). */
const runbookBases = new Set(alerts.map((rule) => (rule.annotations.runbook_url ?? '').split('#')[0]));
const runbookBase = [...runbookBases][0] ?? '';

// --- structure ----------------------------------------------------------------------------------

describe('alert rules against the contract', () => {
  it('has every contract alert exactly once, with its severity, and no other alert', () => {
    expect(alerts.map((rule) => rule.alert).sort()).toEqual(Object.keys(ALL_CONTRACT).sort());
    for (const rule of alerts) expect(rule.labels.severity, rule.alert).toBe(ALL_CONTRACT[rule.alert]);
  });

  it('keeps the fabric alerts in their own file, so a site can load the host rules alone', () => {
    for (const rule of alerts) {
      expect(rule.file === FABRIC_RULES, rule.alert).toBe(rule.alert in FABRIC_CONTRACT);
      if (rule.file !== FABRIC_RULES) expect(rule.expr, rule.alert).not.toMatch(/infiniband_fabric_|infiniband_fabric_port:/);
    }
  });

  it.each(alerts.map((rule) => [rule.alert, rule] as const))('%s has a summary sentence, a description and a runbook_url', (name, rule) => {
    const { summary, description, runbook_url: runbookUrl } = rule.annotations;
    expect(summary, `${name} summary`).toMatch(/^[A-Z][^{}]*\.$/);
    expect(description, `${name} description`).toMatch(/\S/);
    expect(runbookUrl).toBe(`${runbookBase}#${name.toLowerCase()}`);
  });

  it('points every runbook_url at one base, documented with a sed command in the rules and the runbooks', () => {
    expect([...runbookBases]).toEqual([runbookBase]);
    expect(runbookBase).toMatch(/^https:\/\/\S+\/docs\/runbooks\.md$/);
    const sed = `sed -i 's|${runbookBase}|`;
    for (const file of new Set(alerts.map((rule) => rule.file))) {
      expect(rulesHeader(file)).toContain(runbookBase);
      expect(rulesHeader(file)).toContain(sed);
    }
    expect(runbooks).toContain(sed);
  });

  it('lists every alert in the README tables with its severity and summary', () => {
    const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
    const rows = new Map([...readme.matchAll(/^\| `(InfiniBand\w+)` \| (\w+) \| (.+) \|$/gm)].map((m) => [m[1]!, `${m[2]} ${m[3]}`]));
    expect([...rows.keys()].sort()).toEqual(alerts.map((rule) => rule.alert).sort());
    for (const rule of alerts) expect(rows.get(rule.alert), rule.alert).toBe(`${rule.labels.severity} ${rule.annotations.summary}`);
  });

  it('has a runbook section for every runbook_url anchor', () => {
    for (const rule of alerts) expect(runbookAnchors, rule.alert).toContain(rule.alert.toLowerCase());
  });

  it('names host, device, port and value in the description of every host port alert', () => {
    const portAlerts = new Set(
      cases.filter((c) => c.expected.some((alert) => 'device' in alert.labels && 'port' in alert.labels)).map((c) => c.alertname),
    );
    expect(portAlerts.size).toBeGreaterThan(10);
    for (const rule of alerts.filter((r) => portAlerts.has(r.alert))) {
      for (const needle of ['$labels.instance', '$labels.device', '$labels.port', '$value']) {
        expect(rule.annotations.description, rule.alert).toContain(needle);
      }
    }
  });

  it('names host, device and value in the description of every alert on a whole adapter', () => {
    const deviceAlerts = new Set(
      cases.filter((c) => c.expected.some((alert) => 'device' in alert.labels && !('port' in alert.labels))).map((c) => c.alertname),
    );
    expect([...deviceAlerts].sort()).toEqual(['InfiniBandAdapterUnhealthy', 'InfiniBandPCIeLinkDegraded']);
    for (const rule of alerts.filter((r) => deviceAlerts.has(r.alert))) {
      for (const needle of ['$labels.instance', '$labels.device', '$value'])
        expect(rule.annotations.description, rule.alert).toContain(needle);
    }
  });

  it('names the node (name from the node info, else its GUID), the port and the values in every fabric port alert', () => {
    const portAlerts = new Set(
      cases.filter((c) => c.expected.some((alert) => 'node_guid' in alert.labels && 'port' in alert.labels)).map((c) => c.alertname),
    );
    expect(portAlerts.size).toBe(12);
    for (const rule of alerts.filter((r) => portAlerts.has(r.alert))) {
      const description = rule.annotations.description ?? '';
      for (const needle of ['$labels.node_guid', '$labels.port', 'infiniband_fabric_node_info{node_guid=%q}', '.node_name', '.node_desc']) {
        expect(description, rule.alert).toContain(needle);
      }
      expect(description, rule.alert).toMatch(/\$value|\| query/);
    }
  });

  it('fires fabric alerts once per port, group or subnet: no instance or job label survives', () => {
    const fabricCases = cases.filter((c) => c.alertname in FABRIC_CONTRACT);
    expect(fabricCases.flatMap((c) => c.expected).length).toBeGreaterThan(10);
    for (const c of fabricCases) {
      for (const alert of c.expected) {
        expect(alert.labels, `${c.alertname} at ${c.evalTime}`).not.toHaveProperty('instance');
        expect(alert.labels, `${c.alertname} at ${c.evalTime}`).not.toHaveProperty('job');
      }
    }
  });

  it.each(INFINIBAND_ONLY)('%s only considers InfiniBand link-layer ports', (name) => {
    const rule = alerts.find((r) => r.alert === name);
    expect(rule?.expr).toMatch(/and on\(instance, job, device, port\)\s+infiniband_port_info\{link_layer="InfiniBand"\}/);
  });

  it('reads counters only through rate(), increase() or resets()', () => {
    for (const rule of alerts) {
      expect(rule.expr, rule.alert).not.toMatch(/\b(i?delta|irate)\(/);
      for (const match of rule.expr.matchAll(/infiniband_\w+_total\b/g)) {
        const before = rule.expr.slice(0, match.index);
        expect(before, `${rule.alert}: ${match[0]}`).toMatch(/\b(rate|increase|resets)\($/);
      }
    }
  });
});

describe('promtool unit tests of the rules', () => {
  it('load only shipped rule files, and every shipped rule file is tested', () => {
    const shipped = yamlFiles(RULES_DIR);
    for (const testFile of ruleTests) for (const file of testFile.ruleFiles) expect(shipped, testFile.file).toContain(file);
    expect([...new Set(ruleTests.flatMap((t) => t.ruleFiles))].sort()).toEqual(shipped);
  });

  it.each(Object.keys(ALL_CONTRACT))('cover %s with a firing case and a case that must not fire', (name) => {
    const mine = cases.filter((c) => c.alertname === name);
    expect(mine.filter((c) => c.expected.length > 0).length, `${name} firing cases`).toBeGreaterThan(0);
    expect(mine.filter((c) => c.expected.length === 0).length, `${name} non-firing cases`).toBeGreaterThan(0);
  });

  it('assert the severity and every annotation of each firing alert', () => {
    for (const c of cases) {
      for (const alert of c.expected) {
        const where = `${path.basename(c.file)} ${c.alertname} at ${c.evalTime}`;
        expect(alert.labels.severity, where).toBe(ALL_CONTRACT[c.alertname]);
        expect(Object.keys(alert.annotations).sort(), where).toEqual(['description', 'runbook_url', 'summary']);
        expect(alert.annotations.description, where).not.toContain('{{');
      }
    }
  });
});

describe('deploy configs', () => {
  it('scrape the infiniband job every 15s with the repository rules and a local Alertmanager', () => {
    const config = loadYaml(PROMETHEUS_CONFIG);
    const jobs = list(config.scrape_configs, 'scrape_configs').map((job) => record(job, 'scrape_config'));
    const job = jobs.find((j) => j.job_name === 'infiniband');
    expect(job?.scrape_interval ?? record(config.global, 'global').scrape_interval).toBe('15s');
    // The fabric-mode hosts: their own job, covered by InfiniBandExporterDown.
    const fabric = jobs.find((j) => j.job_name === 'infiniband-fabric');
    expect(fabric?.scrape_interval).toBe('30s');
    const down = alerts.find((rule) => rule.alert === 'InfiniBandExporterDown')!;
    for (const name of jobs.map((j) => text(j.job_name, 'job_name')))
      expect(down.expr, name).toMatch(new RegExp(`job=~"([^"]*\\|)?${name}(\\|[^"]*)?"`));
    const ruleFiles = list(config.rule_files, 'rule_files').map((file) =>
      path.resolve(path.dirname(PROMETHEUS_CONFIG), text(file, 'rule_files')),
    );
    expect(ruleFiles.sort()).toEqual(yamlFiles(RULES_DIR));
    const alertmanagers = list(record(config.alerting, 'alerting').alertmanagers, 'alertmanagers');
    expect(JSON.stringify(alertmanagers)).toContain('"127.0.0.1:9093"');
  });

  it('group per port and silence a host whose exporter is down', () => {
    const config = loadYaml(ALERTMANAGER_CONFIG);
    const groupBy = list(record(config.route, 'route').group_by, 'group_by');
    expect(groupBy).toEqual(expect.arrayContaining(['instance', 'device', 'port']));
    const inhibit = list(config.inhibit_rules, 'inhibit_rules').map((rule) => record(rule, 'inhibit_rule'));
    const whileDown = inhibit.find((rule) => list(rule.source_matchers, 'source_matchers').includes('alertname="InfiniBandExporterDown"'));
    expect(whileDown?.equal).toEqual(['instance']);
    expect(whileDown?.target_matchers).toEqual(['alertname=~"InfiniBand.+"', 'alertname!="InfiniBandExporterDown"']);
  });
});

// --- the real tools -----------------------------------------------------------------------------

const tools = requireSystemTools('rules', { promtool: 'prometheus', amtool: 'prometheus-alertmanager' });

function tool(name: 'promtool' | 'amtool'): string {
  const found = tools.paths[name];
  if (found === undefined) throw new Error(`${name} not found`);
  return found;
}

/** Runs a tool with an argument array; the output is kept for the assertion message. */
async function run(name: 'promtool' | 'amtool', args: string[], cwd = ROOT): Promise<{ exitCode: number | undefined; output: string }> {
  const result = await execa(tool(name), args, { cwd, reject: false, all: true, timeout: 90_000 });
  return { exitCode: result.exitCode, output: result.all ?? '' };
}

describe.skipIf(tools.skipReason !== undefined)('rules and configs through promtool and amtool', () => {
  it('promtool check rules: valid and lint-clean', async () => {
    const result = await run('promtool', ['check', 'rules', '--lint=all', '--lint-fatal', ...yamlFiles(RULES_DIR)]);
    expect(result.exitCode, result.output).toBe(0);
    for (const count of ruleCounts.values()) expect(result.output).toContain(`SUCCESS: ${count} rules found`);
  });

  it('promtool test rules: every unit test passes', async () => {
    const files = yamlFiles(RULE_TESTS_DIR);
    const result = await run('promtool', ['test', 'rules', ...files]);
    expect(result.exitCode, result.output).toBe(0);
    expect(result.output).not.toContain('FAILED');
    expect(result.output.match(/SUCCESS/g)).toHaveLength(files.length);
  }, 120_000);

  it('promtool check config: the Prometheus config and the rules it loads, from any directory', async () => {
    const result = await run('promtool', ['check', 'config', PROMETHEUS_CONFIG], tmpdir());
    expect(result.exitCode, result.output).toBe(0);
    expect(result.output).toContain(`SUCCESS: ${ruleCounts.size} rule files found`);
    for (const count of ruleCounts.values()) expect(result.output).toContain(`SUCCESS: ${count} rules found`);
  });

  it('amtool check-config: the Alertmanager config', async () => {
    const result = await run('amtool', ['check-config', ALERTMANAGER_CONFIG]);
    expect(result.exitCode, result.output).toBe(0);
    expect(result.output).toContain('SUCCESS');
  });

  it.each(alerts.map((rule) => [rule.alert, rule.labels.severity ?? ''] as const))(
    'Alertmanager routes %s (%s) to its severity receiver',
    async (name, severity) => {
      const receiver = RECEIVER[severity as Severity];
      const result = await run('amtool', [
        'config',
        'routes',
        'test',
        `--config.file=${ALERTMANAGER_CONFIG}`,
        `--verify.receivers=${receiver}`,
        `alertname=${name}`,
        `severity=${severity}`,
        'instance=node1:10460',
        'device=mlx5_0',
        'port=1',
      ]);
      expect(result.exitCode, result.output).toBe(0);
    },
  );
});
