// Fabric findings (each fabric collector's, in src/collectors/fabric/) on fixture snapshots: one cycle of fabric mode over the
// tool outputs recorded on the simulated fat tree (test/fixtures/fabric-recordings), and copies of those
// snapshots changed one fact at a time. Every condition has a case that fires and a look-alike
// that must not.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { collectOnce } from '../../../src/commands/check/one-cycle.js';
import { parseServeCommandLine } from '../../../src/commands/serve/command-line.js';
import { FABRIC_DISCOVERY } from '../../../src/collectors/fabric/discovery.js';
import { FABRIC_PORTS } from '../../../src/collectors/fabric/ports/index.js';
import { FABRIC_SA } from '../../../src/collectors/fabric/sa.js';
import { COLLECTORS } from '../../../src/collectors/registry.js';
import { fabricOf as fabricView } from '../../../src/findings/fabric-overview.js';
import { RUNBOOK_BASE, type Finding, type FindingSubject } from '../../../src/model/finding.js';
import { collectorFindings } from '../../../src/findings/collector-health.js';
import { findingsOf, groupOf } from '../../../src/findings/findings.js';
import type { FabricPortReading, FabricSnapshot, FabricSubnetManager, MulticastGroup } from '../../../src/model/fabric.js';
import type { CollectorReport, Snapshot } from '../../../src/model/snapshot.js';
import { DGX, FIXTURES, PROJECT_ROOT } from '../../support/trees.js';
import { HOST11, HOST12, LEAF1, LEAF2, LEAF3, SPINE1, SPINE2 } from '../../support/fabric-recordings.js';
import { ReplayRunner, result, type Override } from '../../support/replay.js';
import type { FabricCommand } from '../../../src/sources/fabric/commands.js';
import { CounterRow } from '../../../src/model/counter-row.js';

const FABRIC_CONFIG = path.join(FIXTURES, 'config/fabric.yml');

/** One check cycle (the healthy dgx host, fabric mode on the recorded fat tree). */
async function snapshotOf(scenarios: string[], override?: Override<FabricCommand>): Promise<Snapshot> {
  const command = parseServeCommandLine(['--path.sysfs', DGX, '--config.file', FABRIC_CONFIG, '--diag.timeout', '2s']);
  if (command.action !== 'run') throw new Error('not a command line that runs');
  const runners = {
    ethtool: 'not-installed' as const,
    module: 'not-installed' as const,
    fabric: new ReplayRunner<FabricCommand>('fabric', scenarios, override),
  };
  return (await collectOnce(command.settings, pino({ level: 'silent' }), COLLECTORS, runners)).snapshot;
}

const fabricOf = (snapshot: Snapshot): FabricSnapshot => fabricView(snapshot)!;

/** The snapshot with facts of the fabric changed, each in the part of the collector that reads it. */
function withFabric(snapshot: Snapshot, change: Partial<FabricSnapshot>): Snapshot {
  const parts = new Map(snapshot.parts);
  const discovery = FABRIC_DISCOVERY.of(snapshot)!;
  const ports = FABRIC_PORTS.of(snapshot)!;
  const sa = FABRIC_SA.of(snapshot)!;
  if ('topology' in change) parts.set(FABRIC_DISCOVERY.name, { ...discovery, topology: change.topology });
  if (change.ports || change.expectations)
    parts.set(FABRIC_PORTS.name, {
      ...ports,
      ...(change.ports && { ports: change.ports }),
      ...(change.expectations && { expectations: change.expectations }),
    });
  if (change.subnetManagers || change.multicastGroups)
    parts.set(FABRIC_SA.name, {
      ...sa,
      ...(change.subnetManagers && { subnetManagers: change.subnetManagers }),
      ...(change.multicastGroups && { multicastGroups: change.multicastGroups }),
    });
  return { ...snapshot, parts };
}

