// The fabric_sa collector: every --fabric.interval, the subnet administrator's records of the
// whole subnet: every subnet manager (saquery SMIR, refreshed from each SM with sminfo) and every
// multicast group (saquery -g, members from saquery -m). It writes the SM and multicast families
// (fabric-wide: every shard serves them) and judges redundancy, priorities and the IPoIB
// broadcast groups.
import { atOnce, pacer, type Work } from '../../event-loop/time-slices.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { plural, type CollectorFailure, type Finding } from '../../model/finding.js';
import { gauge } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import { composeFabric, type FabricSnapshot, type FabricSubnetManager, type MulticastGroup } from '../../model/fabric.js';
import { subnetManagerHost } from '../../model/fabric-names.js';
import { BYTES_PER_GIGABIT, LANE_RATES } from '../../model/link-rate.js';
import { PORT_STATE_ACTIVE } from '../../model/port-state.js';
import { saMtuCode, saRateCode } from '../../model/subnet-administration.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { SubnetAdministrationBefore } from '../../sources/fabric/sa-records.js';
import {
  defineCollector,
  type Collector,
  type CollectorContext,
  type Cycle,
  type Reader,
  type Reading,
} from '../../collection/collector.js';
import { DIAG_TIMEOUT } from '../infiniband-diags.js';
import { FABRIC_DISCOVERY_PART, FABRIC_PORTS_PART } from '../parts.js';
import { COMMANDS_FAIL, FABRIC_FLAGS, FABRIC_INTERVAL, FABRIC_SHARD, FABRIC_SWITCH, fabricRunner } from './fabric-mode.js';

export interface SubnetAdministrationPart {
  subnetManagers: readonly FabricSubnetManager[];
  multicastGroups: readonly MulticastGroup[];
}

export const SA_CYCLE: Cycle = {
  name: 'fabric subnet administration',
  interval: (settings) => settings.get(FABRIC_INTERVAL),
  // Two commands in a row (the SM records, then each SM's own sminfo).
  deadline: (settings) => Math.max(settings.get(FABRIC_INTERVAL), 2 * settings.get(DIAG_TIMEOUT) + 1000),
};

class SubnetAdministrationReader implements Reader<SubnetAdministrationPart> {
  /** What the last cycle that succeeded read: an SM or all groups gone since may be an incomplete answer. */
  private before: SubnetAdministrationBefore = { subnetManagers: [], multicastGroups: 0 };

  constructor(private readonly context: CollectorContext) {}

  async read(_snapshot: Snapshot, signal: AbortSignal): Promise<Reading<SubnetAdministrationPart>> {
    const [{ FabricCycle }, { readSubnetAdministration }] = await Promise.all([
      import('../../sources/fabric/commands.js'),
      import('../../sources/fabric/sa-records.js'),
    ]);
    const cycle = new FabricCycle({ runner: fabricRunner(this.context), timeoutMs: this.context.settings.get(DIAG_TIMEOUT), signal });
    const sa = await readSubnetAdministration(cycle, this.before);
    if (signal.aborted) return {};
    const report = cycle.report();
    if (!report.failed) this.before = { subnetManagers: sa.subnetManagers, multicastGroups: sa.multicastGroups.length };
    return { part: sa, errors: report.errors, failOnErrors: report.failed, timeouts: report.timeouts, read: report.read };
  }
}

