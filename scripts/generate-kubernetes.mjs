#!/usr/bin/env node
// @ts-check
// Kubernetes objects made from the repository's own sources, so that they cannot drift apart:
//   rules/*.yml           -> deploy/kubernetes/prometheus-rules.yaml    (one PrometheusRule per file)
//   dashboards/*.json     -> deploy/kubernetes/grafana-dashboards.yaml  (one ConfigMap per dashboard)
// Usage: node scripts/generate-kubernetes.mjs           write both files
//        node scripts/generate-kubernetes.mjs --check   exit 1, naming the file, when a written file differs
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const OUT = path.join(ROOT, 'deploy/kubernetes');
const LABELS = { 'app.kubernetes.io/name': 'infiniband-exporter', 'app.kubernetes.io/part-of': 'infiniband-exporter' };

/** @param {string} dir @param {RegExp} pattern */
function sources(dir, pattern) {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((entry) => entry.isFile() && pattern.test(entry.name))
    .map((entry) => entry.name)
    .sort();
}

/** @param {string} from @param {unknown[]} objects */
function documents(from, objects) {
  const header = `# Generated from ${from} by scripts/generate-kubernetes.mjs (npm run generate:kubernetes): do not edit.\n`;
  return header + objects.map((object) => `---\n${stringify(object, { lineWidth: 0 })}`).join('');
}

/** @returns {Map<string, string>} file name under deploy/kubernetes -> content */
export function generate() {
  const rules = sources('rules', /\.ya?ml$/).map((name) => {
    const { groups } = parse(readFileSync(path.join(ROOT, 'rules', name), 'utf8'));
    if (!Array.isArray(groups)) throw new Error(`rules/${name}: no "groups" list`);
    return {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name: `infiniband-exporter-${path.parse(name).name}`, labels: { ...LABELS, 'app.kubernetes.io/component': 'alert-rules' } },
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
  return new Map([
    ['prometheus-rules.yaml', documents('rules/*.yml', rules)],
    ['grafana-dashboards.yaml', documents('dashboards/*.json', dashboards)],
  ]);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const check = process.argv.includes('--check');
  let stale = 0;
  for (const [name, text] of generate()) {
    const file = path.join(OUT, name);
    if (!check) writeFileSync(file, text);
    else {
      let current = '';
      try {
        current = readFileSync(file, 'utf8');
      } catch {
        // missing: stale
      }
      if (current !== text) {
        process.stderr.write(`deploy/kubernetes/${name} is out of date with its sources: run npm run generate:kubernetes\n`);
        stale += 1;
      }
    }
  }
  process.exitCode = stale > 0 ? 1 : 0;
}
