// Kubernetes objects made from the repository's own sources, so that they cannot drift apart:
//   rules/*.yml           -> deploy/kubernetes/prometheus-rules.yaml    (one PrometheusRule per file)
//   dashboards/*.json     -> deploy/kubernetes/grafana-dashboards.yaml  (one ConfigMap per dashboard)
// Written by `npm run generate` after the dashboards, whose JSON it reads.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { REPOSITORY as ROOT, type GeneratedFile } from './generated-file.js';

const LABELS = { 'app.kubernetes.io/name': 'infiniband-exporter', 'app.kubernetes.io/part-of': 'infiniband-exporter' };

function sources(dir: string, pattern: RegExp): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isFile() && pattern.test(entry.name))
    .map((entry) => entry.name)
    .sort();
}

function documents(from: string, objects: unknown[]): string {
  const header = `# Generated from ${from} by scripts/generate/kubernetes.ts (npm run generate): do not edit.\n`;
  return header + objects.map((object) => `---\n${stringify(object, { lineWidth: 0 })}`).join('');
}

export function kubernetesFiles(): GeneratedFile[] {
  const rules = sources('rules', /\.ya?ml$/).map((name) => {
    const { groups } = parse(readFileSync(path.join(ROOT, 'rules', name), 'utf8'));
    if (!Array.isArray(groups)) throw new Error(`rules/${name}: no "groups" list`);
    return {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: {
        name: `infiniband-exporter-${path.parse(name).name}`,
        labels: { ...LABELS, 'app.kubernetes.io/component': 'alert-rules' },
      },
      spec: { groups },
    };
  });
  const dashboards = sources('dashboards', /\.json$/).map((name) => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: {
      name: `infiniband-exporter-dashboard-${path.parse(name).name}`,
      // The Grafana sidecar of kube-prometheus-stack loads ConfigMaps with this label.
      labels: { ...LABELS, 'app.kubernetes.io/component': 'dashboard', grafana_dashboard: '1' },
      annotations: { grafana_folder: 'InfiniBand' },
    },
    data: { [name]: readFileSync(path.join(ROOT, 'dashboards', name), 'utf8') },
  }));
  return [
    { path: 'deploy/kubernetes/prometheus-rules.yaml', content: documents('rules/*.yml', rules) },
    { path: 'deploy/kubernetes/grafana-dashboards.yaml', content: documents('dashboards/*.json', dashboards) },
  ];
}
