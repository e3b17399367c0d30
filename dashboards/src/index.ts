// Every dashboard of dashboards/, by the name of its generated JSON file.
// Regenerate the JSON with `npm run generate`; test/dashboards/generated.test.ts fails
// when a committed file differs from what these sources build.
import type * as dashboard from '@grafana/grafana-foundation-sdk/dashboard';
import { fabric } from './fabric-dashboard.js';
import { host } from './host-dashboard.js';
import { jobs } from './jobs-dashboard.js';
import { overview } from './overview.js';

export { render } from './panels.js';

export const DASHBOARDS: Record<string, () => dashboard.Dashboard> = {
  'infiniband-overview.json': overview,
  'infiniband-host.json': host,
  'infiniband-fabric.json': fabric,
  'infiniband-jobs.json': jobs,
};
