// deploy/kubernetes: the manifests parse, agree with each other and with the exporter's flags, and
// the generated rules and dashboards equal their sources in rules/ and dashboards/.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { PROJECT } from '../support/built.js';
import { committed, stale } from '../../scripts/generate/generated-file.js';
import { kubernetesFiles } from '../../scripts/generate/kubernetes.js';
import { requireSystemTools } from '../support/system.js';
import { SYSFS_PATH } from '../../src/collectors/host/host-reading.js';
import { DIAG_SWITCH } from '../../src/collectors/diag/diag-group.js';
import { LISTEN_ADDRESS } from '../../src/commands/serve/flags.js';

const DIR = path.join(PROJECT, 'deploy/kubernetes');

type Manifest = Record<string, any>;

function manifests(name: string): Manifest[] {
  const docs = parseAllDocuments(readFileSync(path.join(DIR, name), 'utf8'));
  const list = Array.isArray(docs) ? docs : [docs];
  for (const doc of list) expect(doc.errors, name).toEqual([]);
  return list.map((doc) => doc.toJS() as Manifest).filter((doc) => doc !== null);
}

const sources = (dir: string, pattern: RegExp) =>
  readdirSync(path.join(PROJECT, dir))
    .filter((name) => pattern.test(name))
    .sort();
const kustomization = manifests('kustomization.yaml')[0]!;
const daemonSet = manifests('daemonset.yaml')[0]!;
const container = daemonSet.spec.template.spec.containers[0] as Manifest;
const podMonitor = manifests('podmonitor.yaml')[0]!;

