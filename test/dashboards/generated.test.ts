// The JSON under dashboards/ is generated from the TypeScript sources in dashboards/src/ (Grafana
// Foundation SDK builders). This test fails when a committed file differs from what the sources
// build; `npm run generate:dashboards` (UPDATE_DASHBOARDS=1) rewrites the files instead.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { DASHBOARDS, render } from '../../dashboards/src/index.js';
import { DASHBOARD_DIR, DASHBOARD_FILES } from './model.js';

const update = process.env.UPDATE_DASHBOARDS === '1';

describe('dashboards: generated from dashboards/src/', () => {
  it('builds exactly the dashboards the tests read', () => {
    expect(Object.keys(DASHBOARDS).sort()).toEqual([...DASHBOARD_FILES].sort());
  });

  it.each(Object.entries(DASHBOARDS))('dashboards/%s is what its source builds', (file, build) => {
    const target = path.join(DASHBOARD_DIR, file);
    const text = render(build());
    if (update) writeFileSync(target, text);
    let committed = '';
    try {
      committed = readFileSync(target, 'utf8');
    } catch {
      // missing: reported as a difference below
    }
    expect(committed === text, `dashboards/${file} differs from dashboards/src: run npm run generate:dashboards`).toBe(true);
  });
});
