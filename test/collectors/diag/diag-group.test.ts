// The diag collector wired into the exporter, fed with outputs recorded on the simulated fabric.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../../src/commands/serve/command-line.js';
import { Exporter } from '../../../src/commands/serve/exporter.js';
import type { CommandRunner } from '../../../src/sources/command-runner.js';
import type { DiagCommand } from '../../../src/sources/diag/local-ports.js';
import { ReplayRunner, type Override } from '../../support/replay.js';

interface PortFiles {
  state: string;
  lid: string;
  smLid: string;
  capMask: string;
  linkLayer?: string;
}

/** A sysfs tree like umad2sim's for `ibsim0` port 1, plus a RoCE device that must never see a MAD. */
async function sysfsTree(ib: PortFiles): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'ibx-diag-'));
  const files: Record<string, string> = {
    'class/infiniband/ibsim0/node_type': '1: CA\n',
    'class/infiniband/ibsim0/node_guid': '0002:c903:00a1:b3d0\n',
    'class/infiniband/ibsim0/ports/1/state': ib.state,
    'class/infiniband/ibsim0/ports/1/phys_state': '5: LinkUp\n',
    'class/infiniband/ibsim0/ports/1/rate': '10 Gb/sec (1X QDR)\n',
    'class/infiniband/ibsim0/ports/1/lid': ib.lid,
    'class/infiniband/ibsim0/ports/1/sm_lid': ib.smLid,
    'class/infiniband/ibsim0/ports/1/cap_mask': ib.capMask,
    'class/infiniband/ibsim0/ports/1/gids/0': 'fe80:0000:0000:0000:0002:c903:00a1:b3d1\n',
    'class/infiniband_mad/umad0/ibdev': 'ibsim0\n',
    'class/infiniband_mad/umad0/port': '1\n',
    'class/infiniband/mlx5_1/node_type': '1: CA\n',
    'class/infiniband/mlx5_1/ports/1/state': '4: ACTIVE\n',
    'class/infiniband/mlx5_1/ports/1/phys_state': '5: LinkUp\n',
    'class/infiniband/mlx5_1/ports/1/rate': '100 Gb/sec (4X EDR)\n',
    'class/infiniband/mlx5_1/ports/1/link_layer': 'Ethernet\n',
  };
  if (ib.linkLayer) files['class/infiniband/ibsim0/ports/1/link_layer'] = ib.linkLayer;
  for (const [file, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, file)), { recursive: true });
    await writeFile(path.join(root, file), text);
  }
  return root;
}

const HCA2_ACTIVE: PortFiles = { state: '4: ACTIVE\n', lid: '0x4', smLid: '0x1', capMask: '0x0050c048' };

const cleanup: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of cleanup.splice(0)) await step();
});

interface Started {
  exporter: Exporter;
  metrics: () => Promise<string>;
  logs: string[];
}

async function start(root: string, runner: CommandRunner<DiagCommand> | undefined, extra: readonly string[] = []): Promise<Started> {
  const command = parseCommandLine(['--path.sysfs', root, '--diag.timeout=1s', ...extra]);
  if (command.action !== 'run') throw new Error('unexpected action');
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logs.push(String(chunk));
      done();
    },
  });
  const exporter = new Exporter({
    settings: command.settings,
    logger: pino({ level: 'info' }, sink),
    runners: { module: 'not-installed', diag: runner, ethtool: 'not-installed' },
  });
  cleanup.push(async () => {
    await exporter.stop();
    await rm(root, { recursive: true, force: true });
  });
  await exporter.collectOnce();
  await exporter.collectDiagOnce();
  const metrics = async (): Promise<string> => (await exporter.app.inject({ method: 'GET', url: '/metrics' })).body;
  return { exporter, metrics, logs };
}

/** The value of one series, found by its exact name and labels as rendered. */
function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

const P = 'device="ibsim0",port="1"';

