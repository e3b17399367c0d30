// The diag collector against the real opensm and infiniband-diags on a simulated fabric (ibsim).
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { requireSystemTools } from '../support/system.js';
import { waitFor } from '../../synthetic/processes.js';
import { startLab, type Lab } from '../../synthetic/ibsim-lab.js';

const tools = requireSystemTools('ibsim', {
  ibsim: 'ibsim-utils',
  opensm: 'opensm',
  perfquery: 'infiniband-diags',
  sminfo: 'infiniband-diags',
  smpquery: 'infiniband-diags',
});

const INTERVAL_MS = 500;
/**
 * The time limit of the tests that wait on a dead SM or a hung tool: short, so that they end soon,
 * and still long enough for the tools that do answer on a machine busy with other tests.
 */
const SHORT_TIMEOUT = '2s';
const HCA1 = '0x0002c90300a1b2c0';
const P = 'device="ibsim0",port="1"';

const teardown: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const step of teardown.splice(0).reverse()) await step();
});

const lab = (net: string): Promise<Lab> => startLab(net, teardown);

/**
 * An exporter reading `sysfs`, running the tools through `paths`, diag every 500 ms. Each command's
 * time limit is the default's, 5 s, unless the test is about what a short one does: a tool through
 * ibsim's umad2sim on a machine busy with other tests took over the 400 ms these tests once had.
 */
function exporter(sysfs: string, paths: Record<string, string>, extra: readonly string[] = [], timeout = '5s'): Exporter {
  const command = parseCommandLine([
    '--path.sysfs',
    sysfs,
    '--web.listen-address',
    '127.0.0.1:0',
    '--collection.interval',
    '1s',
    '--diag.interval',
    `${INTERVAL_MS}ms`,
    '--diag.timeout',
    timeout,
    '--diag.max-concurrent',
    '2',
    '--perfquery.path',
    paths.perfquery!,
    '--sminfo.path',
    paths.sminfo!,
    '--smpquery.path',
    paths.smpquery!,
    ...extra,
  ]);
  if (command.action !== 'run') throw new Error('unexpected action');
  const instance = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { module: 'not-installed' } });
  teardown.push(() => instance.stop());
  return instance;
}

async function metrics(instance: Exporter): Promise<string> {
  return (await instance.app.inject({ method: 'GET', url: '/metrics' })).body;
}