/** The findings of fabric mode's collectors as they judge them: collectors, the subnet, then ports by node. */
function fabricFindings(snapshot: Snapshot): Finding[] {
  return [FABRIC_DISCOVERY, FABRIC_SA, FABRIC_PORTS].reduce(
    (all, collector) => [...all, ...collector.findings!(snapshot)],
    collectorFindings(snapshot, [FABRIC_DISCOVERY, FABRIC_PORTS, FABRIC_SA]),
  );
}

/** The snapshot with the reading of `guid`/`port` changed (or added). */
function withPort(snapshot: Snapshot, guid: string, port: number, change: Partial<FabricPortReading>): Snapshot {
  const ports = new Map(fabricOf(snapshot).ports);
  const key = `${guid}/${port}`;
  const before = ports.get(key) ?? {
    nodeGuid: guid,
    port,
    state: undefined,
    physicalState: undefined,
    width: undefined,
    speed: undefined,
    peer: undefined,
    counters: CounterRow.EMPTY,
  };
  ports.set(key, { ...before, ...change });
  return withFabric(snapshot, { ports });
}

const DOWN = {
  state: { id: 1, name: 'DOWN' },
  physicalState: { id: 2, name: 'Polling' },
  width: undefined,
  speed: undefined,
  peer: undefined,
} as const;
const INIT = { state: { id: 2, name: 'INIT' }, physicalState: { id: 5, name: 'LinkUp' } } as const;

function subjectText(subject: FindingSubject): string {
  switch (subject.kind) {
    case 'fabric-port':
      return `${subject.node.guid}/${subject.port}${subject.peer ? ` to ${subject.peer.node.guid}/${subject.peer.port}` : ''}`;
    case 'multicast-group':
      return subject.mgid;
    case 'collector':
      return `collector ${subject.collector}`;
    default:
      return subject.kind;
  }
}

/** `severity condition subject`, one string per finding, in report order. */
const brief = (findings: readonly Finding[]): string[] => findings.map((f) => `${f.severity} ${f.condition} ${subjectText(f.subject)}`);

const GROUP = 'ff12:401b:ffff::ffff:ffff';

describe('the recorded healthy fabric (two SMs of equal priority, the 1X ISL against a 4X expectation)', () => {
  it("has the degraded ISL once, named from both ends, the priority tie and opensm's default broadcast group; nothing about never-cabled ports", async () => {
    const snapshot = await snapshotOf(['healthy']);
    const findings = fabricFindings(snapshot);
    expect(brief(findings)).toEqual([
      'info subnet-manager-priority-tie subnet',
      `info multicast-group-suboptimal ${GROUP}`,
      `warning fabric-link-degraded ${SPINE1}/1 to ${LEAF1}/4`,
    ]);
    const [tie, group, degraded] = findings as [Finding, Finding, Finding];
    expect(degraded.summary).toBe(
      "the link from port 1 of MF0;spine-1:SX6036/U1 to port 4 of MF0;leaf-1:SX6036/U1 runs at 1X QDR (10 Gb/s), expected 4X QDR (40 Gb/s: the config file's fabric.expectations): lanes are lost",
    );
    expect(degraded.remedy).toContain(`ibportstate -G ${SPINE1} 1 reset`);
    expect(degraded.subject).toEqual({
      kind: 'fabric-port',
      node: { guid: SPINE1, type: 'switch', name: 'MF0;spine-1:SX6036/U1' },
      port: 1,
      peer: { node: { guid: LEAF1, type: 'switch', name: 'MF0;leaf-1:SX6036/U1' }, port: 4 },
    });
    expect(tie.summary).toBe(
      '2 subnet managers share the highest priority, 5: 0x0002c90300a10011 (node11 HCA-1, LID 1, MASTER, priority 5), 0x0002c90300a30031 (node33 HCA-1, LID 14, STANDBY, priority 5): which one is master is left to their GUIDs',
    );
    expect(group.summary).toBe(
      `the IPoIB broadcast group ${GROUP} of P_Key 0xffff runs at 10 Gb/s with MTU 2048, while the slowest active HCA link runs at 40 Gb/s and every HCA link could carry MTU 4096 (9 active HCA links)`,
    );
    expect(group.remedy).toContain('Default=0x7fff, ipoib, rate=7, mtu=5 : ALL=full;');
    // Eleven switch ports are down and never had a cable (leaf ports 6-8, spine ports 4).
    expect([...fabricOf(snapshot).ports.values()].filter((reading) => reading.physicalState?.id === 2)).toHaveLength(11);
  });

  it("joins the host's findings and groups under the subnet and each switch", async () => {
    const snapshot = await snapshotOf(['healthy']);
    const findings = findingsOf(snapshot);
    expect(findings.filter((f) => f.subject.kind === 'interface')).toHaveLength(8);
    expect(findings[0]!.condition).toBe('fabric-link-degraded');
    expect(findings.map((f) => groupOf(f.subject).kind)).toContain('subnet');
    expect(groupOf(findings[0]!.subject)).toEqual({ kind: 'fabric-node', guid: SPINE1 });
  });
});

