// Findings judged from real collection cycles of the fixture hosts and of small written hosts:
// every quirk of the zoo has its finding, the dgx has nothing above info, RoCE ports never get
// subnet manager or INIT findings, and each finding mirrors its alert and runbook.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { collectOnce } from '../../src/commands/check/one-cycle.js';
import type { ToolRunners } from '../../src/commands/check/one-cycle.js';
import type { Collector } from '../../src/collection/collector.js';
import { PERFQUERY } from '../../src/collectors/diag/perfquery.js';
import { COLLECTORS } from '../../src/collectors/registry.js';
import { SMINFO } from '../../src/collectors/diag/sminfo.js';
import { SMPQUERY } from '../../src/collectors/diag/smpquery.js';
import { parseServeCommandLine } from '../../src/commands/serve/command-line.js';
import { RUNBOOK_BASE, type Finding, type FindingSubject } from '../../src/model/finding.js';
import { findingsOf } from '../../src/findings/findings.js';
import { portOverview } from '../../src/findings/port-overview.js';
import type { CommandResult, CommandRunner } from '../../src/sources/command-runner.js';
import type { EthtoolCommand } from '../../src/sources/ethtool.js';
import type { Snapshot } from '../../src/model/snapshot.js';
import { HOSTILE_CONFIG, HOSTILE_DEVICES, HOSTILE_INTERFACES, hostDir, type HostDir } from '../support/host-tree.js';
import { DGX, FIXTURES, PROJECT_ROOT } from '../support/trees.js';

const QDR_A0 = path.join(FIXTURES, 'sys/qdr-a0');

async function snapshotOf(flags: string[], runners: ToolRunners = {}): Promise<Snapshot> {
  const command = parseServeCommandLine(flags);
  if (command.action !== 'run') throw new Error('not a command line that runs');
  return (await collectOnce(command.settings, pino({ level: 'silent' }), COLLECTORS, { module: 'not-installed', ...runners })).snapshot;
}

/** The snapshot with `part` as `collector`'s part. */
function withPart<P>(snapshot: Snapshot, collector: Collector<P>, part: P): Snapshot {
  return { ...snapshot, parts: new Map([...snapshot.parts, [collector.name, part]]) };
}

function subjectText(subject: FindingSubject): string {
  switch (subject.kind) {
    case 'port':
      return `${subject.device}/${subject.port}`;
    case 'interface':
      return subject.interface;
    case 'collector':
      return `collector ${subject.collector}`;
    default:
      return subject.kind;
  }
}

/** `severity condition subject`, one string per finding, in report order. */
const brief = (findings: readonly Finding[]): string[] => findings.map((f) => `${f.severity} ${f.condition} ${subjectText(f.subject)}`);

/** Answers `ethtool -k` with a recorded output for every interface. */
function ethtoolAnswering(file: string): CommandRunner<EthtoolCommand> {
  const stdout = readFileSync(path.join(FIXTURES, 'ethtool', file), 'utf8');
  return {
    run: async (command, args): Promise<CommandResult<EthtoolCommand>> => ({
      command,
      args,
      outcome: 'exited',
      exitCode: 0,
      stdout,
      stderr: '',
      durationMs: 1,
    }),
  };
}

let hosts: HostDir[] = [];
afterEach(async () => {
  for (const host of hosts) await host.remove();
  hosts = [];
});
async function host(...args: Parameters<typeof hostDir>): Promise<HostDir> {
  const made = await hostDir(...args);
  hosts.push(made);
  return made;
}

