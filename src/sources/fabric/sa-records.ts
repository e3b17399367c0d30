// The subnet administrator's view: every subnet manager (saquery SMIR), refreshed from each SM
// itself (sminfo <lid>: the SA keeps the state another SM had when the master first met it, e.g.
// DISCOVERING for an SM that has long been STANDBY), and every multicast group (saquery -g) with
// its member count (saquery -m). The SA is the master SM: while no master answers, these fail and
// this cycle reports no records.
import type { FabricSubnetManager, MulticastGroup } from '../../model/fabric.js';
import { commandLine } from '../command-runner.js';
import { isSubnetManagerUnreachable, parseSminfo } from '../diag/sminfo.js';
import type { FabricCycle } from './commands.js';
import { parseMemberCounts, parseMulticastGroups, parseSmInfoRecords } from './saquery.js';

export interface SubnetAdministration {
  subnetManagers: FabricSubnetManager[];
  multicastGroups: MulticastGroup[];
}

export async function readSubnetAdministration(cycle: FabricCycle): Promise<SubnetAdministration> {
  const [subnetManagers, multicastGroups] = await Promise.all([readSubnetManagers(cycle), readMulticastGroups(cycle)]);
  return { subnetManagers, multicastGroups };
}

async function readSubnetManagers(cycle: FabricCycle): Promise<FabricSubnetManager[]> {
  const result = await cycle.run('saquery', ['SMIR']);
  if (!result) return [];
  const { subnetManagers, unparsed } = parseSmInfoRecords(result.stdout);
  cycle.unparsed(commandLine(result), unparsed);
  return Promise.all(subnetManagers.map(async (record) => {
    // An SM that does not answer keeps the SA's record: it is listed, its state is the SA's.
    const own = await cycle.run('sminfo', [String(record.lid)], (r) => r.exitCode === 0 || isSubnetManagerUnreachable(r.stdout, r.exitCode));
    const info = own?.exitCode === 0 ? parseSminfo(own.stdout) : undefined;
    if (own?.exitCode === 0 && !info) cycle.unparsed(commandLine(own), [own.stdout.trim().split('\n')[0] ?? '']);
    if (!info || info.guid !== record.guid) return record;
    return { ...record, priority: info.priority, state: info.state, activityCount: info.activityCount };
  }));
}

async function readMulticastGroups(cycle: FabricCycle): Promise<MulticastGroup[]> {
  const [groupsResult, membersResult] = await Promise.all([cycle.run('saquery', ['-g']), cycle.run('saquery', ['-m'])]);
  if (!groupsResult) return [];
  const { groups, unparsed } = parseMulticastGroups(groupsResult.stdout);
  cycle.unparsed(commandLine(groupsResult), unparsed);
  const members = membersResult ? parseMemberCounts(membersResult.stdout) : undefined;
  if (members && membersResult) cycle.unparsed(commandLine(membersResult), members.unparsed);
  return groups.map((group) => ({ ...group, members: members ? (members.members.get(group.mgid) ?? 0) : undefined }));
}