describe('diag collector on recorded fabric outputs', () => {
  it('serves the link peer, its counters, the subnet manager and the peer-derived expectation', async () => {
    const runner = new ReplayRunner<DiagCommand>('diag', 'sm-master');
    const { metrics } = await start(await sysfsTree(HCA2_ACTIVE), runner);
    const text = await metrics();
    expect(
      value(
        text,
        `infiniband_port_peer_info{${P},peer_guid="0x0002c90200400000",peer_port="3",peer_lid="1",peer_node_type="Switch",peer_description="sw1 IS5030"}`,
      ),
    ).toBe(1);
    expect(value(text, `infiniband_port_peer_symbol_errors_total{${P}}`)).toBe(65535);
    expect(value(text, `infiniband_port_peer_link_error_recoveries_total{${P}}`)).toBe(7);
    expect(value(text, `infiniband_port_peer_transmit_wait_total{${P}}`)).toBe(4242);
    expect(value(text, `infiniband_port_pma_saturated{${P},counter="peer_symbol_errors"}`)).toBe(1);
    expect(value(text, `infiniband_port_pma_saturated{${P},counter="peer_link_error_recoveries"}`)).toBeUndefined();
    expect(text).not.toContain('infiniband_port_peer_transmit_data_bytes_total');

    expect(value(text, `infiniband_subnet_manager_reachable{${P}}`)).toBe(1);
    expect(value(text, `infiniband_subnet_manager_info{${P},sm_guid="0x0002c90200400000",sm_lid="1",state="MASTER"}`)).toBe(1);
    expect(value(text, `infiniband_subnet_manager_priority{${P}}`)).toBe(10);
    expect(value(text, `infiniband_subnet_manager_activity_total{${P}}`)).toBe(64);

    // Both ends enable only 1X: the 1X link is what it should be.
    expect(value(text, `infiniband_port_link_width_expected_lanes{${P}}`)).toBe(1);
    expect(value(text, `infiniband_port_lane_rate_expected_bytes_per_second{${P}}`)).toBe(1.25e9);
    expect(value(text, `infiniband_port_link_degraded{${P},reason="width"}`)).toBe(0);
    expect(value(text, `infiniband_port_link_degraded{${P},reason="speed"}`)).toBe(0);

    // sysfs has no counters/ here: perfquery fills them in.
    expect(value(text, `infiniband_port_receive_errors_total{${P}}`)).toBe(12);
    expect(value(text, `infiniband_port_link_downed_total{${P}}`)).toBe(255);
    expect(value(text, `infiniband_port_pma_saturated{${P},counter="link_downed"}`)).toBe(1);
    expect(value(text, `infiniband_port_unicast_transmit_packets_total{${P}}`)).toBe(0);

    for (const collector of ['perfquery', 'sminfo', 'smpquery']) {
      expect(value(text, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
      expect(value(text, `infiniband_exporter_read_errors_total{collector="${collector}"}`)).toBe(0);
      expect(value(text, `infiniband_exporter_command_timeouts_total{command="${collector}"}`)).toBe(0);
      expect(value(text, `infiniband_exporter_last_collection_timestamp_seconds{collector="${collector}"}`)).toBeGreaterThan(0);
    }
    // ibsim does not answer PortSamplesControl: the documented tick of an adapter outside the
    // manual's table (one symbol time, 1 ns at QDR), read once, no read error.
    expect(value(text, 'infiniband_port_xmit_wait_tick_seconds{device="ibsim0",port="1"}')).toBeCloseTo(1e-9, 20);
    expect(runner.calls.filter((call) => call.startsWith('perfquery -c'))).toHaveLength(1);
    // The RoCE port is never queried; every MAD leaves through -C ibsim0 -P 1.
    expect(runner.calls.length).toBe(10);
    expect(runner.calls.every((call) => call.includes('-C ibsim0 -P 1'))).toBe(true);
    expect(text).not.toMatch(/infiniband_subnet_manager_reachable\{device="mlx5_1"/);
  });

  it('lets the config file win over the peer-derived expectation', async () => {
    const root = await sysfsTree(HCA2_ACTIVE);
    const config = path.join(root, 'config.yml');
    await writeFile(config, 'expectations:\n  - {device: "ibsim*", port: 1, width: 4, speed: QDR}\n');
    const { metrics } = await start(root, new ReplayRunner<DiagCommand>('diag', 'sm-master'), ['--config.file', config]);
    const text = await metrics();
    expect(value(text, `infiniband_port_link_width_expected_lanes{${P}}`)).toBe(4);
    expect(value(text, `infiniband_port_link_degraded{${P},reason="width"}`)).toBe(1);
    expect(value(text, `infiniband_port_link_degraded{${P},reason="speed"}`)).toBe(0);
  });

  it('before any SM: port INIT, SM unreachable, no PMA query, peer without LID', async () => {
    const runner = new ReplayRunner<DiagCommand>('diag', 'no-sm');
    const { metrics } = await start(
      await sysfsTree({ state: '2: INIT\n', lid: '0x0', smLid: '0x0', capMask: '0x0050c048', linkLayer: 'InfiniBand\n' }),
      runner,
    );
    const text = await metrics();
    expect(value(text, `infiniband_subnet_manager_reachable{${P}}`)).toBe(0);
    expect(text).not.toContain('infiniband_subnet_manager_info{');
    expect(value(text, `infiniband_exporter_collector_success{collector="sminfo"}`)).toBe(1);
    expect(runner.calls.filter((call) => call.startsWith('perfquery'))).toEqual([]);
    expect(
      value(
        text,
        `infiniband_port_peer_info{${P},peer_guid="0x0002c90200400000",peer_port="1",peer_lid="",peer_node_type="Switch",peer_description="sw1 IS5030"}`,
      ),
    ).toBe(1);
    expect(value(text, `infiniband_port_link_width_expected_lanes{${P}}`)).toBe(4);
  });

  it('shows a local STANDBY subnet manager next to the MASTER the port follows', async () => {
    const { metrics } = await start(
      await sysfsTree({ ...HCA2_ACTIVE, capMask: '0x0050c04a' }),
      new ReplayRunner<DiagCommand>('diag', ['two-sms', 'sm-master']),
    );
    const text = await metrics();
    expect(value(text, `infiniband_subnet_manager_info{${P},sm_guid="0x0002c90200400000",sm_lid="1",state="MASTER"}`)).toBe(1);
    expect(value(text, `infiniband_subnet_manager_info{${P},sm_guid="0x0002c90300a1b3d1",sm_lid="4",state="STANDBY"}`)).toBe(1);
    expect(value(text, `infiniband_subnet_manager_priority{${P}}`)).toBe(10);
  });

  it('drops the values of a failed or timed-out command instead of serving them stale', async () => {
    let failure: 'none' | 'exit' | 'timeout' = 'none';
    const override: Override<DiagCommand> = (command, args) => {
      if (command !== 'perfquery' || !args.includes('3') || failure === 'none') return undefined;
      const base = { command, args, stderr: '', durationMs: 1 };
      return failure === 'exit'
        ? { ...base, outcome: 'exited', exitCode: 255, stdout: 'perfquery: iberror: failed: perfquery\n' }
        : { ...base, outcome: 'timeout', exitCode: undefined, stdout: '' };
    };
    const { exporter, metrics } = await start(await sysfsTree(HCA2_ACTIVE), new ReplayRunner<DiagCommand>('diag', 'sm-master', override));
    expect(value(await metrics(), `infiniband_port_peer_symbol_errors_total{${P}}`)).toBe(65535);

    failure = 'exit';
    await exporter.collectDiagOnce();
    let text = await metrics();
    expect(value(text, `infiniband_port_peer_symbol_errors_total{${P}}`)).toBeUndefined();
    expect(value(text, `infiniband_port_pma_saturated{${P},counter="peer_symbol_errors"}`)).toBeUndefined();
    expect(value(text, `infiniband_exporter_collector_success{collector="perfquery"}`)).toBe(0);
    expect(value(text, `infiniband_exporter_read_errors_total{collector="perfquery"}`)).toBe(1);
    expect(value(text, `infiniband_exporter_collector_success{collector="smpquery"}`)).toBe(1);
    expect(value(text, `infiniband_subnet_manager_reachable{${P}}`)).toBe(1);

    failure = 'timeout';
    await exporter.collectDiagOnce();
    text = await metrics();
    expect(value(text, `infiniband_exporter_command_timeouts_total{command="perfquery"}`)).toBe(1);
    expect(value(text, `infiniband_exporter_read_errors_total{collector="perfquery"}`)).toBe(2);
    expect(value(text, `infiniband_port_peer_symbol_errors_total{${P}}`)).toBeUndefined();

    failure = 'none';
    await exporter.collectDiagOnce();
    text = await metrics();
    expect(value(text, `infiniband_exporter_collector_success{collector="perfquery"}`)).toBe(1);
    expect(value(text, `infiniband_port_peer_symbol_errors_total{${P}}`)).toBe(65535);
  });

  it('turns itself off with one log line when the tools are missing', async () => {
    const { metrics, logs } = await start(await sysfsTree(HCA2_ACTIVE), undefined, [
      '--perfquery.path',
      '/nonexistent/perfquery',
      '--sminfo.path',
      '/nonexistent/sminfo',
      '--smpquery.path',
      '/nonexistent/smpquery',
    ]);
    const text = await metrics();
    expect(text).not.toMatch(/collector="(perfquery|sminfo|smpquery)"/);
    expect(text).not.toContain('infiniband_exporter_command_timeouts_total{');
    expect(value(text, 'infiniband_exporter_collector_success{collector="sysfs"}')).toBe(1);
    const diagLines = logs.filter((line) => line.includes('diag collector'));
    expect(diagLines).toHaveLength(1);
    expect(diagLines[0]).toContain('diag collector off');
    expect(diagLines[0]).toContain('--perfquery.path /nonexistent/perfquery is not an executable file');
  });
});