describe('the zoo fixture host', () => {
  it('has a finding for every quirk that is a problem, worst first (test/fixtures/sys/README.md)', async () => {
    const findings = findingsOf(await snapshotOf(['--demo']));
    expect(brief(findings)).toEqual([
      'critical port-stuck-init mlx5_2/1',
      'critical link-down mlx5_5/1',
      'warning link-width-degraded mlx5_3/1',
      'warning link-speed-degraded mlx5_4/1',
      'warning counter-saturated mlx5_4/1',
      'warning counter-saturated mlx5_6/1',
      'info error-counters mlx5_0/1',
      'info error-counters mlx5_3/1',
      'info error-counters mlx5_4/1',
      'info error-counters mlx5_5/1',
      'info ipoib-suboptimal ib0.8001',
      'info ipoib-suboptimal ib1',
      'info ipoib-suboptimal ib2',
      'info ipoib-suboptimal ib3',
    ]);
    const text = (condition: string, subject: string): string =>
      findings.find((f) => f.condition === condition && subjectText(f.subject) === subject)!.summary;
    expect(text('port-stuck-init', 'mlx5_2/1')).toMatch(/INIT .*LinkUp.*no subnet manager/);
    expect(findings.find((f) => f.condition === 'port-stuck-init')!.remedy).toMatch(/opensm/);
    expect(text('link-down', 'mlx5_5/1')).toMatch(/Polling.*cable.*went down 3 times.*IPoIB ib3/);
    expect(text('link-width-degraded', 'mlx5_3/1')).toMatch(/1X, expected 4X \(the config file\)/);
    expect(text('link-speed-degraded', 'mlx5_4/1')).toMatch(/SDR .*expected EDR/);
    expect(text('counter-saturated', 'mlx5_4/1')).toContain(
      'symbol_errors 65535, link_downed 255, local_link_integrity_errors 15, transmit_data_bytes 17179869180',
    );
    // 2^64 - 1 is not exactly representable: said as an approximation.
    expect(text('counter-saturated', 'mlx5_6/1')).toContain('transmit_data_bytes ≈7.379e+19');
    // Saturated counters are not listed again as counts; transmit_wait is congestion, not an error.
    expect(text('error-counters', 'mlx5_4/1')).toBe(
      'port mlx5_4/1 has counted errors since its counters were reset: link_error_recoveries 12, receive_errors 1432',
    );
    expect(text('error-counters', 'mlx5_0/1')).not.toContain('transmit_wait');
    expect(text('ipoib-suboptimal', 'ib0.8001')).toMatch(/ib0\.8001 \(mlx5_0\/1, P_Key 0x8001\) runs in datagram mode with MTU 2044/);
    expect(text('ipoib-suboptimal', 'ib2')).toContain('no carrier');
  });

  it('gives the RoCE and iWARP ports no finding, though their SM LID is 0', async () => {
    const findings = findingsOf(await snapshotOf(['--demo']));
    for (const device of ['mlx5_1', 'irdma0', 'i40iw0']) {
      expect(findings.filter((f) => f.subject.kind === 'port' && f.subject.device === device)).toEqual([]);
    }
  });

  it('fills the port overview: every port, with its expectation, IPoIB and worst finding', async () => {
    const snapshot = await snapshotOf(['--demo']);
    const rows = portOverview(snapshot, findingsOf(snapshot));
    expect(rows).toHaveLength(14);
    expect(rows.find((row) => row.device === 'mlx5_2')).toMatchObject({
      port: 1,
      linkLayer: 'InfiniBand',
      state: 'INIT',
      physicalState: 'LinkUp',
      width: 4,
      speed: 'NDR',
      ipoib: ['ib2'],
      worst: 'critical',
      expected: { width: 4, speed: 'NDR', source: 'config' },
      nodeDescription: 'zoo01 mlx5_2',
    });
    // A port without a physical link has no width or speed worth showing (mlx5 says 4X QDR then).
    expect(rows.find((row) => row.device === 'mlx5_5')).toMatchObject({
      state: 'DOWN',
      physicalState: 'Polling',
      width: undefined,
      speed: undefined,
      ipoib: ['ib3'],
    });
    expect(rows.find((row) => row.device === 'mlx4_0' && row.port === 2)).toMatchObject({ ipoib: ['ib1'], worst: 'info' });
    expect(rows.find((row) => row.device === 'mlx5_7')).toMatchObject({ worst: undefined });
  });
});

describe('the dgx fixture host (8x NDR, healthy)', () => {
  it('has nothing above info: only its datagram-mode IPoIB interfaces, the best mlx5 enhanced IPoIB can do', async () => {
    const findings = findingsOf(await snapshotOf(['--path.sysfs', DGX, '--no-collector.diag']));
    expect(findings.every((f) => f.severity === 'info')).toBe(true);
    expect(brief(findings)).toEqual(Array.from({ length: 8 }, (_, i) => `info ipoib-suboptimal ib${i}`));
    expect(findings[0]!.remedy).toMatch(/on mlx5 with enhanced IPoIB this is already the best/);
  });
});