export const SA_METRICS = {
  subnetManagerInfo: gauge(
    'infiniband_fabric_subnet_manager_info',
    ['sm_guid', 'sm_lid', 'state', 'priority'],
    "Every subnet manager of the subnet (value always 1), from the SA's SMInfoRecords, state and priority as each SM reports them itself: MASTER, STANDBY, DISCOVERING or NOTACTIVE. One MASTER and at least one STANDBY is a redundant subnet; equal top priorities make the election depend on GUIDs.",
  ),
  multicastMtu: gauge(
    'infiniband_fabric_multicast_group_mtu_bytes',
    ['mgid', 'pkey'],
    'MTU of a multicast group (SA MCMemberRecord). opensm creates the IPoIB broadcast group (mgid ff12:401b:...) with 2048 bytes unless configured; a fabric whose ports all do 4096 wastes half of every IPoIB datagram.',
  ),
  multicastRate: gauge(
    'infiniband_fabric_multicast_group_rate_bytes_per_second',
    ['mgid', 'pkey'],
    'Rate of a multicast group (Gb/s x 1e9 / 8). Every member sends multicast at this rate: opensm\'s default IPoIB broadcast group is 10 Gb/s whatever the links run at (ibdiagnet\'s "Suboptimal rate for group").',
  ),
  multicastMembers: gauge(
    'infiniband_fabric_multicast_group_members',
    ['mgid', 'pkey'],
    'Ports joined to a multicast group, as the SA lists them.',
  ),
} as const;

const FAMILIES = Object.values(SA_METRICS);

/** Every record (shard 1 alone reads them: no series is served twice). */
function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const sa = FABRIC_SA.of(snapshot);
  if (!sa) return;
  const samples = new Samples();
  for (const sm of sa.subnetManagers) {
    samples.add(
      SA_METRICS.subnetManagerInfo,
      { sm_guid: sm.guid, sm_lid: String(sm.lid), state: sm.state ?? '', priority: String(sm.priority) },
      1,
    );
  }
  for (const group of sa.multicastGroups) {
    const id = { mgid: group.mgid, pkey: group.pkey };
    samples.add(SA_METRICS.multicastMtu, id, group.mtuBytes);
    samples.add(SA_METRICS.multicastRate, id, group.rateGbps === undefined ? undefined : group.rateGbps * BYTES_PER_GIGABIT);
    samples.add(SA_METRICS.multicastMembers, id, group.members);
  }
  samples.writeTo(FAMILIES, out);
}

/** The subnet managers, and the multicast groups against the CA links of the ports cycle. */
function* judge(snapshot: Snapshot): Work<Finding[]> {
  const sa = FABRIC_SA.of(snapshot);
  if (!sa) return [];
  const discovery = FABRIC_DISCOVERY_PART.of(snapshot);
  const fabric = composeFabric(discovery?.topology, FABRIC_PORTS_PART.of(snapshot), sa, discovery?.shard ?? { index: 1, count: 1 });
  return [...subnetManagerFindings(fabric), ...(yield* multicastGroupFindingsSteps(fabric))];
}

/** "0x… (node11 HCA-1, LID 1, MASTER, priority 5)". */
function subnetManagerText(fabric: FabricSnapshot, sm: FabricSubnetManager): string {
  return `${sm.guid} (${[subnetManagerHost(fabric, sm), `LID ${sm.lid}`, sm.state, `priority ${sm.priority}`].filter(Boolean).join(', ')})`;
}