describe('switch ports down', () => {
  it('names the pulled host cable and both ends of the pulled ISL, from the packets they passed; never-cabled ports in the same Polling state are quiet', async () => {
    const findings = fabricFindings(await snapshotOf(['pulled', 'healthy']));
    const down = findings.filter((f) => f.condition === 'fabric-port-down');
    expect(brief(down)).toEqual([
      `critical fabric-port-down ${LEAF1}/2`,
      `critical fabric-port-down ${LEAF3}/5`,
      `critical fabric-port-down ${SPINE2}/3`,
    ]);
    expect(down[1]!.summary).toBe(
      'port 5 of MF0;leaf-3:SX6036/U1 has no link (Polling): cable pulled or broken, a transceiver failed, or the device at the other end is down (it passed 71 packets since its counters were reset)',
    );
    expect(down[1]!.remedy).toMatch(/^reseat the cable at both ends/);
    expect(down[1]!.meaning).toContain(`perfquery -R -G ${LEAF3} 5`);
    // The rest is as on the healthy fabric, minus host 12.
    expect(brief(findings.filter((f) => f.condition !== 'fabric-port-down'))).toEqual([
      'info subnet-manager-priority-tie subnet',
      `info multicast-group-suboptimal ${GROUP}`,
      `warning fabric-link-degraded ${SPINE1}/1 to ${LEAF1}/4`,
    ]);
  });

  it('names the far end when the last discovery still saw the cable, and says it is an inter-switch link', async () => {
    const healthy = await snapshotOf(['healthy']);
    const pulled = await snapshotOf(['pulled', 'healthy']);
    // A ports cycle after the pull, before the next discovery: the topology still has the cable.
    const between = withFabric(pulled, { topology: fabricOf(healthy).topology });
    const down = fabricFindings(between).filter((f) => f.condition === 'fabric-port-down');
    expect(brief(down)).toEqual([
      `critical fabric-port-down ${LEAF1}/2 to ${HOST12}/1`,
      `critical fabric-port-down ${LEAF3}/5 to ${SPINE2}/3`,
      `critical fabric-port-down ${SPINE2}/3 to ${LEAF3}/5`,
    ]);
    expect(down[1]!.summary).toBe(
      'port 5 of MF0;leaf-3:SX6036/U1 (an inter-switch link) has no link (Polling): cable pulled or broken, a transceiver failed, or the device at the other end is down (the last discovery saw its cable to port 3 of MF0;spine-2:SX6036/U1; it passed 71 packets since its counters were reset)',
    );
    expect(down[0]!.summary).toContain('the last discovery saw its cable to port 1 of node12 HCA-1');
  });

  it('counts a link that went down as use, and tells a disabled port from a pulled cable', async () => {
    const healthy = await snapshotOf(['healthy']);
    const downed = withPort(healthy, LEAF2, 7, {
      ...DOWN,
      physicalState: { id: 3, name: 'Disabled' },
      counters: CounterRow.of([{ name: 'link_downed', value: 2, saturated: false }]),
    });
    const [finding] = fabricFindings(downed).filter((f) => f.condition === 'fabric-port-down');
    expect(finding!.summary).toBe(
      'port 7 of MF0;leaf-2:SX6036/U1 has no link (Disabled): it is disabled (its link went down 2 times since its counters were reset)',
    );
    expect(finding!.remedy).toBe(`enable it: ibportstate -G ${LEAF2} 7 enable`);
    // The same port with every counter at 0 never had a cable.
    const spare = withPort(healthy, LEAF2, 7, {
      ...DOWN,
      counters: CounterRow.of([
        { name: 'link_downed', value: 0, saturated: false },
        { name: 'transmit_packets', value: 0, saturated: false },
      ]),
    });
    expect(fabricFindings(spare).filter((f) => f.condition === 'fabric-port-down')).toEqual([]);
  });

  it('leaves CA ports out (--fabric.hca-ports): a host that reboots is no fabric fault', async () => {
    const healthy = await snapshotOf(['healthy']);
    const rebooting = withPort(healthy, HOST11, 1, {
      ...DOWN,
      counters: CounterRow.of([{ name: 'link_downed', value: 1, saturated: false }]),
    });
    expect(fabricFindings(rebooting).filter((f) => f.condition === 'fabric-port-down')).toEqual([]);
  });
});

