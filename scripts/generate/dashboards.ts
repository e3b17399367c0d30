// The Grafana dashboards' JSON under dashboards/, built from dashboards/src/ (Grafana Foundation SDK).
import { DASHBOARDS, render } from '../../dashboards/src/index.js';
import type { GeneratedFile } from './generated-file.js';

export function dashboardFiles(): GeneratedFile[] {
  return Object.entries(DASHBOARDS).map(([file, build]) => ({ path: `dashboards/${file}`, content: render(build()) }));
}