describe('the hostile host of the issue', () => {
  it('names each problem with its cause and leaves the RoCE port alone', async () => {
    const made = await host(HOSTILE_DEVICES, HOSTILE_INTERFACES, HOSTILE_CONFIG);
    const findings = findingsOf(await snapshotOf(['--path.sysfs', made.root, '--config.file', made.config]));
    expect(brief(findings)).toEqual([
      'critical port-stuck-init mlx5_0/1',
      'critical link-down mlx5_2/1',
      'warning link-width-degraded mlx5_1/1',
      'info error-counters mlx5_1/1',
      'info error-counters mlx5_2/1',
      'info ipoib-suboptimal ib0.8001',
    ]);
    expect(findings.filter((f) => f.subject.kind === 'port' && f.subject.device === 'mlx5_3')).toEqual([]);
  });

  it('calls a port without link and without any sign of use a possible spare, while other ports have links', async () => {
    const made = await host([
      {
        name: 'mlx5_0',
        ports: [
          { state: '4: ACTIVE', phys: '5: LinkUp', rate: '200 Gb/sec (4X HDR)', lid: 3, smLid: 1 },
          { state: '1: DOWN', phys: '2: Polling', rate: '40 Gb/sec (4X QDR)' },
        ],
      },
    ]);
    const findings = findingsOf(await snapshotOf(['--path.sysfs', made.root, '--no-collector.diag']));
    expect(brief(findings)).toEqual(['info port-without-link mlx5_0/2']);
    expect(findings[0]!.summary).toMatch(/no cable, a pulled or broken cable, or the peer is down/);
  });

  it('makes the only InfiniBand port without link critical: the host has no InfiniBand at all', async () => {
    const made = await host([{ name: 'mlx5_0', ports: [{ state: '1: DOWN', phys: '2: Polling', rate: '40 Gb/sec (4X QDR)' }] }]);
    const findings = findingsOf(await snapshotOf(['--path.sysfs', made.root, '--no-collector.diag']));
    expect(brief(findings)).toEqual(['critical link-down mlx5_0/1']);
    expect(findings[0]!.summary).toContain('no port of this host has an InfiniBand link');
  });

  it('tells a disabled port from a pulled cable', async () => {
    const made = await host([
      { name: 'mlx5_0', ports: [{ state: '4: ACTIVE', phys: '5: LinkUp', rate: '200 Gb/sec (4X HDR)', lid: 3, smLid: 1 }] },
      { name: 'mlx5_1', ports: [{ state: '1: DOWN', phys: '3: Disabled', rate: '200 Gb/sec (4X HDR)', counters: { link_downed: 2 } }] },
    ]);
    const findings = findingsOf(await snapshotOf(['--path.sysfs', made.root, '--no-collector.diag']));
    const down = findings.find((f) => f.condition === 'link-down')!;
    expect(down.summary).toMatch(/Disabled.*it is disabled/);
    expect(down.remedy).toMatch(/ibportstate .* enable/);
  });

  it('reports SM LID 0 on an ACTIVE linked IB port, but not on RoCE', async () => {
    const made = await host([
      { name: 'mlx5_0', ports: [{ state: '4: ACTIVE', phys: '5: LinkUp', rate: '200 Gb/sec (4X HDR)', lid: 3, smLid: 0 }] },
      { name: 'mlx5_1', ports: [{ state: '2: INIT', phys: '5: LinkUp', rate: '100 Gb/sec (4X EDR)', linkLayer: 'Ethernet' }] },
    ]);
    const findings = findingsOf(await snapshotOf(['--path.sysfs', made.root, '--no-collector.diag']));
    expect(brief(findings)).toEqual(['critical no-sm-lid mlx5_0/1']);
  });

  it('says when there is no InfiniBand device at all', async () => {
    const made = await host([]);
    const findings = findingsOf(await snapshotOf(['--path.sysfs', made.root, '--no-collector.diag']));
    expect(brief(findings)).toEqual(['critical no-devices host']);
  });
});

