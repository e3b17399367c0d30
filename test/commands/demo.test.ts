// The demos on any machine: --demo=fabric runs fabric mode on the recorded fabric of demo/fabric
// (replayed through the one runner, src/sources/recorded-runner.ts) and shows its faults on /fabric,
// on the landing page, in /metrics and in `check`; a command the recordings lack fails visibly.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, describe, expect, it } from 'vitest';
import { DEMO_FABRIC } from '../../src/commands/command-line.js';
import { demoRunners } from '../../src/commands/demo.js';
import { runCheck } from '../../src/commands/check/command.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { RecordedRunner, grownOutput, recordedCommandLine } from '../../src/sources/recorded-runner.js';
import { settingsFromFlags } from '../support/exporter.js';

const FAULTS = [
  // The pulled cable: node12's, on leaf-1 port 2, one finding with both ends and the plan's line.
  'leaf-1 port 2 has no link, and node12 (0x0002c90300a10020) at the other end of its planned cable is not in the fabric',
  // The miswired cable: node23's, planned on leaf-2 port 3.
  'the cable from node23 port 1 is in leaf-3 port 6, the plan has it in leaf-2 port 3',
  // The degraded inter-switch link.
  'the link between leaf-1 port 4 and spine-1 port 1 runs at 1X QDR (10 Gb/s), the plan says 4X QDR (40 Gb/s)',
];

