// `infiniband-exporter check`: exit statuses, the text for a person (grouping, colour), the JSON
// for scripts, the scenarios of issue 14, and the real process started the way Slurm or NHC would.
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runCheck } from '../../../src/commands/check/command.js';
import type { ToolRunners } from '../../../src/commands/check/one-cycle.js';
import { buildOnce, MAIN } from '../../support/built.js';
import { generateTree } from '../../../synthetic/generate-tree.js';
import { HOSTILE_CONFIG, HOSTILE_DEVICES, HOSTILE_INTERFACES, hostDir, type HostDir } from '../../support/host-tree.js';
import { DGX, FIXTURES, NO_INFINIBAND, PROJECT_ROOT, SIMULATED_HOST, ZOO, ZOO_CONFIG, copyTree, writeTree } from '../../support/trees.js';
import { recording, ReplayRunner } from '../../support/replay.js';
import { LEAF1, LEAF3, SPINE1, SPINE2 } from '../../support/fabric-recordings.js';
import type { DiagCommand } from '../../../src/sources/diag/local-ports.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';

const QDR_A0 = path.join(FIXTURES, 'sys/qdr-a0');
const PCIE = path.join(FIXTURES, 'sys/pcie');

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

/** Run the check in this process, writing to strings; `tty` pretends stdout is a terminal. */
async function check(argv: string[], options: { tty?: boolean; env?: NodeJS.ProcessEnv; runners?: ToolRunners } = {}): Promise<Outcome> {
  let stdout = '';
  let stderr = '';
  // This machine's kernel log is readable or not depending on who runs the tests: none is followed.
  const code = await runCheck(
    argv.some((arg) => arg.startsWith('--path.kmsg')) || argv[0] === '--help' ? argv : ['--path.kmsg', '/dev/null', ...argv],
    {
      stdout: { write: (text: string) => (stdout += text), isTTY: options.tty ?? false },
      stderr: { write: (text: string) => (stderr += text) },
      env: options.env ?? {},
    },
    { runners: options.runners ?? { ethtool: 'not-installed', module: 'not-installed' } },
  );
  return { code, stdout, stderr };
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});
async function host(...args: Parameters<typeof hostDir>): Promise<HostDir> {
  const made = await hostDir(...args);
  cleanups.push(made.remove);
  return made;
}