describe('generated from rules/ and dashboards/', () => {
  it.each(kubernetesFiles().map((file) => [file.path, file.content]))(
    '%s is what scripts/generate/kubernetes.ts writes',
    (file, content) => {
      expect(committed(file), stale(file)).toBe(content);
    },
  );

  it('one PrometheusRule per rules file, with exactly its groups', () => {
    const objects = manifests('prometheus-rules.yaml');
    const files = sources('rules', /\.ya?ml$/);
    expect(files.length).toBeGreaterThan(0);
    expect(objects.map((o) => o.kind)).toEqual(files.map(() => 'PrometheusRule'));
    files.forEach((file, i) => {
      expect(objects[i]!.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(objects[i]!.spec.groups, file).toEqual(parse(readFileSync(path.join(PROJECT, 'rules', file), 'utf8')).groups);
    });
  });

  it('one Grafana ConfigMap per dashboard, holding the JSON byte for byte', () => {
    const objects = manifests('grafana-dashboards.yaml');
    const files = sources('dashboards', /\.json$/);
    expect(files.length).toBeGreaterThan(0);
    expect(objects).toHaveLength(files.length);
    files.forEach((file, i) => {
      expect(objects[i]!.kind).toBe('ConfigMap');
      expect(objects[i]!.metadata.labels.grafana_dashboard).toBe('1');
      expect(objects[i]!.data[file], file).toBe(readFileSync(path.join(PROJECT, 'dashboards', file), 'utf8'));
    });
    // A ConfigMap holds at most 1 MiB.
    for (const object of objects) expect(JSON.stringify(object).length).toBeLessThan(1024 * 1024);
  });
});

describe('hand-written manifests', () => {
  it('the kustomization lists every manifest, and every file is a resource or a documented patch', () => {
    const resources = kustomization.resources as string[];
    const yamlFiles = readdirSync(DIR).filter((name) => name.endsWith('.yaml') && name !== 'kustomization.yaml');
    expect([...resources].sort()).toEqual(yamlFiles.filter((name) => name !== 'diag-patch.yaml').sort());
    expect(readFileSync(path.join(DIR, 'kustomization.yaml'), 'utf8')).toContain('# patchesStrategicMerge:\n#   - diag-patch.yaml');
    for (const name of yamlFiles) expect(manifests(name).length, name).toBeGreaterThan(0);
  });

  it('the DaemonSet reads the host /sys read-only at /host/sys with flags the exporter accepts', () => {
    const command = parseCommandLine(container.args as string[]);
    expect(command.action).toBe('run');
    if (command.action !== 'run') return;
    expect(command.settings.get(SYSFS_PATH)).toBe('/host/sys');
    expect(command.settings.get(LISTEN_ADDRESS).port).toBe(10460);
    expect(container.ports).toEqual([{ name: 'metrics', containerPort: 10460, protocol: 'TCP' }]);
    const mount = (container.volumeMounts as Manifest[]).find((m) => m.mountPath === '/host/sys')!;
    expect(mount.readOnly).toBe(true);
    const volume = (daemonSet.spec.template.spec.volumes as Manifest[]).find((v) => v.name === mount.name)!;
    expect(volume.hostPath.path).toBe('/sys');
  });

  it('runs the image npm run release names (package.json config.image at its version)', () => {
    const pkg = JSON.parse(readFileSync(path.join(PROJECT, 'package.json'), 'utf8')) as { version: string; config: { image: string } };
    expect(container.image).toBe(`${pkg.config.image}:${pkg.version}`);
    expect(daemonSet.metadata.labels['app.kubernetes.io/version']).toBe(pkg.version);
    expect(daemonSet.spec.template.metadata.labels['app.kubernetes.io/version']).toBe(pkg.version);
  });

  it('runs unprivileged: non-root, read-only root filesystem, no capabilities, no service account token', () => {
    const pod = daemonSet.spec.template.spec;
    expect(pod.hostNetwork).toBe(true);
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.securityContext.runAsUser).toBeGreaterThan(0);
    expect(container.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.tolerations).toEqual([{ operator: 'Exists' }]);
    expect(pod.nodeSelector['kubernetes.io/os']).toBe('linux');
    expect(pod.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms).toHaveLength(2);
    expect(container.resources.requests).toBeDefined();
    expect(container.resources.limits.memory).toBeDefined();
  });

  it('probes /healthz and /ready on the metrics port', () => {
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'metrics' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/ready', port: 'metrics' });
  });

  it('the diag patch turns the diag collector on with the umad devices', () => {
    const patch = manifests('diag-patch.yaml')[0]!;
    const patched = patch.spec.template.spec.containers[0] as Manifest;
    expect(patched.name).toBe(container.name);
    const command = parseCommandLine(patched.args as string[]);
    expect(command.action === 'run' && command.settings.get(DIAG_SWITCH)).toBe(true);
    expect(command.action === 'run' && command.settings.get(SYSFS_PATH)).toBe('/host/sys');
    const devices = (patch.spec.template.spec.volumes as Manifest[]).find((v) => v.hostPath?.path === '/dev/infiniband');
    expect(devices).toBeDefined();
    expect((patched.volumeMounts as Manifest[]).map((m) => m.mountPath)).toContain('/dev/infiniband');
  });

  it("the PodMonitor selects the DaemonSet's pods and names the job the rules expect", () => {
    const labels = daemonSet.spec.template.metadata.labels as Record<string, string>;
    for (const [key, value] of Object.entries(podMonitor.spec.selector.matchLabels as Record<string, string>))
      expect(labels[key]).toBe(value);
    const endpoint = podMonitor.spec.podMetricsEndpoints[0] as Manifest;
    expect(endpoint.port).toBe(container.ports[0].name);
    const job = (endpoint.relabelings as Manifest[]).find((r) => r.targetLabel === 'job')!.replacement as string;
    const rules = readFileSync(path.join(PROJECT, 'deploy/kubernetes/prometheus-rules.yaml'), 'utf8');
    const selector = /up\{job=~"([^"]+)"\}/.exec(rules)?.[1];
    expect(selector, 'InfiniBandExporterDown selects the scrape jobs by regex').toBeDefined();
    expect(job).toMatch(new RegExp(`^(?:${selector})$`));
  });
});

const tools = requireSystemTools('kubernetes rules', { promtool: 'prometheus' });

describe.skipIf(tools.skipReason !== undefined)('promtool', () => {
  it('checks the groups of every PrometheusRule', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'ibx-k8s-'));
    try {
      manifests('prometheus-rules.yaml').forEach((rule, i) => {
        const file = path.join(dir, `rules-${i}.yml`);
        writeFileSync(file, JSON.stringify({ groups: rule.spec.groups }));
        const result = spawnSync(tools.paths.promtool!, ['check', 'rules', file], { encoding: 'utf8' });
        expect(result.stdout + result.stderr).toMatch(/SUCCESS: \d+ rules found/);
        expect(result.status).toBe(0);
      });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