export function subnetManagerFindings(fabric: FabricSnapshot): Finding[] {
  // No records: the SA did not answer, which the fabric_sa finding says (no SM at all pages on the hosts).
  const byGuid = new Map(fabric.subnetManagers.map((sm) => [sm.guid, sm]));
  if (byGuid.size === 0) return [];
  const sms = [...byGuid.values()];
  const findings: Finding[] = [];
  if (sms.length === 1) {
    findings.push({
      condition: 'subnet-manager-not-redundant',
      severity: 'warning',
      subject: { kind: 'subnet' },
      summary: `the subnet has one subnet manager, ${subnetManagerText(fabric, sms[0]!)}, and no standby: when it fails nothing takes over`,
      meaning:
        'Everything works now, but when this subnet manager or its host dies, the fabric keeps its routes and no rebooted or re-cabled port comes up until someone starts one.',
      cause: "Only one host runs opensm; the standby's opensm is stopped or crashed, its host is down, or it runs on a port that is down.",
      remedy:
        'run a second opensm on another host of the subnet at a lower priority than the master: sm_priority in /etc/opensm/opensm.conf (e.g. 10 on the standby, 14 on the master), then systemctl enable --now opensm',
      runbook: 'infinibandsubnetmanagernotredundant',
      alert: 'InfiniBandSubnetManagerNotRedundant',
    });
  }
  // The election makes the SM of the highest priority master: the master's priority is the top one.
  const top = sms.find((sm) => sm.state === 'MASTER')?.priority ?? Math.max(...sms.map((sm) => sm.priority));
  const tied = sms.filter((sm) => sm.priority === top);
  if (tied.length > 1) {
    findings.push({
      condition: 'subnet-manager-priority-tie',
      severity: 'info',
      subject: { kind: 'subnet' },
      summary: `${tied.length} subnet managers share the highest priority, ${top}: ${tied.map((sm) => subnetManagerText(fabric, sm)).join(', ')}: which one is master is left to their GUIDs`,
      meaning: 'A restart of either can move mastership back and forth, each handover a re-sweep of the fabric.',
      cause: 'Both SM hosts use the default sm_priority 0, or one configuration file was copied to both.',
      remedy:
        "give every subnet manager a distinct sm_priority in /etc/opensm/opensm.conf (the intended master highest, e.g. 14 and 10), then restart the standby's opensm first",
      runbook: 'infinibandsubnetmanagerprioritytie',
      alert: 'InfiniBandSubnetManagerPriorityTie',
    });
  }
  return findings;
}

/** The IPoIB broadcast group of a partition: MGID ff1<scope>:401b:<P_Key>::ffff:ffff. */
const IPOIB_BROADCAST = /^ff1[0-9a-f]:401b:/i;

/** The links of the CAs as the alert reads them: each active port cabled to a CA, or of a CA; undefined when none is known. */
function* caLinks(fabric: FabricSnapshot): Work<{ slowestGbps: number; slowestLaneGbps: number; count: number } | undefined> {
  const pace = pacer();
  const type = (guid: string | undefined): string | undefined => (guid === undefined ? undefined : fabric.topology?.nodes.get(guid)?.type);
  let slowestGbps = Number.POSITIVE_INFINITY;
  let slowestLaneGbps = Number.POSITIVE_INFINITY;
  let count = 0;
  for (const [key, reading] of fabric.ports) {
    if (pace()) yield;
    // Ports known not to be ACTIVE are left out (a port coming up reports the slowest rate).
    if (
      reading.width === undefined ||
      reading.speed === undefined ||
      (reading.state !== undefined && reading.state.id !== PORT_STATE_ACTIVE)
    )
      continue;
    const peer = reading.peer ?? fabric.topology?.ports.get(key)?.peer;
    if (type(reading.nodeGuid) !== 'ca' && type(peer?.nodeGuid) !== 'ca') continue;
    const lane = LANE_RATES[reading.speed].nominalGbps;
    slowestGbps = Math.min(slowestGbps, reading.width * lane);
    slowestLaneGbps = Math.min(slowestLaneGbps, lane);
    count += 1;
  }
  return count === 0 ? undefined : { slowestGbps, slowestLaneGbps, count };
}

function partitionsConfName(pkey: string): string {
  const base = Number.parseInt(pkey, 16) & 0x7fff;
  return base === 0x7fff ? 'Default=0x7fff' : `<name>=0x${base.toString(16).padStart(4, '0')}`;
}

export function multicastGroupFindings(fabric: FabricSnapshot): Finding[] {
  return atOnce(multicastGroupFindingsSteps(fabric));
}