describe('exit status', () => {
  it('is 1 when something is critical or warning', async () => {
    expect((await check(['--demo'])).code).toBe(1);
  });

  it('is 0 on the healthy dgx host, where everything is info at most', async () => {
    const { code, stdout } = await check(['--path.sysfs', DGX, '--no-collector.diag']);
    expect(code).toBe(0);
    expect(stdout.trimEnd().split('\n').at(-1)).toBe(
      'OK: 0 critical, 0 warning, 8 info on 8 InfiniBand devices, 8 ports, 8 IPoIB interfaces',
    );
  });

  it('is 0 on a healthy generated tree of 8 devices, with or without the diag flag (no user-MAD interface: diag is skipped, and said so)', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-check-gen-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    await generateTree(dir, 8);
    const off = await check(['--path.sysfs', dir, '--no-collector.diag']);
    expect(off.code).toBe(0);
    const on = await check(['--path.sysfs', dir]);
    expect(on.code).toBe(0);
    expect(on.stdout).toMatch(
      /Not checked:\n {2}cables and optical modules: neither mstlink nor mlxlink is installed\n {2}subnet manager reachability and link peers: the kernel's user-MAD interface is not loaded/,
    );
  });

  it.each([
    [['--no-such-flag'], /^infiniband-exporter check: Unknown option '--no-such-flag' \(see --help\)\n$/],
    [['--format', 'xml'], /^infiniband-exporter check: --format: "xml" is not text or json\n$/],
    [['--diag.timeout', 'soon'], /^infiniband-exporter check: --diag.timeout: "soon" is not a duration/],
    [['extra'], /^infiniband-exporter check: Unexpected argument 'extra'/],
  ])('is 2 with one line for the usage error %j', async (argv, message) => {
    const { code, stdout, stderr } = await check(argv);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toMatch(message);
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  });

  it('is 2 for a sysfs root that is not one, naming the path: a mistyped flag must not drain the node', async () => {
    const { code, stdout, stderr } = await check(['--path.sysfs', '/nonexistent']);
    expect(code).toBe(2);
    expect(stdout).toBe('');
    expect(stderr).toBe(
      'infiniband-exporter check: --path.sysfs: /nonexistent does not exist; expected the directory where sysfs is mounted (/sys, or /host/sys in a container)\n',
    );
    const inside = await check(['--path.sysfs', path.join(DGX, 'class/infiniband'), '--no-collector.diag']);
    expect(inside.code).toBe(2);
    expect(inside.stderr).toMatch(/class\/infiniband has no class\/ directory: it is not a sysfs mount;/);
  });

  it('is 1 on a sysfs root without InfiniBand: the node has no InfiniBand, that is a finding', async () => {
    const { code, stdout, stderr } = await check(['--path.sysfs', NO_INFINIBAND, '--no-collector.diag']);
    expect(code).toBe(1);
    expect(stderr).toBe('');
    expect(stdout).toMatch(/CRITICAL {2}no InfiniBand device found/);
  });

  it('is 2 for a bad config file, naming the file and line', async () => {
    const made = await host([], [], 'diag:\n  interval: often\n');
    const { code, stderr } = await check(['--config.file', made.config]);
    expect(code).toBe(2);
    expect(stderr).toBe(
      `infiniband-exporter check: config file ${made.config}:2: "diag.interval" must be a duration such as 10s, 1m or 500ms, got "often"\n`,
    );
  });

  it('prints its help and exits 0', async () => {
    const { code, stdout } = await check(['--help']);
    expect(code).toBe(0);
    expect(stdout).toMatch(/^usage: infiniband-exporter check \[flags\]/);
    expect(stdout).toContain('--format=<text|json>');
    expect(stdout).toContain('--path.sysfs');
    expect(stdout).not.toContain('--web.listen-address');
  });
});

describe('text for a person', () => {
  it('groups by device, the worst group first, one line per finding plus an indented remedy, then the summary', async () => {
    const { stdout } = await check(['--demo']);
    const lines = stdout.trimEnd().split('\n');
    const headings = lines.filter((line) => /^\S/.test(line) && !line.startsWith('Not checked') && !/^(CRITICAL|WARNING|OK):/.test(line));
    expect(headings.map((line) => line.split(' ')[0])).toEqual(['mlx5_2', 'mlx5_5', 'mlx5_3', 'mlx5_4', 'mlx5_6', 'mlx4_0', 'mlx5_0']);
    expect(lines[0]).toBe('mlx5_2  MT4129, firmware 28.39.1002, "zoo01 mlx5_2"');
    expect(lines[1]).toBe('  CRITICAL  port mlx5_2/1 is INIT with its link up (LinkUp, SM LID 0): no subnet manager has configured it');
    expect(lines[2]).toBe(
      '            → start a subnet manager on one host of this fabric: systemctl enable --now opensm (package opensm) [runbook: infinibandportstuckinitializing]',
    );
    expect(lines.at(-1)).toBe(
      'CRITICAL: 2 critical, 4 warning, 8 info on 13 InfiniBand devices, 14 ports, 5 IPoIB interfaces; first: port mlx5_2/1 is INIT with its link up (LinkUp, SM LID 0): no subnet manager has configured it',
    );
    // Every finding line is followed by its remedy.
    lines.forEach((line, index) => {
      if (/^ {2}(CRITICAL|WARNING|INFO) /.test(line)) expect(lines[index + 1]).toMatch(/^ {12}→ .+ \[runbook: [a-z0-9-]+\]$/);
    });
  });

  it('colours only on a terminal, and never with NO_COLOR', async () => {
    expect((await check(['--demo'])).stdout).not.toContain('\u001b[');
    const tty = await check(['--demo'], { tty: true });
    expect(tty.stdout).toContain('\u001b[1;31mCRITICAL  \u001b[0m');
    expect(tty.stdout).toContain('\u001b[33mWARNING   \u001b[0m');
    expect((await check(['--demo'], { tty: true, env: { NO_COLOR: '1' } })).stdout).not.toContain('\u001b[');
    // An empty NO_COLOR does not count (no-color.org).
    expect((await check(['--demo'], { tty: true, env: { NO_COLOR: '' } })).stdout).toContain('\u001b[');
  });

  it('shows control characters of a hostile node description as ?', async () => {
    const tree = await copyTree(ZOO);
    cleanups.push(tree.remove);
    writeFileSync(path.join(tree.root, 'class/infiniband/mlx5_2/node_desc'), 'evil\u001b]0;pwned\u0007\u001b[2J host\n');
    const { stdout } = await check(['--path.sysfs', tree.root, '--config.file', ZOO_CONFIG]);
    expect(stdout).toContain('"evil?]0;pwned??[2J host"');
    expect(stdout).not.toContain('\u001b');
  });
});