describe('ports stuck INIT', () => {
  it('reports a switch or CA port INIT with LinkUp, naming the other end; ACTIVE and ARMED ports are fine', async () => {
    const healthy = await snapshotOf(['healthy']);
    const stuck = withPort(withPort(healthy, LEAF2, 1, INIT), HOST11, 1, {
      ...INIT,
      width: 4,
      speed: 'QDR',
      peer: { nodeGuid: LEAF1, port: 1 },
    });
    const init = fabricFindings(stuck).filter((f) => f.condition === 'fabric-port-stuck-init');
    expect(brief(init)).toEqual([
      `critical fabric-port-stuck-init ${LEAF2}/1 to 0x0002c90300a20010/1`,
      `critical fabric-port-stuck-init ${HOST11}/1 to ${LEAF1}/1`,
    ]);
    expect(init[0]!.summary).toBe(
      'port 1 of MF0;leaf-2:SX6036/U1 (cabled to port 1 of node21 HCA-1) is INIT with its link up (LinkUp): no subnet manager has configured it',
    );
    expect(init[0]!.remedy).toMatch(/^start or restart the subnet manager \(systemctl restart opensm on its host\)/);
    expect((init[1]!.subject as { node: { type: string } }).node.type).toBe('ca');
    const armed = withPort(healthy, LEAF2, 1, { state: { id: 3, name: 'ARMED' }, physicalState: { id: 5, name: 'LinkUp' } });
    expect(fabricFindings(armed).filter((f) => f.condition === 'fabric-port-stuck-init')).toEqual([]);
  });
});

describe('degraded links', () => {
  it('reports a link below what both ends enable once, from the switch end, however many ends were read', async () => {
    const healthy = await snapshotOf(['healthy']);
    // Leaf 2's first host link trained at 4X SDR where both ends enable QDR; with --fabric.hca-ports the CA end is read too.
    const slow = withPort(withPort(healthy, LEAF2, 1, { speed: 'SDR' }), '0x0002c90300a20010', 1, {
      state: { id: 4, name: 'ACTIVE' },
      physicalState: { id: 5, name: 'LinkUp' },
      width: 4,
      speed: 'SDR',
      peer: { nodeGuid: LEAF2, port: 1 },
    });
    const expectations = new Map(fabricOf(slow).expectations);
    expectations.set('0x0002c90300a20010/1', { width: 4, speed: 'QDR', source: 'peer' });
    const degraded = fabricFindings(withFabric(slow, { expectations })).filter((f) => f.condition === 'fabric-link-degraded');
    expect(brief(degraded)).toEqual([
      `warning fabric-link-degraded ${LEAF2}/1 to 0x0002c90300a20010/1`,
      `warning fabric-link-degraded ${SPINE1}/1 to ${LEAF1}/4`,
    ]);
    expect(degraded[0]!.summary).toBe(
      'the link from port 1 of MF0;leaf-2:SX6036/U1 to port 1 of node21 HCA-1 runs at 4X SDR (10 Gb/s), expected 4X QDR (40 Gb/s: the best both ends enable): it trained at a lower speed',
    );
  });

  it('is quiet about a link at what both ends enable, and about a port without a link', async () => {
    const healthy = await snapshotOf(['healthy']);
    // Both ends of the spine-1/leaf-1 ISL enable only 1X: without the config expectation it is fine.
    const expectations = new Map(fabricOf(healthy).expectations);
    expectations.set(`${SPINE1}/1`, { width: 1, speed: 'QDR', source: 'peer' });
    expectations.set(`${LEAF1}/4`, { width: 1, speed: 'QDR', source: 'peer' });
    expect(fabricFindings(withFabric(healthy, { expectations })).filter((f) => f.condition === 'fabric-link-degraded')).toEqual([]);
    // A port that lost its link is judged by its state, not as degraded.
    const down = withPort(withPort(healthy, SPINE1, 1, { ...DOWN }), LEAF1, 4, { ...DOWN });
    expect(fabricFindings(down).filter((f) => f.condition === 'fabric-link-degraded')).toEqual([]);
  });
});