describe('findings from the diag collector and the collectors themselves', () => {
  const base = async (): Promise<Snapshot> => snapshotOf(['--path.sysfs', DGX, '--no-collector.diag']);

  it('reports a subnet manager that does not answer sminfo on a linked IB port, never on RoCE', async () => {
    const snapshot = await base();
    const withDiag = withPart(snapshot, SMINFO, new Map([['mlx5_0/1', { reachable: false, master: undefined, local: undefined }]]));
    const findings = findingsOf(withDiag);
    expect(brief(findings)[0]).toBe('critical subnet-manager-unreachable mlx5_0/1');
    expect(findings[0]!.summary).toContain('SM LID 1');
    const roce: Snapshot = {
      ...withDiag,
      devices: withDiag.devices.map((device) =>
        device.name === 'mlx5_0' ? { ...device, ports: device.ports.map((port) => ({ ...port, linkLayer: 'Ethernet' })) } : device,
      ),
    };
    expect(findingsOf(roce).filter((f) => f.condition === 'subnet-manager-unreachable')).toEqual([]);
  });

  it("lists the link peer's error and saturated counters as peer_ ones", async () => {
    const snapshot = await base();
    const peer = { guid: '0x0002c90300a1b3d0', port: 7, lid: 12, nodeType: 'Switch' as const, description: 'leaf-01' };
    const peerCounters = [
      { name: 'symbol_errors', value: 65535, saturated: true },
      { name: 'receive_errors', value: 4, saturated: false },
    ];
    const withPeer = withPart(
      withPart(snapshot, SMPQUERY, new Map([['mlx5_3/1', { enabledCapability: undefined, peer }]])),
      PERFQUERY,
      new Map([['mlx5_3/1', { counters: [], peerCounters }]]),
    );
    const findings = findingsOf(withPeer).filter((f) => f.subject.kind === 'port' && f.subject.device === 'mlx5_3');
    expect(findings.map((f) => f.summary)).toEqual([
      'port mlx5_3/1: 1 counter stuck at its maximum (peer_symbol_errors 65535): new events are no longer counted',
      'port mlx5_3/1 has counted errors since its counters were reset: peer_receive_errors 4',
    ]);
    expect(portOverview(withPeer, findingsOf(withPeer)).find((row) => row.device === 'mlx5_3')!.peer).toEqual({
      guid: peer.guid,
      port: 7,
      description: 'leaf-01',
    });
  });

  it('warns about a failing collector and tells read errors of a working one as a fact', async () => {
    const snapshot = await base();
    const failing: Snapshot = {
      ...snapshot,
      reports: [
        ...snapshot.reports,
        {
          collector: 'sminfo',
          success: false,
          durationSeconds: 3,
          finishedAt: 0,
          errors: [
            {
              collector: 'sminfo',
              item: 'sminfo -C mlx5_0 -P 1',
              message: "exit code 255: sminfo: iberror: failed: Failed to open 'mlx5_0' port '1'",
            },
          ],
        },
        {
          collector: 'perfquery',
          success: true,
          durationSeconds: 1,
          finishedAt: 0,
          errors: [{ collector: 'perfquery', item: 'perfquery -x', message: 'unexpected output' }],
        },
      ],
    };
    const findings = findingsOf(failing).filter((f) => f.subject.kind === 'collector');
    expect(brief(findings)).toEqual(['warning collector-failing collector sminfo', 'info read-errors collector perfquery']);
    expect(findings[0]!.summary).toContain("Failed to open 'mlx5_0' port '1'");
    expect(findings[0]!.remedy).toContain('sminfo -C mlx5_0 -P 1');
  });
});