describe('JSON for scripts', () => {
  it('has the documented shape', async () => {
    const { code, stdout } = await check(['--demo', '--format', 'json']);
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as Record<string, unknown>;
    expect(Object.keys(report)).toEqual([
      'version',
      'status',
      'exit_code',
      'counts',
      'host',
      'fabric',
      'not_checked',
      'collectors',
      'findings',
      'ports',
    ]);
    expect(report).toMatchObject({
      version: 1,
      status: 'critical',
      exit_code: 1,
      counts: { critical: 2, warning: 4, info: 8 },
      host: { devices: 13, ports: 14, ipoib_interfaces: 5 },
      fabric: null,
      // The demo host has no adapter: neither the diag nor the module collector runs.
      not_checked: [
        'cables and optical modules: the module collector is off',
        'subnet manager reachability and link peers: the diag collector is off',
      ],
    });
    const findings = report.findings as Record<string, unknown>[];
    expect(findings[0]).toEqual({
      condition: 'port-stuck-init',
      severity: 'critical',
      subject: { kind: 'port', device: 'mlx5_2', port: 1 },
      summary: 'port mlx5_2/1 is INIT with its link up (LinkUp, SM LID 0): no subnet manager has configured it',
      meaning: expect.stringContaining('no subnet manager has brought the port to ACTIVE'),
      cause: expect.stringContaining('No subnet manager'),
      remedy: 'start a subnet manager on one host of this fabric: systemctl enable --now opensm (package opensm)',
      runbook_url: 'https://github.com/infiniband-exporter/infiniband-exporter/blob/main/docs/runbooks.md#infinibandportstuckinitializing',
      alert: 'InfiniBandPortStuckInitializing',
    });
    expect(findings.find((f) => f.condition === 'ipoib-suboptimal')!.subject).toEqual({
      kind: 'interface',
      interface: 'ib0.8001',
      device: 'mlx5_0',
      port: 1,
    });
    for (const finding of findings)
      expect(Object.keys(finding)).toEqual([
        'condition',
        'severity',
        'subject',
        'summary',
        'meaning',
        'cause',
        'remedy',
        'runbook_url',
        'alert',
      ]);
    const ports = report.ports as Record<string, unknown>[];
    expect(ports).toHaveLength(14);
    expect(ports.find((p) => p.device === 'mlx5_5')).toEqual({
      device: 'mlx5_5',
      port: 1,
      node_description: 'zoo01 mlx5_5',
      link_layer: 'InfiniBand',
      state: 'DOWN',
      physical_state: 'Polling',
      width: null,
      speed: null,
      rate_gbps: null,
      expected: null,
      ipoib: ['ib3'],
      peer: null,
      worst: 'critical',
    });
    expect((report.collectors as { collector: string }[]).map((c) => c.collector)).toEqual([
      'sysfs',
      'ipoib',
      'tso',
      'pcie',
      'host_jobs',
      'kernel',
    ]);
  });

  it('says ok with exit_code 0 on a healthy host', async () => {
    const report = JSON.parse((await check(['--path.sysfs', DGX, '--no-collector.diag', '--format=json'])).stdout) as {
      status: string;
      exit_code: number;
    };
    expect(report).toMatchObject({ status: 'ok', exit_code: 0 });
  });
});