describe('subnet managers', () => {
  const MASTER: FabricSubnetManager = { guid: '0x0002c90300a10011', lid: 1, priority: 14, state: 'MASTER', activityCount: 100 };
  const STANDBY: FabricSubnetManager = { guid: '0x0002c90300a30031', lid: 14, priority: 10, state: 'STANDBY', activityCount: 50 };

  it('warns about a lone subnet manager, naming its host', async () => {
    const lone = withFabric(await snapshotOf(['healthy']), { subnetManagers: [MASTER] });
    const sm = fabricFindings(lone).filter((f) => f.condition.startsWith('subnet-manager'));
    expect(brief(sm)).toEqual(['warning subnet-manager-not-redundant subnet']);
    expect(sm[0]!.summary).toBe(
      'the subnet has one subnet manager, 0x0002c90300a10011 (node11 HCA-1, LID 1, MASTER, priority 14), and no standby: when it fails nothing takes over',
    );
    expect(sm[0]!.remedy).toContain('sm_priority');
  });

  it('is quiet about a standby at a lower priority, and about standbys that tie below the master', async () => {
    const healthy = await snapshotOf(['healthy']);
    expect(
      fabricFindings(withFabric(healthy, { subnetManagers: [MASTER, STANDBY] })).filter((f) => f.condition.startsWith('subnet-manager')),
    ).toEqual([]);
    const third = { ...STANDBY, guid: '0x0002c90300a20011', lid: 7 };
    expect(
      fabricFindings(withFabric(healthy, { subnetManagers: [MASTER, STANDBY, third] })).filter((f) =>
        f.condition.startsWith('subnet-manager'),
      ),
    ).toEqual([]);
  });

  it('judges nothing about subnet managers when the SA gave no record (the fabric_sa finding says why)', async () => {
    const findings = fabricFindings(await snapshotOf(['sm-dead', 'healthy']));
    expect(findings.filter((f) => f.condition.startsWith('subnet-manager'))).toEqual([]);
    const sa = findings.find((f) => f.subject.kind === 'collector')!;
    expect(brief([sa])).toEqual(['warning collector-failing collector fabric_sa']);
    expect(sa.summary).toContain('saquery SMIR: exit code 110');
    expect(sa.cause).toMatch(/^No subnet manager answers SA queries/);
    expect(groupOf(sa.subject)).toEqual({ kind: 'subnet' });
  });
});

