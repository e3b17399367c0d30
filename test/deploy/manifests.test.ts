// deploy/kubernetes as a cluster would receive it: built with kustomize (as shipped, and with the
// documented diag patch turned on), and every object validated offline against the Kubernetes
// and prometheus-operator schemas (kubernetes-models), so a manifest the API server would reject
// for a wrong type or a missing required field fails here. Unknown fields are not caught: the
// models' schemas allow them, as a non-strict API server does.
import { spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PodMonitor, PrometheusRule } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { DaemonSet } from 'kubernetes-models/apps/v1';
import { ConfigMap, ServiceAccount } from 'kubernetes-models/v1';
import { afterAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { PROJECT } from '../support/built.js';
import { findKustomize } from '../support/kustomize.js';

type Manifest = Record<string, any>;

/** The schema model of every kind deploy/kubernetes may contain; another kind fails the test. */
const MODELS: Record<string, (object: Manifest) => { validate(): void }> = {
  'v1/ServiceAccount': (o) => new ServiceAccount(o as ConstructorParameters<typeof ServiceAccount>[0]),
  'v1/ConfigMap': (o) => new ConfigMap(o as ConstructorParameters<typeof ConfigMap>[0]),
  'apps/v1/DaemonSet': (o) => new DaemonSet(o as ConstructorParameters<typeof DaemonSet>[0]),
  'monitoring.coreos.com/v1/PodMonitor': (o) => new PodMonitor(o as ConstructorParameters<typeof PodMonitor>[0]),
  'monitoring.coreos.com/v1/PrometheusRule': (o) => new PrometheusRule(o as ConstructorParameters<typeof PrometheusRule>[0]),
};

/** Why each object is invalid (empty when every object is valid). */
function schemaErrors(objects: Manifest[]): string[] {
  return objects.flatMap((object) => {
    const kind = `${object.apiVersion}/${object.kind}`;
    const model = MODELS[kind];
    if (!model) return [`${kind} ${object.metadata?.name}: no schema to validate it against`];
    try {
      model(object).validate();
      return [];
    } catch (error) {
      return [`${kind} ${object.metadata?.name}: ${(error as Error).message}`];
    }
  });
}

const SOURCE = path.join(PROJECT, 'deploy/kubernetes');
const kustomize = findKustomize('kustomize build of deploy/kubernetes');
const dirs: string[] = [];

/** A copy of deploy/kubernetes, changed by `edit(file name, text)` where it returns new text. */
function variant(edit: (name: string, text: string) => string | undefined): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibx-kustomize-'));
  dirs.push(dir);
  cpSync(SOURCE, dir, { recursive: true });
  for (const name of ['kustomization.yaml', 'daemonset.yaml']) {
    const file = path.join(dir, name);
    const changed = edit(name, readFileSync(file, 'utf8'));
    if (changed !== undefined) writeFileSync(file, changed);
  }
  return dir;
}

function build(dir: string): Manifest[] {
  if (kustomize.skipReason !== undefined) throw new Error(kustomize.skipReason);
  const { file, args } = kustomize.command(dir);
  const result = spawnSync(file, args, { encoding: 'utf8', timeout: 60_000 });
  expect(result.status, `${file} ${args.join(' ')}: ${result.stderr}`).toBe(0);
  const documents = parseAllDocuments(result.stdout);
  for (const document of documents) expect(document.errors).toEqual([]);
  return documents.map((document) => document.toJS() as Manifest).filter((object) => object !== null);
}

/** The kustomization with the diag patch turned on, exactly as its comment tells a user to. */
const withDiagPatch = (name: string, text: string) =>
  name === 'kustomization.yaml'
    ? text.replace('# patchesStrategicMerge:\n#   - diag-patch.yaml', 'patchesStrategicMerge:\n  - diag-patch.yaml')
    : undefined;

afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(kustomize.skipReason !== undefined)('deploy/kubernetes through kustomize and the API schemas', () => {
  it('builds as shipped: every object valid, in namespace monitoring', () => {
    const objects = build(SOURCE);
    expect(objects.map((o) => o.kind).sort()).toEqual([
      'ConfigMap',
      'ConfigMap',
      'ConfigMap',
      'ConfigMap',
      'DaemonSet',
      'PodMonitor',
      'PrometheusRule',
      'PrometheusRule',
      'ServiceAccount',
    ]);
    expect(schemaErrors(objects)).toEqual([]);
    for (const object of objects) expect(object.metadata.namespace, `${object.kind} ${object.metadata.name}`).toBe('monitoring');
    const rules = objects
      .filter((o) => o.kind === 'PrometheusRule')
      .map((o) => o.metadata.name)
      .sort();
    expect(rules).toEqual(['infiniband-exporter-infiniband-alerts', 'infiniband-exporter-infiniband-fabric-alerts']);
  });

  it('builds with the diag patch turned on as documented: a valid DaemonSet that runs the tools', () => {
    const dir = variant(withDiagPatch);
    expect(readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')).toContain('\npatchesStrategicMerge:\n  - diag-patch.yaml');
    const objects = build(dir);
    expect(schemaErrors(objects)).toEqual([]);
    const daemonSet = objects.find((o) => o.kind === 'DaemonSet')!;
    const container = daemonSet.spec.template.spec.containers[0] as Manifest;
    expect(container.args).not.toContain('--no-collector.diag');
    expect(container.securityContext.privileged).toBe(true);
    expect((container.volumeMounts as Manifest[]).map((m) => m.mountPath).sort()).toEqual(['/dev/infiniband', '/host/sys']);
    expect((daemonSet.spec.template.spec.volumes as Manifest[]).map((v) => v.hostPath.path).sort()).toEqual(['/dev/infiniband', '/sys']);
  });

  it('a manifest the API server would reject fails the validation (the check is not vacuous)', () => {
    const broken = variant((name, text) =>
      name === 'daemonset.yaml' ? text.replace('containerPort: 10460', 'containerPort: "10460"') : undefined,
    );
    const errors = schemaErrors(build(broken));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/DaemonSet infiniband-exporter: .*containerPort must be integer/);
    const unknownKind = schemaErrors([{ apiVersion: 'v1', kind: 'Service', metadata: { name: 'x' } }]);
    expect(unknownKind).toEqual(['v1/Service x: no schema to validate it against']);
  });
});
