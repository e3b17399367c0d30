// The fabric_sa collector: every --fabric.interval, the subnet administrator's records of the
// whole subnet: every subnet manager (saquery SMIR, refreshed from each SM with sminfo) and every
// multicast group (saquery -g, members from saquery -m). It writes the SM and multicast families
// (fabric-wide: every shard serves them) and judges redundancy, priorities and the IPoIB
// broadcast groups.
import { atOnce, type Work } from '../../event-loop/time-slices.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import type { Finding } from '../../model/finding.js';
import { gauge } from '../../exposition/metric-spec.js';
import { Samples } from '../../exposition/samples.js';
import { composeFabric, type FabricSubnetManager, type MulticastGroup } from '../../model/fabric.js';
import { BYTES_PER_GIGABIT } from '../../model/link-rate.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { SubnetAdministrationBefore } from '../../sources/fabric/sa-records.js';
import { defineCollector, type Collector, type CollectorContext, type Cycle, type Reader, type Reading } from '../../collection/collector.js';
import { DIAG_TIMEOUT } from '../diag/diag-group.js';
import { FABRIC_DISCOVERY } from './discovery.js';
import { SA_FAILURE, multicastGroupFindingsSteps, subnetManagerFindings } from './ports/findings.js';
import { FABRIC_PORTS } from './ports/index.js';
import { FABRIC_FLAGS, FABRIC_INTERVAL, FABRIC_SHARD, FABRIC_SWITCH, fabricRunner } from './fabric-mode.js';

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
    const [{ FabricCycle }, { readSubnetAdministration }] = await Promise.all([import('../../sources/fabric/commands.js'), import('../../sources/fabric/sa-records.js')]);
    const cycle = new FabricCycle({ runner: fabricRunner(this.context), timeoutMs: this.context.settings.get(DIAG_TIMEOUT), signal });
    const sa = await readSubnetAdministration(cycle, this.before);
    if (signal.aborted) return {};
    const report = cycle.report();
    if (!report.failed) this.before = { subnetManagers: sa.subnetManagers, multicastGroups: sa.multicastGroups.length };
    return { part: sa, errors: report.errors, failOnErrors: report.failed, timeouts: report.timeouts, read: report.read };
  }
}

export const SA_METRICS = {
  subnetManagerInfo: gauge('infiniband_fabric_subnet_manager_info', ['sm_guid', 'sm_lid', 'state', 'priority'],
    'Every subnet manager of the subnet (value always 1), from the SA\'s SMInfoRecords, state and priority as each SM reports them itself: MASTER, STANDBY, DISCOVERING or NOTACTIVE. One MASTER and at least one STANDBY is a redundant subnet; equal top priorities make the election depend on GUIDs.'),
  multicastMtu: gauge('infiniband_fabric_multicast_group_mtu_bytes', ['mgid', 'pkey'],
    'MTU of a multicast group (SA MCMemberRecord). opensm creates the IPoIB broadcast group (mgid ff12:401b:...) with 2048 bytes unless configured; a fabric whose ports all do 4096 wastes half of every IPoIB datagram.'),
  multicastRate: gauge('infiniband_fabric_multicast_group_rate_bytes_per_second', ['mgid', 'pkey'],
    'Rate of a multicast group (Gb/s x 1e9 / 8). Every member sends multicast at this rate: opensm\'s default IPoIB broadcast group is 10 Gb/s whatever the links run at (ibdiagnet\'s "Suboptimal rate for group").'),
  multicastMembers: gauge('infiniband_fabric_multicast_group_members', ['mgid', 'pkey'], 'Ports joined to a multicast group, as the SA lists them.'),
} as const;

const FAMILIES = Object.values(SA_METRICS);

/** Every record (shard 1 alone reads them: no series is served twice). */
function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const sa = FABRIC_SA.of(snapshot);
  if (!sa) return;
  const samples = new Samples();
  for (const sm of sa.subnetManagers) {
    samples.add(SA_METRICS.subnetManagerInfo, { sm_guid: sm.guid, sm_lid: String(sm.lid), state: sm.state ?? '', priority: String(sm.priority) }, 1);
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
  const discovery = FABRIC_DISCOVERY.of(snapshot);
  const fabric = composeFabric(discovery?.topology, FABRIC_PORTS.of(snapshot), sa, discovery?.shard ?? { index: 1, count: 1 });
  return [...subnetManagerFindings(fabric), ...(yield* multicastGroupFindingsSteps(fabric))];
}

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
    return shard.index === 1 ? new SubnetAdministrationReader(context) : { off: `shard ${shard.index} of ${shard.count}: shard 1 reads the subnet's managers and groups (--fabric.shard)` };
  },
  metrics: { families: FAMILIES, write: writeMetrics },
  findings: (snapshot) => atOnce(judge(snapshot)),
  findingSteps: judge,
  failure: SA_FAILURE,
});
