// The README lists every metric the code can serve, with the code's type, labels and HELP text.
// `npm run generate` rewrites the table (scripts/generate/readme.ts); this test fails when someone forgot to.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { committed, stale } from '../../scripts/generate/generated-file.js';
import { readmeFiles } from '../../scripts/generate/readme.js';
import { allMetrics } from '../../src/metrics/catalog.js';

const README = new URL('../../README.md', import.meta.url);

describe('README metric list', () => {
  it('matches the metric catalog', () => {
    for (const file of readmeFiles()) expect(committed(file.path), stale(file.path)).toBe(file.content);
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