/** The same, as work that may pause. */
export function* multicastGroupFindingsSteps(fabric: FabricSnapshot): Work<Finding[]> {
  const links = yield* caLinks(fabric);
  // With no CA link known the alert stays silent rather than guess; so does this.
  if (!links) return [];
  // Every HCA generation that reaches QDR lane speed (ConnectX and later) supports MTU 4096.
  const all4k = links.slowestLaneGbps >= 10;
  return fabric.multicastGroups
    .filter((group) => IPOIB_BROADCAST.test(group.mgid))
    .flatMap((group: MulticastGroup): Finding[] => {
      const slowRate = group.rateGbps !== undefined && group.rateGbps < links.slowestGbps;
      const smallMtu = group.mtuBytes !== undefined && group.mtuBytes < 4096 && all4k;
      if (!slowRate && !smallMtu) return [];
      const problems = [
        slowRate && `the slowest active HCA link runs at ${links.slowestGbps} Gb/s`,
        smallMtu && `every HCA link could carry MTU 4096`,
      ]
        .filter(Boolean)
        .join(' and ');
      const rate = slowRate ? saRateCode(links.slowestGbps) : undefined;
      const settings = [rate !== undefined && `rate=${rate}`, `mtu=${saMtuCode(all4k ? 4096 : (group.mtuBytes ?? 2048))}`]
        .filter(Boolean)
        .join(', ');
      return [
        {
          condition: 'multicast-group-suboptimal',
          severity: 'info',
          subject: { kind: 'multicast-group', mgid: group.mgid, pkey: group.pkey },
          summary: `the IPoIB broadcast group ${group.mgid} of P_Key ${group.pkey} runs at ${group.rateGbps ?? '?'} Gb/s with MTU ${group.mtuBytes ?? '?'}, while ${problems} (${plural(links.count, 'active HCA link')})`,
          meaning:
            "Every IPoIB broadcast and multicast packet (ARP, neighbour discovery, multicast applications) moves at the group's rate, and datagram-mode IPoIB is limited to the group's MTU minus 4 bytes (2044 for 2048).",
          cause:
            'opensm creates the group with its defaults, rate=3 (10 Gb/s) and mtu=4 (2048), when partitions.conf does not say otherwise.',
          remedy: `set the partition's rate and MTU in /etc/opensm/partitions.conf (${partitionsConfName(group.pkey)}, ipoib, ${settings} : ALL=full;), restart opensm, then let the hosts rejoin (restart IPoIB on them)`,
          runbook: 'infinibandmulticastgroupsuboptimal',
          alert: 'InfiniBandMulticastGroupSuboptimal',
        },
      ];
    });
}

export const SA_FAILURE: CollectorFailure = {
  consequence:
    'subnet manager records or multicast groups are missing: the standby, the priorities or the IPoIB broadcast groups were not all checked',
  meaning:
    "The subnet administrator (part of the master subnet manager) did not answer; the fabric's routes still work while it is away, but nothing heals.",
  cause: `No subnet manager answers SA queries (the master died or cannot be reached; ports stay ACTIVE meanwhile), or saquery failed or printed incomplete records: ${COMMANDS_FAIL}.`,
};

export const FABRIC_SA: Collector<SubnetAdministrationPart> = defineCollector({
  name: 'fabric_sa',
  checks: 'the subnet managers and multicast groups of the subnet',
  enabledBy: FABRIC_SWITCH,
  flags: [...FABRIC_FLAGS, FABRIC_SHARD],
  scope: 'fabric',
  schedule: { cycle: SA_CYCLE },
  onOverrun: 'drop',
  // The subnet's records, not a shard's: read and served by shard 1 alone.
  setUp: (context) => {
    const shard = context.settings.get(FABRIC_SHARD);
    return shard.index === 1
      ? new SubnetAdministrationReader(context)
      : { off: `shard ${shard.index} of ${shard.count}: shard 1 reads the subnet's managers and groups (--fabric.shard)` };
  },
  metrics: { families: FAMILIES, write: writeMetrics },
  findings: (snapshot) => atOnce(judge(snapshot)),
  findingSteps: judge,
  failure: SA_FAILURE,
});
