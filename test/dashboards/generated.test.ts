// The JSON under dashboards/ is generated from the TypeScript sources in dashboards/src/ (Grafana
// Foundation SDK builders). This test fails when a committed file differs from what the sources
// build; `npm run generate` (scripts/generate/dashboards.ts) rewrites them.
import { describe, expect, it } from 'vitest';
import { DASHBOARDS } from '../../dashboards/src/index.js';
import { dashboardFiles } from '../../scripts/generate/dashboards.js';
import { committed, stale } from '../../scripts/generate/generated-file.js';
import { DASHBOARD_FILES } from './model.js';

describe('dashboards: generated from dashboards/src/', () => {
  it('builds exactly the dashboards the tests read', () => {
    expect(Object.keys(DASHBOARDS).sort()).toEqual([...DASHBOARD_FILES].sort());
  });

  it.each(dashboardFiles().map((file) => [file.path, file.content]))('%s is what its source builds', (file, content) => {
    // Not toBe's diff: a dashboard is thousands of lines.
    expect(committed(file) === content, stale(file)).toBe(true);
  });
});
