// Every query of the dashboards, with Grafana's variables substituted, is valid PromQL for promtool.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { requireSystemTools } from '../support/system.js';
import { loadDashboards, queries, substitute, variableQuery, type VariableValues } from './model.js';

const run = promisify(execFile);
const tools = requireSystemTools('dashboards', { promtool: 'prometheus' });

/** What Grafana sends for the variables: a multi-value selection becomes a regex alternation. */
const VALUES: VariableValues = {
  __rate_interval: '1m',
  __range: '6h',
  job: 'infiniband',
  instance: '(zoo01|dgx01)',
  device: '(mlx5_0|mlx5_3)',
  port: '1',
  hw_counter: '.*',
  job_id: '48213',
};

describe.skipIf(tools.skipReason)('dashboards: PromQL', () => {
  const dirs: string[] = [];
  afterAll(async () => {
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it('every panel query and variable query parses (promtool check rules)', async () => {
    const loaded = loadDashboards();
    const rules = queries(loaded).map(({ file, panel, target }) => ({
      record: `dashboard:${file.replace(/\W/g, '_')}:panel_${panel.id}_${target.refId}`,
      expr: substitute(target.expr, VALUES),
    }));
    for (const { file, model } of loaded) {
      for (const variable of model.templating.list) {
        const query = variableQuery(variable);
        if (query)
          rules.push({
            record: `dashboard:${file.replace(/\W/g, '_')}:variable_${variable.name}`,
            expr: substitute(query.selector, VALUES),
          });
      }
    }
    expect(rules.length).toBeGreaterThan(100);
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-dash-promql-'));
    dirs.push(dir);
    const file = path.join(dir, 'dashboards.rules.yml');
    await writeFile(file, stringify({ groups: [{ name: 'dashboards', rules }] }, { lineWidth: 0 }));
    const result = await run(tools.paths.promtool!, ['check', 'rules', file]).then(
      ({ stdout }) => ({ ok: true, output: stdout }),
      (error: { stdout?: string; stderr?: string }) => ({ ok: false, output: `${error.stdout ?? ''}${error.stderr ?? ''}` }),
    );
    expect(result.output).toContain(`SUCCESS: ${rules.length} rules found`);
    expect(result.ok, result.output).toBe(true);
  });

  it('a broken query is reported (the check is not vacuous)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-dash-promql-'));
    dirs.push(dir);
    const file = path.join(dir, 'broken.rules.yml');
    const expr = substitute('sum by (device (rate(infiniband_port_symbol_errors_total{job=~"$job"}[$__rate_interval]))', VALUES);
    await writeFile(file, stringify({ groups: [{ name: 'broken', rules: [{ record: 'broken:rule', expr }] }] }));
    await expect(run(tools.paths.promtool!, ['check', 'rules', file])).rejects.toMatchObject({ code: 1 });
  });
});
