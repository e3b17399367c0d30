// The subnet administrator's view: every subnet manager (saquery SMIR), refreshed from each SM
// itself (sminfo <lid>: the SA keeps the state another SM had when the master first met it, e.g.
// DISCOVERING for an SM that has long been STANDBY), and every multicast group (saquery -g) with
// its member count (saquery -m). The SA is the master SM: while no master answers, these fail and
// this cycle reports no records.
//
// saquery prints no end marker: records are checked instead. A record that lacks a field saquery
// always prints, or a line outside any record, fails the cycle (cut short or garbled). Lists whose
// length is a fact the alerts count are not served incomplete: the SM records (one SM fewer is a
// subnet without standby) and the member counts. An answer without any SMInfoRecord is incomplete
// too (the master lists itself), and so is one without any multicast group where the last
// complete cycle had some (opensm keeps the IPoIB broadcast group of every partition it serves).
import type { FabricSubnetManager, MulticastGroup } from '../../snapshot/fabric.js';
import { isSubnetManagerUnreachable, parseSminfo } from '../diag/sminfo.js';
import { commandItem, type FabricCycle } from './commands.js';
import { parseMemberCounts, parseMulticastGroups, parseSmInfoRecords } from './saquery.js';

export interface SubnetAdministration {
  subnetManagers: FabricSubnetManager[];
  multicastGroups: MulticastGroup[];
}

/** `groupsBefore`: the multicast groups of the last SA cycle that succeeded (0 before the first). */
export async function readSubnetAdministration(cycle: FabricCycle, groupsBefore = 0): Promise<SubnetAdministration> {
  const [subnetManagers, multicastGroups] = await Promise.all([readSubnetManagers(cycle), readMulticastGroups(cycle, groupsBefore)]);
  return { subnetManagers, multicastGroups };
}

async function readSubnetManagers(cycle: FabricCycle): Promise<FabricSubnetManager[]> {
  const result = await cycle.run('saquery', ['SMIR']);
  if (!result) return [];
  const { subnetManagers, unparsed } = parseSmInfoRecords(result.stdout);
  cycle.unparsed(result, unparsed);
  if (unparsed.length > 0) return [];
  if (subnetManagers.length === 0) {
    cycle.fail(commandItem(result), 'no SMInfoRecord in the output, where the master always lists itself: the output is incomplete');
    return [];
  }
  return Promise.all(subnetManagers.map(async (record) => {
    // An SM that does not answer keeps the SA's record: it is listed, its state is the SA's.
    const own = await cycle.run('sminfo', [String(record.lid)], (r) => r.exitCode === 0 || isSubnetManagerUnreachable(r.stdout, r.exitCode));
    const info = own?.exitCode === 0 ? parseSminfo(own.stdout) : undefined;
    if (own?.exitCode === 0 && !info) cycle.unparsed(own, [own.stdout.trim().split('\n')[0] ?? '']);
    if (!info || info.guid !== record.guid) return record;
    return { ...record, priority: info.priority, state: info.state, activityCount: info.activityCount };
  }));
}

async function readMulticastGroups(cycle: FabricCycle, groupsBefore: number): Promise<MulticastGroup[]> {
  const [groupsResult, membersResult] = await Promise.all([cycle.run('saquery', ['-g']), cycle.run('saquery', ['-m'])]);
  if (!groupsResult) return [];
  const { groups, unparsed } = parseMulticastGroups(groupsResult.stdout);
  cycle.unparsed(groupsResult, unparsed);
  if (groups.length === 0 && unparsed.length === 0 && groupsBefore > 0) {
    cycle.fail(commandItem(groupsResult), `no multicast group in the output, where the last cycle read ${groupsBefore}: the output is incomplete`);
  }
  const members = membersResult ? parseMemberCounts(membersResult.stdout) : undefined;
  if (members && membersResult) cycle.unparsed(membersResult, members.unparsed);
  const counted = members && members.unparsed.length === 0 ? members.members : undefined;
  return groups.map((group) => ({ ...group, members: counted ? (counted.get(group.mgid) ?? 0) : undefined }));
}