describe('the ConnectX revision a0 TSO erratum (test/fixtures/sys/qdr-a0)', () => {
  it('warns with the interface and the fix when TSO is on', async () => {
    const findings = findingsOf(
      await snapshotOf(['--path.sysfs', QDR_A0, '--no-collector.diag'], { ethtool: ethtoolAnswering('ethtool-6.1-eth0.txt') }),
    );
    expect(brief(findings)).toEqual(['warning ipoib-tso-erratum ib0', 'info port-without-link mlx4_0/2']);
    expect(findings[0]!.summary).toMatch(/ib0 on mlx4_0 \(ConnectX hardware revision a0\) has TCP segmentation offload \(TSO\) on/);
    expect(findings[0]!.remedy).toMatch(/^ethtool -K ib0 tso off, and make it permanent/);
  });

  it('warns when ethtool cannot tell, and says why', async () => {
    const findings = findingsOf(
      await snapshotOf(['--path.sysfs', QDR_A0, '--no-collector.diag'], { ethtool: 'not-installed', module: 'not-installed' }),
    );
    const tso = findings.find((f) => f.condition === 'ipoib-tso-erratum')!;
    expect(tso.severity).toBe('warning');
    expect(tso.summary).toMatch(/whether it is cannot be told: /);
  });

  it('is only a fact once TSO is off, and says when the kernel keeps it off', async () => {
    const off = findingsOf(
      await snapshotOf(['--path.sysfs', QDR_A0, '--no-collector.diag'], { ethtool: ethtoolAnswering('ethtool-6.1-lo-tso-off.txt') }),
    );
    expect(off.find((f) => f.condition === 'ipoib-tso-erratum')).toMatchObject({
      severity: 'info',
      summary: expect.stringMatching(/is off today; it must stay off after a reboot/),
    });
    const fixed = findingsOf(
      await snapshotOf(['--path.sysfs', QDR_A0, '--no-collector.diag'], { ethtool: ethtoolAnswering('ethtool-excerpt-tso-fixed-off.txt') }),
    );
    expect(fixed.find((f) => f.condition === 'ipoib-tso-erratum')).toMatchObject({
      severity: 'info',
      summary: expect.stringMatching(/this kernel keeps it off/),
    });
  });

  it('never runs ethtool on a host without such an adapter', async () => {
    const calls: string[] = [];
    const counting: CommandRunner<EthtoolCommand> = {
      run: async (command, args) => (
        calls.push(args.join(' ')), { command, args, outcome: 'exited', exitCode: 0, stdout: '', stderr: '', durationMs: 1 }
      ),
    };
    await snapshotOf(['--demo'], { ethtool: counting });
    await snapshotOf(['--path.sysfs', QDR_A0, '--no-collector.diag'], { ethtool: counting });
    expect(calls).toEqual(['-k ib0']);
  });
});

describe('findings mirror the alerts and the runbooks', () => {
  const rules = parse(readFileSync(path.join(PROJECT_ROOT, 'rules/infiniband-alerts.yml'), 'utf8')) as {
    groups: { rules: { alert?: string; labels?: { severity?: string }; annotations?: { runbook_url?: string } }[] }[];
  };
  const alerts = new Map(
    rules.groups
      .flatMap((group) => group.rules)
      .filter((rule) => rule.alert)
      .map((rule) => [rule.alert!, rule]),
  );
  const runbooks = readFileSync(path.join(PROJECT_ROOT, 'docs/runbooks.md'), 'utf8');
  // GitHub's anchors: lower case, punctuation dropped, spaces to dashes (as test/rules/rules.test.ts).
  const anchors = new Set(
    [...runbooks.matchAll(/^#{1,6} (.+)$/gm)].map((match) =>
      match[1]!
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{N}\s_-]/gu, '')
        .replace(/\s/g, '-'),
    ),
  );

  it("links every finding to a runbook section and names its alert at the alert's severity", async () => {
    const made = await host(HOSTILE_DEVICES, HOSTILE_INTERFACES, HOSTILE_CONFIG);
    const findings = [
      ...findingsOf(await snapshotOf(['--demo'])),
      ...findingsOf(await snapshotOf(['--path.sysfs', made.root, '--config.file', made.config])),
      ...findingsOf(
        await snapshotOf(['--path.sysfs', QDR_A0, '--no-collector.diag'], { ethtool: ethtoolAnswering('ethtool-6.1-eth0.txt') }),
      ),
      ...findingsOf(await snapshotOf(['--path.sysfs', path.join(made.root, 'nothing-here'), '--no-collector.diag'])),
    ];
    expect(new Set(findings.map((f) => f.condition)).size).toBeGreaterThanOrEqual(10);
    for (const finding of findings) {
      expect(anchors, finding.runbook).toContain(finding.runbook);
      if (finding.alert === undefined) continue;
      const rule = alerts.get(finding.alert);
      expect(rule, finding.alert).toBeDefined();
      expect(rule!.labels?.severity, finding.alert).toBe(finding.severity);
      expect(rule!.annotations?.runbook_url).toBe(`${RUNBOOK_BASE}#${finding.runbook}`);
    }
  });

  it("uses the rules' runbook base", () => {
    for (const rule of alerts.values()) expect(rule.annotations?.runbook_url?.split('#')[0]).toBe(RUNBOOK_BASE);
  });
});
