// The README lists every metric the code can serve, with the code's type, labels and HELP text.
// `npm run docs:metrics` rewrites the table; this test fails when someone forgot to.
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { allMetrics } from '../../src/metrics/catalog.js';
import { withMetricTable } from '../../src/metrics/metric-table.js';

const README = new URL('../../README.md', import.meta.url);

describe('README metric list', () => {
  it('matches the metric catalog', () => {
    const readme = readFileSync(README, 'utf8');
    const expected = withMetricTable(readme);
    if (process.env.UPDATE_README === '1' && expected !== readme) writeFileSync(README, expected);
    else expect(readme, 'run `npm run docs:metrics` to regenerate the README metric table').toBe(expected);
  });

  it('names every metric exactly once', () => {
    const readme = readFileSync(README, 'utf8');
    for (const spec of allMetrics()) {
      expect(readme.split(`| \`${spec.name}\` |`).length - 1, spec.name).toBe(1);
    }
  });
});

describe('README alert list', () => {
  it('lists every shipped alert with its severity', async () => {
    const { parse } = await import('yaml');
    const rules = parse(readFileSync(new URL('../../rules/infiniband-alerts.yml', import.meta.url), 'utf8')) as {
      groups: { rules: { alert?: string; labels?: { severity?: string } }[] }[];
    };
    const readme = readFileSync(README, 'utf8');
    const alerts = rules.groups.flatMap((group) => group.rules).filter((rule) => rule.alert);
    expect(alerts.length).toBeGreaterThan(0);
    for (const rule of alerts) expect(readme, rule.alert).toContain(`| \`${rule.alert}\` | ${rule.labels?.severity} |`);
  });
});