describe('the scenarios of issue 14', () => {
  it('a hostile host: exit 1, each problem with its device, port or interface and cause, opensm for the stuck INIT, the RoCE port not blamed', async () => {
    const made = await host(HOSTILE_DEVICES, HOSTILE_INTERFACES, HOSTILE_CONFIG);
    const { code, stdout } = await check(['--path.sysfs', made.root, '--config.file', made.config]);
    expect(code).toBe(1);
    expect(stdout).toMatch(/CRITICAL {2}port mlx5_0\/1 is INIT .*no subnet manager.*\n.*opensm/);
    expect(stdout).toMatch(/WARNING {3}port mlx5_1\/1 runs at 1X, expected 4X/);
    expect(stdout).toMatch(/CRITICAL {2}port mlx5_2\/1 has no link \(Polling\): cable pulled or broken/);
    expect(stdout).toMatch(/INFO {6}IPoIB ib0\.8001 \(mlx5_1\/1, P_Key 0x8001\) runs in datagram mode with MTU 2044/);
    expect(stdout).not.toMatch(/mlx5_3/);
    const json = JSON.parse((await check(['--path.sysfs', made.root, '--config.file', made.config, '--format', 'json'])).stdout) as {
      findings: { subject: { device?: string } }[];
    };
    expect(json.findings.filter((f) => f.subject.device === 'mlx5_3')).toEqual([]);
  });

  it('a QDR host whose ConnectX is revision a0 with IPoIB up: exit 1, the interface and TSO named', async () => {
    const { code, stdout } = await check(['--path.sysfs', QDR_A0]);
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /WARNING {3}IPoIB ib0 on mlx4_0 \(ConnectX hardware revision a0\) must run with TCP segmentation offload \(TSO\) off; whether it is cannot be told: ethtool is not installed\n.*ethtool -K ib0 tso off/,
    );
  });
});

describe('a host whose adapters trained their PCIe links down (test/fixtures/sys/pcie)', () => {
  it('exits 1 naming mlx5_1, PCIe and what its port can move, and the Gen3 adapter whose slot is the limit; nothing for the healthy one or the one without attributes', async () => {
    const { code, stdout } = await check(['--path.sysfs', PCIE]);
    expect(code).toBe(1);
    expect(stdout).toContain(
      'WARNING   mlx5_1 runs PCIe Gen5 x8 of x16: its NDR port can move at most ~31 GB/s of its 50\n            → reseat the card',
    );
    expect(stdout).toContain(
      'WARNING   mlx5_2 runs PCIe Gen3 x16 of Gen4 x16: its HDR port can move at most ~15 GB/s of its 25\n            → move the card to a slot wired for Gen4 x16',
    );
    expect(stdout).not.toMatch(/mlx5_[03] runs PCIe|could not read/);
    expect(stdout.trimEnd().split('\n').at(-1)).toMatch(
      /^WARNING: 0 critical, 2 warning, \d+ info on 4 InfiniBand devices, 4 ports, 1 IPoIB interface; first: mlx5_1 runs PCIe Gen5 x8 of x16/,
    );
  });

  it('says the same in JSON: the finding, its device, the alert it mirrors and the runbook', async () => {
    const { code, stdout } = await check(['--path.sysfs', PCIE, '--format', 'json']);
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as {
      status: string;
      exit_code: number;
      findings: Record<string, unknown>[];
      collectors: { collector: string; success: boolean }[];
    };
    expect(report).toMatchObject({ status: 'warning', exit_code: 1 });
    const pcie = report.findings.filter((f) => String(f.condition).startsWith('pcie-'));
    expect(pcie.map((f) => [f.condition, f.severity, f.subject, f.alert])).toEqual([
      ['pcie-link-degraded', 'warning', { kind: 'device', device: 'mlx5_1' }, 'InfiniBandPCIeLinkDegraded'],
      ['pcie-link-degraded', 'warning', { kind: 'device', device: 'mlx5_2' }, 'InfiniBandPCIeLinkDegraded'],
    ]);
    expect(pcie[0]).toMatchObject({
      summary: 'mlx5_1 runs PCIe Gen5 x8 of x16: its NDR port can move at most ~31 GB/s of its 50',
      runbook_url: 'https://github.com/infiniband-exporter/infiniband-exporter/blob/main/docs/runbooks.md#infinibandpcielinkdegraded',
    });
    expect(report.collectors.find((c) => c.collector === 'pcie')).toMatchObject({ success: true });
  });
});