describe('IPoIB broadcast groups', () => {
  const group = (change: Partial<MulticastGroup>): MulticastGroup => ({
    mgid: GROUP,
    pkey: '0xffff',
    mtuBytes: 2048,
    rateGbps: 10,
    members: 9,
    ...change,
  });

  it("is quiet about a group at the fabric's rate and MTU 4096, and about groups that are not IPoIB broadcast groups", async () => {
    const healthy = await snapshotOf(['healthy']);
    const fine = withFabric(healthy, { multicastGroups: [group({ rateGbps: 40, mtuBytes: 4096 }), group({ mgid: 'ff12:601b:ffff::16' })] });
    expect(fabricFindings(fine).filter((f) => f.condition === 'multicast-group-suboptimal')).toEqual([]);
  });

  it('says the MTU alone when the rate is right, for a partition of its own', async () => {
    const healthy = await snapshotOf(['healthy']);
    const [finding] = fabricFindings(
      withFabric(healthy, { multicastGroups: [group({ mgid: 'ff12:401b:8001::ffff:ffff', pkey: '0x8001', rateGbps: 40 })] }),
    ).filter((f) => f.condition === 'multicast-group-suboptimal');
    expect(finding!.summary).toBe(
      'the IPoIB broadcast group ff12:401b:8001::ffff:ffff of P_Key 0x8001 runs at 40 Gb/s with MTU 2048, while every HCA link could carry MTU 4096 (9 active HCA links)',
    );
    expect(finding!.remedy).toContain('(<name>=0x0001, ipoib, mtu=5 : ALL=full;)');
    expect(finding!.subject).toEqual({ kind: 'multicast-group', mgid: 'ff12:401b:8001::ffff:ffff', pkey: '0x8001' });
  });

  it('is quiet where the HCA links run no faster than the group and below QDR lanes (MTU 2048 may be all they have)', async () => {
    const healthy = await snapshotOf(['healthy']);
    let sdr = healthy;
    for (const reading of fabricOf(healthy).ports.values())
      if (reading.width !== undefined) sdr = withPort(sdr, reading.nodeGuid, reading.port, { speed: 'SDR' });
    expect(
      fabricFindings(withFabric(sdr, { multicastGroups: [group({})] })).filter((f) => f.condition === 'multicast-group-suboptimal'),
    ).toEqual([]);
  });

  it('says nothing when no CA link is known', async () => {
    const healthy = await snapshotOf(['healthy']);
    const ports = new Map([...fabricOf(healthy).ports].filter(([, reading]) => ![LEAF1, LEAF2, LEAF3].includes(reading.nodeGuid)));
    expect(fabricFindings(withFabric(healthy, { ports })).filter((f) => f.condition === 'multicast-group-suboptimal')).toEqual([]);
  });
});

describe('address conflicts', () => {
  it('reports the GUID two nodes share, from the recorded discovery', async () => {
    const findings = fabricFindings(await snapshotOf(['duplicate-guid', 'healthy']));
    const conflict = findings.filter((f) => f.condition === 'fabric-address-conflict');
    expect(brief(conflict)).toEqual(['critical fabric-address-conflict subnet']);
    expect(conflict[0]!.summary).toMatch(/^the fabric discovery found [1-9]\d* duplicate GUIDs? and 0 duplicate LIDs: /);
  });

  it('is quiet on a sane fabric', async () => {
    expect(fabricFindings(await snapshotOf(['healthy'])).filter((f) => f.condition === 'fabric-address-conflict')).toEqual([]);
  });
});