/** Text with HTML's escapes undone, for comparing a page with a finding's words. */
const unescaped = (html: string): string =>
  html
    .replace(/&#39;|&#x27;/g, "'")
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');

describe('--demo=fabric', () => {
  const exporters: Exporter[] = [];
  afterAll(async () => {
    await Promise.all(exporters.map((exporter) => exporter.stop()));
  });

  async function demoExporter(): Promise<Exporter> {
    const settings = settingsFromFlags(['--demo=fabric']);
    const exporter = new Exporter({ settings, logger: pino({ level: 'silent' }), runners: demoRunners(settings) });
    exporters.push(exporter);
    await exporter.collectOnce();
    await exporter.collectFabricOnce();
    return exporter;
  }

  it('serves /fabric as an SVG map of the recorded fabric with its faults listed', async () => {
    const exporter = await demoExporter();
    const response = await exporter.app.inject({ url: '/fabric' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    const page = unescaped(response.body);
    expect(page).toMatch(/<svg[\s>]/);
    expect(page).toContain('5 switches in 2 tiers');
    for (const fault of FAULTS.slice(1)) expect(page).toContain(fault);
    expect(page).toMatch(/class="link problem down/);
    expect(page).toMatch(/class="link problem miswired/);
    expect(page).toMatch(/class="link problem degraded/);
    const landing = unescaped((await exporter.app.inject({ url: '/' })).body);
    for (const fault of FAULTS) expect(landing).toContain(fault);
    // Every page and check count the links one way (linkCountSteps).
    let stdout = '';
    await runCheck(['--demo=fabric'], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: () => true },
      env: { NO_COLOR: '1' },
    });
    const links = /and (\d+) links/.exec(stdout)?.[1];
    expect(links).toBeDefined();
    expect(page).toContain(`, ${links} links,`);
    expect(landing).toContain(`<dt>links</dt><dd>${links} `);
  });

  it('exposes the fabric series the fabric dashboard and rules query, with every collector succeeding', async () => {
    const exporter = await demoExporter();
    const metrics = (await exporter.app.inject({ url: '/metrics' })).body;
    expect(metrics).not.toMatch(/infiniband_exporter_collector_success\{[^}]*\} 0/);
    expect(metrics).not.toMatch(/infiniband_exporter_read_errors_total\{[^}]*\} [1-9]/);
    const count = (pattern: RegExp): number => metrics.split('\n').filter((line) => pattern.test(line)).length;
    expect(count(/^infiniband_fabric_node_info\{.*node_type="switch"/)).toBe(5);
    expect(count(/^infiniband_fabric_subnet_manager_info\{/)).toBe(2);
    expect(metrics).toMatch(/^infiniband_fabric_port_state_id\{node_guid="0x0002c90200510000",port="2"\} 1$/m);
    expect(metrics).toMatch(/^infiniband_fabric_port_link_width_lanes\{node_guid="0x0002c90200510000",port="4"\} 1$/m);
    expect(metrics).toMatch(/^infiniband_fabric_port_symbol_errors_total\{node_guid="0x0002c90200510000",port="4"\} 4821$/m);
    // The congested tier: every leaf uplink waited hundreds of millions of ticks.
    const waits = [
      ...metrics.matchAll(/^infiniband_fabric_port_transmit_wait_total\{node_guid="0x0002c902005[123]0000",port="[45]"\} (\d+)$/gm),
    ].map((m) => Number(m[1]));
    expect(waits).toHaveLength(6);
    for (const wait of waits) expect(wait).toBeGreaterThan(2e8);
    expect(metrics).toMatch(/^infiniband_fabric_multicast_group_rate_bytes_per_second\{/m);
  });

  it('check --demo=fabric exits 1 and names the pulled cable, the miswired cable and the degraded link', async () => {
    let stdout = '';
    const code = await runCheck(['--demo=fabric'], {
      stdout: { write: (text: string) => (stdout += text) },
      stderr: { write: () => true },
      env: { NO_COLOR: '1' },
    });
    expect(code).toBe(1);
    for (const fault of FAULTS) expect(stdout).toContain(fault);
    // One cause, one finding: no second finding for the switch end of the pulled cable, nor for
    // the degraded link the plan's line already names.
    expect(stdout).not.toContain('port 2 of leaf-1 has no link');
    expect(stdout).not.toContain('the link from port 1 of spine-1 to port 4 of leaf-1');
    expect(stdout).toMatch(/cabling-plan line 8\)/);
    expect(stdout).not.toContain('no recording');
  });

  it('check --help says what --demo reads, not that check serves it', async () => {
    let stdout = '';
    await runCheck(['--help'], { stdout: { write: (text: string) => (stdout += text) }, stderr: { write: () => true }, env: {} });
    const line = stdout.split('\n').find((text) => text.includes('--demo'))!;
    expect(line).toContain('--demo=<host|fabric>');
    expect(line).not.toMatch(/serve/i);
  });
});

describe('the recorded runner', () => {
  it('answers each recorded command line, writes the recorded discovery cache, and fails a command it lacks', async () => {
    const runner = new RecordedRunner<string>(DEMO_FABRIC);
    const dir = mkdtempSync(path.join(tmpdir(), 'recorded-runner-'));
    try {
      const cache = path.join(dir, 'discovery.cache');
      const discovery = await runner.run('ibnetdiscover', ['--cache', cache]);
      expect(discovery).toMatchObject({ outcome: 'exited', exitCode: 0 });
      expect(discovery.stdout).toContain('"MF0;leaf-1:SX6036/U1"');
      expect(readFileSync(cache)).toEqual(readFileSync(path.join(DEMO_FABRIC, 'topology.cache')));
      const missing = await runner.run('perfquery', ['-x', '1', '1']);
      expect(missing).toMatchObject({ outcome: 'spawn-error', exitCode: undefined });
      expect(missing.stderr).toContain('no recording of "perfquery -x 1 1"');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('moves each counter that grew between the two recordings on at that rate, and nothing else', async () => {
    let now = 0;
    const runner = new RecordedRunner<string>(DEMO_FABRIC, () => now);
    const args = ['--skip-sl', '--threshold-file', '/dev/null', '--load-cache', '/nonexistent', '--switch'];
    const wait = async (): Promise<string[]> => {
      const { stdout } = await runner.run('ibqueryerrors', args);
      return /GUID 0x2c90200530000 port 4: \[PortXmitWait == (\d+)\]/
        .exec(stdout)!
        .slice(1)
        .concat(/GUID 0x2c90200410000 port 1: \[SymbolErrorCounter == (\d+)\]/.exec(stdout)![1]!);
    };
    expect(await wait()).toEqual(['294000000', '3907']);
    now = 150_000; // half of later.seconds (300)
    expect(await wait()).toEqual(['369000000', '3944']);
    now = 600_000;
    expect(await wait()).toEqual(['594000000', '4057']);
    // An output with no later recording stays as recorded.
    expect((await runner.run('saquery', ['SMIR'])).stdout).toBe(readFileSync(path.join(DEMO_FABRIC, 'saquery-SMIR.stdout'), 'utf8'));
  });

  it('grows counter values only, and only where the two outputs agree on everything else', () => {
    expect(grownOutput('[A == 10 (10.000)] [B == 5]', '[A == 20 (20.000)] [B == 5]', 0.5)).toBe('[A == 15 (10.000)] [B == 5]');
    expect(grownOutput('[A == 18446744073709551000]', '[A == 18446744073709551600]', 0.5)).toBe('[A == 18446744073709551300]');
    expect(grownOutput('[A == 10] x', '[A == 20] y', 1)).toBe('[A == 10] x');
    expect(grownOutput('[A == 10]', '[A == 4]', 3)).toBe('[A == 10]');
  });

  it("writes a cycle's private cache files as <cache>", () => {
    expect(recordedCommandLine('ibqueryerrors', ['--skip-sl', '--load-cache', '/tmp/x/1.cache', '--switch'])).toBe(
      'ibqueryerrors --skip-sl --load-cache <cache> --switch',
    );
    expect(recordedCommandLine('saquery', ['SMIR'])).toBe('saquery SMIR');
  });
});