describe('one cycle with the diag collector (outputs recorded on the simulated fabric)', () => {
  async function simulatedHost(): Promise<string> {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-check-diag-'));
    cleanups.push(() => rm(dir, { recursive: true, force: true }));
    // The SM configured the port (ACTIVE, SM LID 1) and then died; the RoCE port must get no MAD.
    await writeTree(dir, {
      ...SIMULATED_HOST,
      'class/infiniband/ibsim0/ports/1/cap_mask': '0x0050c048\n',
      'class/infiniband/mlx5_1/node_type': '1: CA\n',
      'class/infiniband/mlx5_1/ports/1/state': '4: ACTIVE\n',
      'class/infiniband/mlx5_1/ports/1/phys_state': '5: LinkUp\n',
      'class/infiniband/mlx5_1/ports/1/rate': '100 Gb/sec (4X EDR)\n',
      'class/infiniband/mlx5_1/ports/1/link_layer': 'Ethernet\n',
      'class/infiniband_mad/abi_version': '5\n',
    });
    return dir;
  }

  it('reports a dead subnet manager the port still believes in, from sminfo, and asks nothing of the RoCE port', async () => {
    const diag = new ReplayRunner<DiagCommand>('diag', ['sm-killed', 'sm-master']);
    const { code, stdout } = await check(['--path.sysfs', await simulatedHost(), '--diag.timeout=1s'], {
      runners: { module: 'not-installed', diag, ethtool: 'not-installed' },
    });
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /CRITICAL {2}port ibsim0\/1: no subnet manager answers sminfo at SM LID 1: it died or cannot be reached\n.*systemctl restart opensm/,
    );
    // Everything but the modules (no mstlink here) was checked.
    expect(stdout).toContain('Not checked:\n  cables and optical modules: neither mstlink nor mlxlink is installed\n\n');
    expect(diag.calls.length).toBeGreaterThan(0);
    expect(diag.calls.filter((call) => call.includes('mlx5_1'))).toEqual([]);
  });

  it('is quiet about the subnet manager when it answers', async () => {
    const { stdout } = await check(['--path.sysfs', await simulatedHost(), '--diag.timeout=1s'], {
      runners: { module: 'not-installed', diag: new ReplayRunner<DiagCommand>('diag', 'sm-master'), ethtool: 'not-installed' },
    });
    expect(stdout).not.toMatch(/subnet manager/);
  });
});