describe('the fabric collectors', () => {
  it('says no discovery succeeded, and not again that the ports cycle had nothing to read', async () => {
    const failing: Override<FabricCommand> = (command, args) =>
      command === 'ibnetdiscover'
        ? result(command, args, { exitCode: 255, stderr: 'ibnetdiscover: iberror: failed: discover failed' })
        : undefined;
    const findings = fabricFindings(await snapshotOf(['healthy'], failing));
    const collectors = findings.filter((f) => f.subject.kind === 'collector');
    expect(brief(collectors)).toEqual(['warning collector-failing collector fabric_discovery']);
    expect(collectors[0]!.summary).toBe(
      'collector fabric_discovery failed (1 error; first: ibnetdiscover: exit code 255: ibnetdiscover: iberror: failed: discover failed): no discovery has succeeded, so no switch, port or link of the fabric could be checked',
    );
    // The cache file was private to the cycle: the item, and the command to try, is the tool alone.
    expect(collectors[0]!.remedy).toBe('run the failing command or read the file by hand, as the same user: ibnetdiscover');
    // The SA still answered.
    expect(findings.filter((f) => f.condition === 'subnet-manager-priority-tie')).toHaveLength(1);
  });

  it('says how old the topology in use is when a later discovery failed', async () => {
    const healthy = await snapshotOf(['healthy']);
    const topology = fabricOf(healthy).topology!;
    const failed: CollectorReport = {
      collector: 'fabric_discovery',
      success: false,
      durationSeconds: 5,
      finishedAt: topology.discoveredAt + 1800,
      errors: [{ collector: 'fabric_discovery', item: 'ibnetdiscover', message: 'timed out after 5000 ms' }],
    };
    const stale: Snapshot = { ...healthy, reports: [...healthy.reports.filter((r) => r.collector !== 'fabric_discovery'), failed] };
    const [finding] = fabricFindings(stale).filter((f) => f.subject.kind === 'collector');
    expect(finding!.summary).toContain(
      `the topology in use is from ${new Date(topology.discoveredAt * 1000).toISOString()}, 30 minutes older: switches, hosts and cables added, moved or removed since are not seen`,
    );
  });

  it('tells a switch that did not answer its PMA queries as a fact, the ports cycle having worked', async () => {
    const findings = fabricFindings(await snapshotOf(['pma-failure', 'healthy']));
    const collectors = findings.filter((f) => f.subject.kind === 'collector');
    expect(brief(collectors)).toEqual(['info read-errors collector fabric_ports']);
  });
});

it('finds nothing without fabric mode', async () => {
  const snapshot = await snapshotOf(['healthy']);
  const fabric = new Set([FABRIC_DISCOVERY.name, FABRIC_PORTS.name, FABRIC_SA.name]);
  const hostOnly: Snapshot = {
    ...snapshot,
    parts: new Map([...snapshot.parts].filter(([name]) => !fabric.has(name))),
    reports: snapshot.reports.filter((report) => !fabric.has(report.collector)),
  };
  expect(fabricFindings(hostOnly)).toEqual([]);
  expect(
    findingsOf(hostOnly).filter((finding) => groupOf(finding.subject).kind === 'subnet' || groupOf(finding.subject).kind === 'fabric-node'),
  ).toEqual([]);
});

describe('fabric findings mirror the fabric alerts and their runbooks', () => {
  const rules = parse(readFileSync(path.join(PROJECT_ROOT, 'rules/infiniband-fabric-alerts.yml'), 'utf8')) as {
    groups: { rules: { alert?: string; labels?: { severity?: string }; annotations?: { runbook_url?: string } }[] }[];
  };
  const alerts = new Map(
    rules.groups
      .flatMap((group) => group.rules)
      .filter((rule) => rule.alert)
      .map((rule) => [rule.alert!, rule]),
  );

  it("at the alert's severity, with its runbook section", async () => {
    const healthy = await snapshotOf(['healthy']);
    const findings = [
      ...fabricFindings(healthy),
      ...fabricFindings(await snapshotOf(['pulled', 'healthy'])),
      ...fabricFindings(await snapshotOf(['duplicate-guid', 'healthy'])),
      ...fabricFindings(withPort(withFabric(healthy, { subnetManagers: [fabricOf(healthy).subnetManagers[0]!] }), LEAF2, 1, INIT)),
    ];
    expect(new Set(findings.map((f) => f.condition))).toEqual(
      new Set([
        'fabric-port-down',
        'fabric-port-stuck-init',
        'fabric-link-degraded',
        'subnet-manager-not-redundant',
        'subnet-manager-priority-tie',
        'multicast-group-suboptimal',
        'fabric-address-conflict',
      ]),
    );
    for (const finding of findings) {
      const rule = alerts.get(finding.alert!);
      expect(rule, finding.condition).toBeDefined();
      expect(rule!.labels?.severity, finding.alert).toBe(finding.severity);
      expect(rule!.annotations?.runbook_url, finding.alert).toBe(`${RUNBOOK_BASE}#${finding.runbook}`);
    }
  });
});