function value(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

/** Poll /metrics until `check` returns a value. */
function until<T>(instance: Exporter, what: string, check: (text: string) => T | undefined, timeoutMs = 10_000): Promise<T> {
  return waitFor(what, async () => check(await metrics(instance)), timeoutMs, 25);
}

describe.skipIf(tools.skipReason !== undefined)('diag collector on a simulated fabric', () => {
  it('(a) no SM: port INIT, SM unreachable; (b) SM up: ACTIVE, reachable, MASTER with its priority', async () => {
    const fabric = await lab('two-hosts.net');
    const sysfs = await fabric.snapshot('Hca2', path.join(fabric.dir, 'snap'));
    const diag = exporter(sysfs, await fabric.wrappers('Hca2'));
    await diag.collectOnce();
    await diag.collectDiagOnce();
    let text = await metrics(diag);
    expect(value(text, `infiniband_port_state_id{${P}}`)).toBe(2);
    expect(value(text, `infiniband_subnet_manager_reachable{${P}}`)).toBe(0);
    expect(value(text, `infiniband_exporter_collector_success{collector="sminfo"}`)).toBe(1);
    expect(
      value(
        text,
        `infiniband_port_peer_info{${P},peer_guid="0x0002c90200400000",peer_port="3",peer_lid="",peer_node_type="Switch",peer_description="sw1 IS5030"}`,
      ),
    ).toBe(1);

    await fabric.startSm('sm', 'Switch1', 7);
    await fabric.waitActive('Hca2');
    await fabric.snapshot('Hca2', path.join(fabric.dir, 'snap'));
    await diag.collectOnce();
    await diag.collectDiagOnce();
    text = await metrics(diag);
    expect(value(text, `infiniband_port_state_id{${P}}`)).toBe(4);
    expect(value(text, `infiniband_subnet_manager_reachable{${P}}`)).toBe(1);
    expect(value(text, `infiniband_subnet_manager_info{${P},sm_guid="0x0002c90200400000",sm_lid="1",state="MASTER"}`)).toBe(1);
    expect(value(text, `infiniband_subnet_manager_priority{${P}}`)).toBe(7);
    expect(value(text, `infiniband_subnet_manager_activity_total{${P}}`)).toBeGreaterThan(0);
    expect(
      value(
        text,
        `infiniband_port_peer_info{${P},peer_guid="0x0002c90200400000",peer_port="3",peer_lid="1",peer_node_type="Switch",peer_description="sw1 IS5030"}`,
      ),
    ).toBe(1);
    for (const collector of ['perfquery', 'sminfo', 'smpquery'])
      expect(value(text, `infiniband_exporter_collector_success{collector="${collector}"}`)).toBe(1);
  });

  it('(c) SM killed after activation: the port stays ACTIVE, reachable drops to 0 within two diag cycles', async () => {
    const fabric = await lab('two-hosts.net');
    await fabric.startSm('sm', 'Switch1', 0);
    await fabric.waitActive('Hca2');
    const snap = path.join(fabric.dir, 'snap');
    const diag = exporter(await fabric.snapshot('Hca2', snap), await fabric.wrappers('Hca2'), [], SHORT_TIMEOUT);
    diag.start();
    await until(diag, 'the SM to be reachable', (text) => value(text, `infiniband_subnet_manager_reachable{${P}}`) === 1 || undefined);

    await fabric.stopSm('sm');
    // Counted in diag cycles, not in time (a busy machine slows the tools): the cycle under way
    // when the SM stopped may still have met it, the next one may not. Each cycle that ends has
    // its own end time; a cycle missed between two polls only lowers the count.
    const stopped = Date.now() / 1000;
    const ended = new Set<number>();
    await until(
      diag,
      'reachable to drop to 0',
      (text) => {
        const at = value(text, 'infiniband_exporter_last_collection_timestamp_seconds{collector="sminfo"}');
        if (at !== undefined && at > stopped) ended.add(at);
        return value(text, `infiniband_subnet_manager_reachable{${P}}`) === 0 || undefined;
      },
      20 * INTERVAL_MS,
    );
    expect(ended.size).toBeGreaterThanOrEqual(1);
    expect(ended.size).toBeLessThanOrEqual(2);

    await fabric.snapshot('Hca2', snap);
    await diag.collectOnce();
    const text = await metrics(diag);
    expect(value(text, `infiniband_port_state_id{${P}}`)).toBe(4);
    expect(value(text, `infiniband_port_sm_lid{${P}}`)).toBe(1);
    expect(text).not.toContain('infiniband_subnet_manager_info{');
  });

  it('(d) two SMs: MASTER and STANDBY seen; after the master is killed the standby becomes MASTER', async () => {
    const fabric = await lab('two-hosts.net');
    const fast = await fabric.fastFailoverConfig();
    await fabric.startSm('master', 'Hca1', 10, ['-F', fast]);
    await fabric.waitSmState('master', 'MASTER');
    await fabric.waitActive('Hca2');
    await fabric.startSm('standby', 'Hca2', 5, ['-F', fast]);
    await fabric.waitSmState('standby', 'STANDBY');
    // The exporter runs beside the standby. ibsim hands a PMA query of Hca2's port to the opensm
    // bound there (which then stops answering), where a real adapter's firmware answers it: its
    // PortSamplesControl query (perfquery -c) fails as ibsim's other nodes fail it.
    const paths = await fabric.wrappers('Hca2');
    const perfquery = path.join(fabric.dir, 'perfquery-no-samples');
    await writeFile(
      perfquery,
      `#!/bin/sh\nif [ "$1" = -c ]; then echo 'ibwarn: [1] sampctlquery: failed' >&2; echo 'perfquery: iberror: failed: sampctlquery' >&2; exit 255; fi\nexec ${paths.perfquery} "$@"\n`,
    );
    await chmod(perfquery, 0o755);
    const diag = exporter(await fabric.snapshot('Hca2', path.join(fabric.dir, 'snap')), { ...paths, perfquery }, [], SHORT_TIMEOUT);
    await diag.collectOnce();
    diag.start();
    const before = await until(diag, 'both SMs', (text) =>
      text.includes('state="STANDBY"') && text.includes('state="MASTER"') ? text : undefined,
    );
    const master = /infiniband_subnet_manager_info\{[^}]*sm_guid="(0x[0-9a-f]+)",sm_lid="(\d+)",state="MASTER"\} 1/.exec(before)!;
    const standby = /infiniband_subnet_manager_info\{[^}]*sm_guid="(0x[0-9a-f]+)",sm_lid="(\d+)",state="STANDBY"\} 1/.exec(before)!;
    expect(master[1]).toBe('0x0002c90300a1b2c1');
    expect(standby[1]).toBe('0x0002c90300a1b3d1');
    expect(value(before, `infiniband_subnet_manager_priority{${P}}`)).toBe(10);

    await fabric.stopSm('master');
    const after = await until(
      diag,
      'the standby to take over',
      // The local SM's own answer may say MASTER a cycle before the port's SM LID leads to it.
      (text) =>
        text.includes(`sm_guid="${standby[1]}",sm_lid="${standby[2]}",state="MASTER"`) &&
        value(text, `infiniband_subnet_manager_reachable{${P}}`) === 1
          ? text
          : undefined,
      20_000,
    );
    expect(after).not.toContain(`sm_guid="${master[1]}"`);
    expect(value(after, `infiniband_subnet_manager_priority{${P}}`)).toBe(5);
    expect(value(after, `infiniband_subnet_manager_reachable{${P}}`)).toBe(1);
  });

  it('(e) 1X and SDR links: expected vs active, degraded 1; the healthy link 0', async () => {
    const fabric = await lab('three-hosts.net');
    await fabric.startSm('sm', 'Switch1', 0);
    for (const host of ['Hca1', 'Hca2', 'Hca3']) await fabric.waitActive(host);
    const config = path.join(fabric.dir, 'expect-qdr-4x.yml');
    await writeFile(config, 'expectations:\n  - {device: "ibsim*", width: 4, speed: QDR}\n');
    const expectQdr4x = ['--config.file', config];
    const hosts = ['Hca1', 'Hca2', 'Hca3'] as const;
    const exporters = await Promise.all(
      hosts.map(async (host) =>
        exporter(await fabric.snapshot(host, path.join(fabric.dir, `snap-${host}`)), await fabric.wrappers(host), expectQdr4x),
      ),
    );
    for (const diag of exporters) {
      await diag.collectOnce();
      await diag.collectDiagOnce();
    }
    const [hca1, hca2, hca3] = await Promise.all(exporters.map(metrics));
    // Hca1: healthy 4X QDR.
    expect(value(hca1!, `infiniband_port_link_width_lanes{${P}}`)).toBe(4);
    expect(value(hca1!, `infiniband_port_link_degraded{${P},reason="width"}`)).toBe(0);
    expect(value(hca1!, `infiniband_port_link_degraded{${P},reason="speed"}`)).toBe(0);
    // Hca2: 1X where 4X is expected.
    expect(value(hca2!, `infiniband_port_link_width_lanes{${P}}`)).toBe(1);
    expect(value(hca2!, `infiniband_port_link_width_expected_lanes{${P}}`)).toBe(4);
    expect(value(hca2!, `infiniband_port_link_degraded{${P},reason="width"}`)).toBe(1);
    expect(value(hca2!, `infiniband_port_link_degraded{${P},reason="speed"}`)).toBe(0);
    // Hca3: SDR lanes where QDR is expected.
    expect(value(hca3!, `infiniband_port_lane_rate_bytes_per_second{${P}}`)).toBe(2.5e9 / 8);
    expect(value(hca3!, `infiniband_port_lane_rate_expected_bytes_per_second{${P}}`)).toBe(10e9 / 8);
    expect(value(hca3!, `infiniband_port_link_degraded{${P},reason="speed"}`)).toBe(1);
    expect(value(hca3!, `infiniband_port_link_degraded{${P},reason="width"}`)).toBe(0);

    // Without a config expectation, the expectation is what both ends enable: the simulator
    // trains every link to exactly that, so nothing is degraded.
    const peerOnly = exporter(path.join(fabric.dir, 'snap-Hca2', 'sys'), await fabric.wrappers('Hca2', 'Hca2-peer'));
    await peerOnly.collectOnce();
    await peerOnly.collectDiagOnce();
    const text = await metrics(peerOnly);
    expect(value(text, `infiniband_port_link_width_expected_lanes{${P}}`)).toBe(1);
    expect(value(text, `infiniband_port_link_degraded{${P},reason="width"}`)).toBe(0);
  });

  it('(f) symbol errors on the switch port appear as peer counters; the saturated one is flagged', async () => {
    const fabric = await lab('two-hosts.net');
    await fabric.startSm('sm', 'Switch1', 0);
    await fabric.waitActive('Hca1');
    expect(await fabric.command('PerformanceSet "Switch1"[1] PortCounters.SymbolErrorCounter=70000')).toContain('has been set to 65535');
    await fabric.command('PerformanceSet "Switch1"[1] PortCounters.LinkErrorRecoveryCounter=3');
    await fabric.command('PerformanceSet "Hca1"[1] PortCounters.PortRcvErrors=5');
    const diag = exporter(await fabric.snapshot('Hca1', path.join(fabric.dir, 'snap')), await fabric.wrappers('Hca1'));
    await diag.collectOnce();
    await diag.collectDiagOnce();
    const text = await metrics(diag);
    expect(value(text, `infiniband_port_peer_symbol_errors_total{${P}}`)).toBe(65535);
    expect(value(text, `infiniband_port_pma_saturated{${P},counter="peer_symbol_errors"}`)).toBe(1);
    expect(value(text, `infiniband_port_peer_link_error_recoveries_total{${P}}`)).toBe(3);
    expect(value(text, `infiniband_port_pma_saturated{${P},counter="peer_link_error_recoveries"}`)).toBeUndefined();
    expect(
      value(
        text,
        `infiniband_port_peer_info{${P},peer_guid="0x0002c90200400000",peer_port="1",peer_lid="1",peer_node_type="Switch",peer_description="sw1 IS5030"}`,
      ),
    ).toBe(1);
    // The local port's own counters come from perfquery (umad2sim's sysfs has no counters/).
    expect(value(text, `infiniband_port_receive_errors_total{${P}}`)).toBe(5);
    expect(value(text, `infiniband_port_receive_packets_total{${P}}`)).toBeGreaterThan(0);
    expect(value(text, `infiniband_port_symbol_errors_total{${P}}`)).toBe(0);
    // The real perfquery -c ends in "iberror: failed: sampctlquery" on ibsim: the tick of an
    // adapter outside the documented table (hca_type "simulator"), one symbol time, 1 ns at QDR 4X;
    // no read error.
    expect(value(text, `infiniband_port_xmit_wait_tick_seconds{${P}}`)).toBeCloseTo(1e-9, 20);
    expect(value(text, 'infiniband_exporter_read_errors_total{collector="perfquery"}')).toBe(0);
    expect(
      value(
        text,
        `infiniband_device_info{device="ibsim0",node_type="CA",node_guid="${HCA1}",sys_image_guid="${HCA1}",firmware_version="1",hca_type="simulator",board_id="",hw_rev="a1",node_desc=""}`,
      ),
    ).toBe(1);
  });

  it('(g) a hanging perfquery is killed at the timeout, counted, and the cycle completes; /metrics never stalls', async () => {
    const fabric = await lab('two-hosts.net');
    await fabric.startSm('sm', 'Switch1', 0);
    await fabric.waitActive('Hca2');
    const paths = await fabric.wrappers('Hca2');
    const pids = path.join(fabric.dir, 'hang.pids');
    // No exec: the sleep is a grandchild of the runner, reachable only through the process group.
    await writeFile(paths.perfquery, `#!/bin/sh\necho $$ >> '${pids}'\nsleep 30 &\necho $! >> '${pids}'\nwait\n`);
    await chmod(paths.perfquery, 0o755);
    const diag = exporter(await fabric.snapshot('Hca2', path.join(fabric.dir, 'snap')), paths, [], SHORT_TIMEOUT);
    await diag.collectOnce();
    diag.start();
    const slowest = { ms: 0 };
    const text = await until(diag, 'a perfquery timeout', (body) =>
      (value(body, 'infiniband_exporter_command_timeouts_total{command="perfquery"}') ?? 0) >= 1 ? body : undefined,
    );
    for (let i = 0; i < 10; i++) {
      const started = Date.now();
      await diag.app.inject({ method: 'GET', url: '/metrics' });
      slowest.ms = Math.max(slowest.ms, Date.now() - started);
    }
    expect(slowest.ms).toBeLessThan(200);
    expect(value(text, 'infiniband_exporter_collector_success{collector="perfquery"}')).toBe(0);
    expect(value(text, 'infiniband_exporter_collector_success{collector="sminfo"}')).toBe(1);
    expect(value(text, 'infiniband_exporter_collector_success{collector="smpquery"}')).toBe(1);
    expect(value(text, `infiniband_subnet_manager_reachable{${P}}`)).toBe(1);
    expect(text).not.toContain('infiniband_port_peer_symbol_errors_total');
    await diag.stop();
    // Every hung wrapper and its sleep are gone (a zombie awaiting its reaper is gone too).
    for (const pid of (await readFile(pids, 'utf8')).trim().split('\n').map(Number)) {
      const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
      expect(stat === undefined || stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')).toBe(true);
    }
  });

  it('(h) tools missing: sysfs metrics still served, no diag collector, one log line', async () => {
    const fabric = await lab('two-hosts.net');
    const sysfs = await fabric.snapshot('Hca2', path.join(fabric.dir, 'snap'));
    const missing = path.join(fabric.dir, 'no-such-dir');
    const lines: string[] = [];
    const command = parseCommandLine([
      '--path.sysfs',
      sysfs,
      '--perfquery.path',
      `${missing}/perfquery`,
      '--sminfo.path',
      `${missing}/sminfo`,
      '--smpquery.path',
      `${missing}/smpquery`,
    ]);
    if (command.action !== 'run') throw new Error('unexpected action');
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(line) });
    const diag = new Exporter({ settings: command.settings, logger, runners: { module: 'not-installed' } });
    teardown.push(() => diag.stop());
    await diag.collectOnce();
    const text = await metrics(diag);
    expect(value(text, `infiniband_port_state_id{${P}}`)).toBe(2);
    expect(text).not.toMatch(/collector="(perfquery|sminfo|smpquery)"/);
    expect(text).not.toContain('infiniband_subnet_manager_');
    expect(lines.filter((line) => line.includes('diag collector'))).toHaveLength(1);
  });
});