describe('--collector.fabric (outputs recorded on the simulated fat tree)', () => {
  const FABRIC_FLAGS = [
    '--path.sysfs',
    DGX,
    '--config.file',
    path.join(FIXTURES, 'config/fabric.yml'),
    '--diag.timeout',
    '2s',
    '--fabric.state-dir',
    path.join(FIXTURES, 'no-such-state-dir'),
  ];
  const fabricRunners = (scenarios: string[]): ToolRunners => ({
    ethtool: 'not-installed',
    module: 'not-installed',
    fabric: new ReplayRunner<FabricCommand>('fabric', scenarios),
  });

  it("runs one discovery, one ports and one SA cycle, and prints the fabric after the host's devices: the subnet, then each switch, worst first", async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['pulled', 'healthy']);
    const { code, stdout } = await check(FABRIC_FLAGS, { runners: { module: 'not-installed', ethtool: 'not-installed', fabric: runner } });
    expect(code).toBe(1);
    expect([...runner.calls].sort()).toEqual([
      'iblinkinfo --line --switches-only',
      'ibnetdiscover --cache <cache>',
      'ibqueryerrors --skip-sl --counters --load-cache <cache> --switch',
      'ibqueryerrors --skip-sl --threshold-file /dev/null --load-cache <cache> --switch',
      'saquery -g',
      'saquery -m',
      'saquery SMIR',
      'sminfo 1',
      'sminfo 14',
    ]);
    const lines = stdout.trimEnd().split('\n');
    const headings = lines.filter((line) => /^\S/.test(line) && !line.startsWith('Not checked') && !/^(CRITICAL|WARNING|OK):/.test(line));
    expect(headings).toEqual([
      ...Array.from({ length: 8 }, (_, i) => `mlx5_${i}  MT4129, firmware 28.39.1002, "dgx01 mlx5_${i}"`),
      'the fabric  5 switches, 8 CAs and 13 links',
      `MF0;leaf-1:SX6036/U1  switch ${LEAF1}, LID 4`,
      `MF0;leaf-3:SX6036/U1  switch ${LEAF3}, LID 6`,
      `MF0;spine-2:SX6036/U1  switch ${SPINE2}, LID 3`,
      `MF0;spine-1:SX6036/U1  switch ${SPINE1}, LID 2`,
      // One cycle has no counter rise to judge: the list a running exporter keeps, none here.
      'Links to drain and replace: none.',
    ]);
    expect(stdout).toContain(`MF0;leaf-3:SX6036/U1  switch ${LEAF3}, LID 6
  CRITICAL  port 5 of MF0;leaf-3:SX6036/U1 has no link (Polling): cable pulled or broken, a transceiver failed, or the device at the other end is down (it passed 71 packets since its counters were reset)
            → reseat the cable at both ends (the QSFP must click in), then try another cable or transceiver, and check the device at the other end is powered (ibportstate -G ${LEAF3} 5 query shows the port's state) [runbook: infinibandfabricportdown]`);
    expect(lines.at(-1)).toBe(
      'CRITICAL: 3 critical, 1 warning, 10 info on 8 InfiniBand devices, 8 ports, 8 IPoIB interfaces and a fabric of 5 switches, 8 CAs and 13 links; first: port 2 of MF0;leaf-1:SX6036/U1 has no link (Polling): cable pulled or broken, a transceiver failed, or the device at the other end is down (it passed 76 packets since its counters were reset)',
    );
  });

  it('prints the fabric in JSON: its summary, and fabric-port subjects with both ends of a link', async () => {
    const { code, stdout } = await check([...FABRIC_FLAGS, '--format', 'json'], { runners: fabricRunners(['healthy']) });
    expect(code).toBe(1);
    const report = JSON.parse(stdout) as {
      fabric: unknown;
      findings: { condition: string; subject: unknown }[];
      collectors: { collector: string; success: boolean }[];
    };
    expect(report.fabric).toEqual({
      discovered_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      shard: '1/1',
      nodes: { switch: 5, ca: 9, router: 0 },
      links: 15,
      ports_read: 32,
      ports_up: 21,
      subnet_managers: [
        { guid: '0x0002c90300a10011', lid: 1, priority: 5, state: 'MASTER', host: 'node11 HCA-1' },
        { guid: '0x0002c90300a30031', lid: 14, priority: 5, state: 'STANDBY', host: 'node33 HCA-1' },
      ],
      multicast_groups: [{ mgid: 'ff12:401b:ffff::ffff:ffff', pkey: '0xffff', mtu_bytes: 2048, rate_gbps: 10, members: 0 }],
    });
    expect(report.findings.find((f) => f.condition === 'fabric-link-degraded')!.subject).toEqual({
      kind: 'fabric-port',
      node_guid: SPINE1,
      node_type: 'switch',
      node_name: 'MF0;spine-1:SX6036/U1',
      port: 1,
      peer: { node_guid: LEAF1, node_type: 'switch', node_name: 'MF0;leaf-1:SX6036/U1', port: 4 },
    });
    expect(report.findings.find((f) => f.condition === 'multicast-group-suboptimal')!.subject).toEqual({
      kind: 'multicast-group',
      mgid: 'ff12:401b:ffff::ffff:ffff',
      pkey: '0xffff',
    });
    expect(report.findings.find((f) => f.condition === 'subnet-manager-priority-tie')!.subject).toEqual({ kind: 'subnet' });
    expect(report.collectors.map((c) => `${c.collector} ${c.success}`)).toEqual([
      'sysfs true',
      'ipoib true',
      'tso true',
      'pcie true',
      'host_jobs true',
      'kernel true',
      'fabric_discovery true',
      'fabric_ports true',
      'fabric_sa true',
      'fabric_verdict true',
    ]);
  });

  it('says when the fabric could not be discovered, and the collectors in their order', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) =>
      command === 'ibnetdiscover' || command === 'saquery'
        ? { command, args, outcome: 'exited', exitCode: 255, stdout: '', stderr: `${command}: iberror: failed`, durationMs: 1 }
        : undefined,
    );
    const { code, stdout } = await check(FABRIC_FLAGS, { runners: { module: 'not-installed', ethtool: 'not-installed', fabric: runner } });
    expect(code).toBe(1);
    expect(stdout).toMatch(
      /\nthe fabric {2}not discovered\n {2}WARNING {3}collector fabric_discovery failed .*\n.*\n {2}WARNING {3}collector fabric_sa failed .*\n {12}→ run the failing command or read the file by hand, as the same user: saquery SMIR /,
    );
    expect(stdout.trimEnd().split('\n').at(-1)).toMatch(
      /^WARNING: 0 critical, 2 warning, 8 info on 8 InfiniBand devices, 8 ports, 8 IPoIB interfaces and a fabric not discovered; first: collector fabric_discovery failed/,
    );
  });

  it('counts the junk lines of an output that exited 0 in one error entry: the JSON says how many, the finding too', async () => {
    const runner = new ReplayRunner<FabricCommand>('fabric', ['healthy'], (command, args) => {
      if (command !== 'iblinkinfo') return undefined;
      const recorded = recording('fabric', 'healthy', 'iblinkinfo-switches');
      return {
        command,
        args,
        outcome: 'exited',
        exitCode: 0,
        stdout: `${recorded.stdout}${'junk\n'.repeat(1000)}`,
        stderr: '',
        durationMs: 1,
      };
    });
    const { stdout } = await check([...FABRIC_FLAGS, '--format', 'json'], {
      runners: { module: 'not-installed', ethtool: 'not-installed', fabric: runner },
    });
    const report = JSON.parse(stdout) as {
      findings: { summary: string }[];
      collectors: { collector: string; success: boolean; errors: { item: string; message: string; count: number }[] }[];
    };
    const ports = report.collectors.find((c) => c.collector === 'fabric_ports')!;
    expect(ports.success).toBe(false);
    expect(ports.errors).toEqual([
      {
        item: 'iblinkinfo --line --switches-only',
        message: expect.stringMatching(/^output not understood: 1000 lines skipped/),
        count: 1000,
      },
    ]);
    expect(report.findings.map((finding) => finding.summary)).toContainEqual(
      expect.stringMatching(
        /^collector fabric_ports failed \(1000 errors; first: iblinkinfo --line --switches-only: output not understood/,
      ),
    );
  });

  it('lists the fabric flags in its help', async () => {
    const { stdout } = await check(['--help']);
    for (const flag of ['--collector.fabric', '--fabric.node-name-map', '--fabric.interval', '--ibnetdiscover.path'])
      expect(stdout).toContain(flag);
  });
});

