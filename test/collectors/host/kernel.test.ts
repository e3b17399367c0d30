// The kernel collector end to end: the exporter on the DGX tree (mlx5_0 is PCI 0000:18:00.0) with
// --path.kmsg a plain file that real kernel log lines (test/fixtures/kmsg/) are appended to after
// start-up, as /dev/kmsg records; /metrics, the findings, `check`, and a log that cannot be read.
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { KERNEL, kernelFindings } from '../../../src/collectors/host/kernel.js';
import { runCheck } from '../../../src/commands/check/command.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import { settingsFromFlags } from '../../support/exporter.js';
import { samplesOf, scrape } from '../../support/exposition.js';
import { DGX } from '../../support/trees.js';
import { fixtureRecords } from '../../support/kmsg-records.js';

const dirs: string[] = [];
const exporters: Exporter[] = [];
afterEach(async () => {
  await Promise.all(exporters.splice(0).map((exporter) => exporter.stop()));
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function kmsgFile(content = ''): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'ibx-kernel-'));
  dirs.push(dir);
  const file = path.join(dir, 'kmsg');
  writeFileSync(file, content);
  return file;
}

function exporterOn(file: string): Exporter {
  const exporter = new Exporter({
    settings: settingsFromFlags(['--path.sysfs', DGX, '--no-collector.diag', '--path.kmsg', file]),
    logger: pino({ level: 'silent' }),
    runners: { module: 'not-installed', ethtool: 'not-installed' },
  });
  exporters.push(exporter);
  return exporter;
}

/** The fixture's records with mlx5_0's PCI address in place of the reporter's. */
const onMlx5_0 = (name: string, first: number) =>
  fixtureRecords(name, first)
    .map((record) => record.replaceAll(/0000:(?:5e|61):00\.0/g, '0000:18:00.0'))
    .join('');

describe('the kernel collector', () => {
  it('counts the events appended after start-up per device and kind, never the backlog', async () => {
    const file = kmsgFile(onMlx5_0('health-compromised.log', 1));
    const exporter = exporterOn(file);
    await exporter.collectOnce();
    // Every device of the host at 0 from the start (an alert on increase() sees the first event), nothing of the backlog.
    const before = samplesOf(await scrape(exporter), 'infiniband_device_kernel_events_total');
    expect(before).toHaveLength(8 * 7);
    expect(before.every((line) => line.endsWith(' 0'))).toBe(true);
    expect(before).toContain('infiniband_device_kernel_events_total{device="mlx5_0",kind="health_compromised"} 0');

    appendFileSync(
      file,
      onMlx5_0('health-compromised.log', 100) +
        onMlx5_0('cmd-timeout.log', 200) +
        fixtureRecords('harmless-probe-and-cable.log', 300).join('') +
        fixtureRecords('cmd-timeout.log', 400).join(''),
    );
    await exporter.collectOnce();
    const text = await scrape(exporter);
    expect(samplesOf(text, 'infiniband_device_kernel_events_total').filter((line) => !line.endsWith(' 0'))).toEqual([
      'infiniband_device_kernel_events_total{device="mlx5_0",kind="health_compromised"} 1',
      'infiniband_device_kernel_events_total{device="mlx5_0",kind="cmd_timeout"} 3',
      // A function no InfiniBand device of the host has: named by its PCI address.
      'infiniband_device_kernel_events_total{device="0000:61:00.0",kind="cmd_timeout"} 3',
    ]);
    expect(text).toContain('# TYPE infiniband_device_kernel_events_total counter');

    const findings = kernelFindings(KERNEL.of(exporter.collectors.snapshot!), Date.now());
    expect(findings.map((finding) => [finding.subject, finding.severity, finding.alert])).toEqual([
      [{ kind: 'device', device: 'mlx5_0' }, 'critical', 'InfiniBandAdapterUnhealthy'],
      [{ kind: 'device', device: 'mlx5_0' }, 'critical', 'InfiniBandAdapterUnhealthy'],
      [{ kind: 'device', device: '0000:61:00.0' }, 'critical', 'InfiniBandAdapterUnhealthy'],
    ]);
    expect(findings[0]!.summary).toContain('firmware health compromised on mlx5_0 (1 since the exporter started');
    // An hour later they are no longer recent.
    expect(kernelFindings(KERNEL.of(exporter.collectors.snapshot!), Date.now() + 3_700_000)).toEqual([]);
  });

  it("an event between readings makes the next scrape read again (the port states' sample drains the log)", async () => {
    const file = kmsgFile();
    const exporter = exporterOn(file);
    await exporter.collectOnce();
    appendFileSync(file, onMlx5_0('health-compromised.log', 10));
    await exporter.collectors.sampleNow();
    const text = await scrape(exporter);
    expect(samplesOf(text, 'infiniband_device_kernel_events_total')).toContain(
      'infiniband_device_kernel_events_total{device="mlx5_0",kind="health_compromised"} 1',
    );
  });

  it('check reports recent events of the log with their runbook', async () => {
    const file = kmsgFile(onMlx5_0('health-compromised.log', 1));
    let stdout = '';
    const code = await runCheck(
      ['--path.sysfs', DGX, '--no-collector.diag', '--path.kmsg', file],
      { stdout: { write: (text: string) => (stdout += text), isTTY: false }, stderr: { write: () => undefined }, env: {} },
      { runners: { module: 'not-installed', ethtool: 'not-installed' } },
    );
    expect(code).toBe(1);
    expect(stdout).toMatch(/firmware health compromised on mlx5_0/);
  });

  it('is off with one reason when the log cannot be read', async () => {
    const file = path.join(path.dirname(kmsgFile()), 'missing');
    const exporter = exporterOn(file);
    await exporter.collectOnce();
    const text = await scrape(exporter);
    expect(text).not.toContain('collector="kernel"');
    const enrolment = exporter.collectors.enrolments.find((entry) => entry.collector === KERNEL);
    expect(enrolment && 'off' in enrolment ? enrolment.off : undefined).toMatch(/^the kernel log cannot be read: .*ENOENT/);
  });
});