describe('the check path', () => {
  /** Every module a source file imports statically, transitively (type-only imports left out). */
  function staticImports(entry: string, seen = new Set<string>()): Set<string> {
    if (seen.has(entry)) return seen;
    seen.add(entry);
    if (!entry.startsWith(PROJECT_ROOT)) return seen;
    const source = readFileSync(entry, 'utf8');
    for (const match of source.matchAll(/^import\s+(?!type\b)[^;]*?from\s+'([^']+)';/gms)) {
      const specifier = match[1]!;
      if (specifier.startsWith('.')) staticImports(path.resolve(path.dirname(entry), specifier.replace(/\.js$/, '.ts')), seen);
      else seen.add(specifier);
    }
    return seen;
  }

  it('loads nothing of the HTTP server, fastify or prom-client, and cli.ts loads them only on demand', () => {
    for (const entry of ['src/commands/check/command.ts', 'src/cli.ts']) {
      const modules = [...staticImports(path.join(PROJECT_ROOT, entry))];
      expect(
        modules.filter(
          (m) =>
            /^(fastify|prom-client|@fastify)/.test(m) ||
            /\/src\/commands\/serve\/(app|exporter|web-config|landing-page|slow-clients)\.ts$/.test(m) ||
            (m.includes('/src/metrics/') && !m.endsWith('/build-info.ts')),
        ),
        entry,
      ).toEqual([]);
      expect(modules.length, entry).toBeGreaterThan(5);
    }
  });
});

describe('the real process', () => {
  let dir: string;
  beforeAll(async () => {
    buildOnce();
    dir = await mkdtemp(path.join(tmpdir(), 'ibx-check-process-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const run = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, [MAIN, 'check', ...args], { encoding: 'utf8', timeout: 20_000, env: { ...process.env, ...env } });

  it('exits 1 on the demo host, 0 on the dgx, 2 on a usage error', async () => {
    expect(run(['--demo']).status).toBe(1);
    const dgx = run(['--path.sysfs', DGX, '--no-collector.diag']);
    expect(dgx.status).toBe(0);
    expect(dgx.stderr).toBe('');
    const usage = run(['--format', 'yaml']);
    expect(usage.status).toBe(2);
    expect(usage.stderr).toBe('infiniband-exporter check: --format: "yaml" is not text or json\n');
    // As NHC or Slurm would run it with a mistyped root: a usage error, not a sick node.
    const missing = run(['--path.sysfs=/nonexistent']);
    expect(missing.status).toBe(2);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toBe(
      'infiniband-exporter check: --path.sysfs: /nonexistent does not exist; expected the directory where sysfs is mounted (/sys, or /host/sys in a container)\n',
    );
  });

  it('names the interface and TSO on the a0 host with whatever ethtool this machine has', () => {
    const result = run(['--path.sysfs', QDR_A0]);
    expect(result.status).toBe(1);
    expect(result.stdout).toMatch(/IPoIB ib0 on mlx4_0 \(ConnectX hardware revision a0\).*TCP segmentation offload \(TSO\)/);
  });

  it('exits 1 on the host whose adapter trained at x8, naming it and PCIe in text and JSON', () => {
    // No module tool: mstlink on this machine would read its own adapters, not the fixture's.
    const text = run(['--path.sysfs', PCIE, '--no-collector.module']);
    expect(text.status).toBe(1);
    expect(text.stdout).toContain('mlx5_1 runs PCIe Gen5 x8 of x16');
    const json = run(['--path.sysfs', PCIE, '--no-collector.module', '--format', 'json']);
    expect(json.status).toBe(1);
    const report = JSON.parse(json.stdout) as { findings: { condition: string; subject: { device?: string } }[] };
    expect(report.findings.filter((f) => f.condition === 'pcie-link-degraded').map((f) => f.subject.device)).toEqual(['mlx5_1', 'mlx5_2']);
  });

  it('writes JSON that parses, also when stdout is a pipe to a script', async () => {
    const file = path.join(dir, 'out.json');
    const result = run(['--demo', '--format', 'json']);
    await writeFile(file, result.stdout);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({ status: 'critical', exit_code: 1 });
  });
});
