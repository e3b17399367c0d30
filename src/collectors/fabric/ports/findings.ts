// The findings of fabric mode (--collector.fabric): what is wrong in the whole subnet, judged
// from the fabric collectors' parts (a FabricSnapshot): address conflicts are fabric_discovery's,
// ports and links fabric_ports', subnet managers and multicast groups fabric_sa's. Each condition
// mirrors an alert of
// rules/infiniband-fabric-alerts.yml at its severity, where one snapshot can judge it:
//   - "was LinkUp within the last day" (InfiniBandFabricPortDown) needs history. Its stand-in here:
//     a switch port without a link is a finding when something in this snapshot shows it was in
//     use — the last discovery saw a cable on it, its LinkDownedCounter counted a link going down,
//     or it passed packets since its counters were reset. A port that never had a cable has none
//     of these and is no finding. (A port emptied on purpose keeps its counts until they are
//     cleared; the finding says how.)
//   - "for 5 minutes" and rates (INIT, physical errors, congestion) are not waited for: INIT is
//     judged now, as the host's INIT finding is; error and congestion rates are left to the alerts.
//   - a switch gone since yesterday (InfiniBandFabricNodeMissing) cannot be seen in one topology.
import { formatWidth, LANE_RATES, type LinkSpeed, type LinkWidth } from '../../../model/link-rate.js';
import { PHYSICAL_STATE_LINK_UP, PORT_STATE_ACTIVE, PORT_STATE_INIT } from '../../../model/port-state.js';
import { saMtuCode, saRateCode } from '../../../model/subnet-administration.js';
import { fabricPortKey, type FabricPortReading, type FabricSnapshot, type FabricSubnetManager, type MulticastGroup, type PortAddress } from '../../../model/fabric.js';
import { assessLink } from '../../../model/link-degradation.js';
import type { LinkExpectation } from '../../../model/link-rate.js';
import type { CollectorReport } from '../../../model/snapshot.js';
import { atOnce, pacer, type Work } from '../../../event-loop/time-slices.js';
import { plural, type CollectorFailure, type FabricNodeName, type FabricPortName, type Finding } from '../../../model/finding.js';

/** A node as findings name it: node-name-map name, else NodeDescription, else GUID. */
export function fabricNodeName(fabric: FabricSnapshot, guid: string): FabricNodeName {
  const node = fabric.topology?.nodes.get(guid);
  return { guid, type: node?.type, name: node?.name || node?.description.trim() || guid };
}

export function fabricPortName(fabric: FabricSnapshot, address: PortAddress): FabricPortName {
  return { node: fabricNodeName(fabric, address.nodeGuid), port: address.port };
}

/** "port 4 of leaf-1", as the text of a finding says it. */
export function portPhrase(end: FabricPortName): string {
  return `port ${end.port} of ${end.node.name}`;
}

function counter(reading: FabricPortReading, name: string): number {
  return reading.counters.find((c) => c.name === name)?.value ?? 0;
}

/** "4X QDR (40 Gb/s" — the caller closes the parenthesis, after whatever it adds. */
function rateText(width: LinkWidth | undefined, speed: LinkSpeed | undefined): string {
  const gbps = width !== undefined && speed !== undefined ? `${width * LANE_RATES[speed].nominalGbps} Gb/s` : 'rate unknown';
  return `${width === undefined ? '?X' : formatWidth(width)} ${speed ?? '?'} (${gbps}`;
}

function expectedFrom(expectation: LinkExpectation): string {
  return expectation.source === 'config' ? "the config file's fabric.expectations" : 'the best both ends enable';
}

/** Signs in one snapshot that a port without a link carried one (see the head of this file). */
function usageEvidence(fabric: FabricSnapshot, key: string, reading: FabricPortReading): string[] {
  const evidence: string[] = [];
  const cabled = fabric.topology?.ports.get(key)?.peer;
  if (cabled) evidence.push(`the last discovery saw its cable to ${portPhrase(fabricPortName(fabric, cabled))}`);
  const downed = counter(reading, 'link_downed');
  if (downed > 0) evidence.push(`its link went down ${plural(downed, 'time')} since its counters were reset`);
  const packets = counter(reading, 'transmit_packets') + counter(reading, 'receive_packets');
  if (packets > 0) evidence.push(`it passed ${plural(packets, 'packet')} since its counters were reset`);
  return evidence;
}

function portDownFinding(fabric: FabricSnapshot, key: string, reading: FabricPortReading): Finding | undefined {
  const id = reading.physicalState?.id;
  if (id === undefined || id < 1 || id > 4) return undefined;
  const evidence = usageEvidence(fabric, key, reading);
  if (evidence.length === 0) return undefined;
  const end = fabricPortName(fabric, reading);
  const cabled = fabric.topology?.ports.get(key)?.peer;
  const peer = cabled && fabricPortName(fabric, cabled);
  const { guid } = end.node;
  const disabled = id === 3;
  const phys = reading.physicalState?.name ?? `physical state ${id}`;
  return {
    condition: 'fabric-port-down',
    severity: 'critical',
    subject: { kind: 'fabric-port', node: end.node, port: end.port, peer },
    summary: `${portPhrase(end)}${peer?.node.type === 'switch' ? ' (an inter-switch link)' : ''} has no link (${phys}): ${disabled ? 'it is disabled' : 'cable pulled or broken, a transceiver failed, or the device at the other end is down'} (${evidence.join('; ')})`,
    meaning: `Traffic routed over this port is rerouted or lost: an inter-switch link down takes bandwidth from every job routed over it (and reachability, if it was the last path); a host link down cuts the host off. A port emptied on purpose counts as used until its counters are cleared: perfquery -R -G ${guid} ${end.port}.`,
    cause: disabled
      ? 'The port was disabled by hand (ibportstate … disable) or by the subnet manager after too many errors.'
      : 'Cable pulled or broken; a transceiver (QSFP) failed or is unseated at either end; the switch or host at the other end is powered off or its port died.',
    remedy: disabled
      ? `enable it: ibportstate -G ${guid} ${end.port} enable`
      : `reseat the cable at both ends (the QSFP must click in), then try another cable or transceiver, and check the device at the other end is powered (iblinkinfo -S ${guid})`,
    runbook: 'infinibandfabricportdown',
    alert: 'InfiniBandFabricPortDown',
  };
}

function stuckInitFinding(fabric: FabricSnapshot, key: string, reading: FabricPortReading): Finding | undefined {
  if (reading.state?.id !== PORT_STATE_INIT || reading.physicalState?.id !== PHYSICAL_STATE_LINK_UP) return undefined;
  const end = fabricPortName(fabric, reading);
  const address = reading.peer ?? fabric.topology?.ports.get(key)?.peer;
  const peer = address && fabricPortName(fabric, address);
  return {
    condition: 'fabric-port-stuck-init',
    severity: 'critical',
    subject: { kind: 'fabric-port', node: end.node, port: end.port, peer },
    summary: `${portPhrase(end)}${peer ? ` (cabled to ${portPhrase(peer)})` : ''} is INIT with its link up (LinkUp): no subnet manager has configured it`,
    meaning: 'The link trained, but the port carries no traffic until a subnet manager configures it. INIT is normal for the seconds until the next sweep; a port still INIT a minute later is stuck.',
    cause: 'No subnet manager runs; it runs but its sweep fails on this part of the fabric (its log names the port); it marked the port bad after repeated errors; or an M_Key or partition misconfiguration on the node.',
    remedy: `start or restart the subnet manager (systemctl restart opensm on its host); if only this port stays INIT, reset it: ibportstate -G ${end.node.guid} ${end.port} reset`,
    runbook: 'infinibandfabricportstuckinitializing',
    alert: 'InfiniBandFabricPortStuckInitializing',
  };
}

interface DegradedEnd {
  key: string;
  reading: FabricPortReading;
  expectation: LinkExpectation;
  width: boolean;
  speed: boolean;
  peer: PortAddress | undefined;
}

/** Which end of a link reports it: a switch end before a CA end, then the lower GUID (as the alert), then the lower port. */
function reportsFirst(fabric: FabricSnapshot, a: DegradedEnd, b: DegradedEnd): number {
  const rank = (end: DegradedEnd): number => (fabric.topology?.nodes.get(end.reading.nodeGuid)?.type === 'switch' ? 0 : 1);
  return rank(a) - rank(b) || (a.reading.nodeGuid < b.reading.nodeGuid ? -1 : a.reading.nodeGuid > b.reading.nodeGuid ? 1 : 0) || a.reading.port - b.reading.port;
}

/** One finding per degraded link, however many of its ends were read. */
function* degradedLinkFindings(fabric: FabricSnapshot): Work<Finding[]> {
  const pace = pacer();
  const links = new Map<string, DegradedEnd[]>();
  for (const [key, reading] of fabric.ports) {
    if (pace()) yield;
    const expectation = fabric.expectations.get(key);
    const { widthDegraded, speedDegraded } = assessLink(reading, expectation);
    if (!expectation || !(widthDegraded || speedDegraded)) continue;
    const peer = reading.peer ?? fabric.topology?.ports.get(key)?.peer;
    const link = [key, peer ? fabricPortKey(peer.nodeGuid, peer.port) : ''].sort().join(' ');
    links.set(link, [...(links.get(link) ?? []), { key, reading, expectation, width: widthDegraded === true, speed: speedDegraded === true, peer }]);
  }
  return [...links.values()].map((ends) => {
    const [reporter] = [...ends].sort((a, b) => reportsFirst(fabric, a, b)) as [DegradedEnd];
    const { reading, expectation, peer: address } = reporter;
    const end = fabricPortName(fabric, reading);
    const peer = address && fabricPortName(fabric, address);
    const what = [reporter.width && 'lanes are lost', reporter.speed && 'it trained at a lower speed'].filter(Boolean).join(' and ');
    const planned = expectation.source === 'config' ? ' If the lower rate is intended, say so in fabric.expectations.' : '';
    return {
      condition: 'fabric-link-degraded',
      severity: 'warning',
      subject: { kind: 'fabric-port', node: end.node, port: end.port, peer },
      summary: `the link from ${portPhrase(end)} to ${peer ? portPhrase(peer) : 'an unknown port'} runs at ${rateText(reading.width, reading.speed)}), expected ${rateText(expectation.width, expectation.speed)}: ${expectedFrom(expectation)}): ${what}`,
      meaning: `Every job routed over this link gets a fraction of the bandwidth it should; on an inter-switch link that is the traffic of many hosts. A link trains both ends alike: this is one cable, named from both ends.${planned}`,
      cause: 'A damaged cable or a dirty or failing transceiver (lost lanes), a cable of a lower generation, a port configured narrower or slower by hand (ibportstate … width/speed), or a split cable in the wrong port.',
      remedy: `reseat the cable at both ends and clean the optics; if it still trains narrow or slow, replace the cable or transceiver; then make it retrain: ibportstate -G ${end.node.guid} ${end.port} reset`,
      runbook: 'infinibandfabriclinkdegraded',
      alert: 'InfiniBandFabricLinkDegraded',
    };
  });
}

/** The fabric's port findings, by node name and port so that a switch's findings read in order. */
export function portFindings(fabric: FabricSnapshot): Finding[] {
  return atOnce(portFindingsSteps(fabric));
}

/** The same, as work that may pause. */
export function* portFindingsSteps(fabric: FabricSnapshot): Work<Finding[]> {
  const pace = pacer();
  const findings: Finding[] = [];
  for (const [key, reading] of fabric.ports) {
    if (pace()) yield;
    const init = stuckInitFinding(fabric, key, reading);
    if (init) findings.push(init);
    // CA ports (--fabric.hca-ports) are left out, as in the alert: a host that reboots is no fabric fault.
    if (fabric.topology?.nodes.get(reading.nodeGuid)?.type === 'switch') {
      const down = portDownFinding(fabric, key, reading);
      if (down) findings.push(down);
    }
  }
  findings.push(...(yield* degradedLinkFindings(fabric)));
  const order = (finding: Finding): [string, string, number] =>
    finding.subject.kind === 'fabric-port' ? [finding.subject.node.name, finding.subject.node.guid, finding.subject.port] : ['', '', 0];
  return findings.sort((a, b) => {
    const [nameA, guidA, portA] = order(a);
    const [nameB, guidB, portB] = order(b);
    return nameA.localeCompare(nameB) || guidA.localeCompare(guidB) || portA - portB;
  });
}

/** The name of the node whose port carries the SM's GUID (the SM's host); undefined when discovery did not see it. */
export function subnetManagerHost(fabric: FabricSnapshot, sm: Pick<FabricSubnetManager, 'guid'>): string | undefined {
  for (const port of fabric.topology?.ports.values() ?? []) {
    if (port.portGuid === sm.guid) return fabricNodeName(fabric, port.nodeGuid).name;
  }
  return undefined;
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
      meaning: 'Everything works now, but when this subnet manager or its host dies, the fabric keeps its routes and no rebooted or re-cabled port comes up until someone starts one.',
      cause: 'Only one host runs opensm; the standby\'s opensm is stopped or crashed, its host is down, or it runs on a port that is down.',
      remedy: 'run a second opensm on another host of the subnet at a lower priority than the master: sm_priority in /etc/opensm/opensm.conf (e.g. 10 on the standby, 14 on the master), then systemctl enable --now opensm',
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
      remedy: 'give every subnet manager a distinct sm_priority in /etc/opensm/opensm.conf (the intended master highest, e.g. 14 and 10), then restart the standby\'s opensm first',
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
    if (reading.width === undefined || reading.speed === undefined || (reading.state !== undefined && reading.state.id !== PORT_STATE_ACTIVE)) continue;
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
  return fabric.multicastGroups.filter((group) => IPOIB_BROADCAST.test(group.mgid)).flatMap((group: MulticastGroup): Finding[] => {
    const slowRate = group.rateGbps !== undefined && group.rateGbps < links.slowestGbps;
    const smallMtu = group.mtuBytes !== undefined && group.mtuBytes < 4096 && all4k;
    if (!slowRate && !smallMtu) return [];
    const problems = [
      slowRate && `the slowest active HCA link runs at ${links.slowestGbps} Gb/s`,
      smallMtu && `every HCA link could carry MTU 4096`,
    ].filter(Boolean).join(' and ');
    const rate = slowRate ? saRateCode(links.slowestGbps) : undefined;
    const settings = [rate !== undefined && `rate=${rate}`, `mtu=${saMtuCode(all4k ? 4096 : (group.mtuBytes ?? 2048))}`].filter(Boolean).join(', ');
    return [{
      condition: 'multicast-group-suboptimal',
      severity: 'info',
      subject: { kind: 'multicast-group', mgid: group.mgid, pkey: group.pkey },
      summary: `the IPoIB broadcast group ${group.mgid} of P_Key ${group.pkey} runs at ${group.rateGbps ?? '?'} Gb/s with MTU ${group.mtuBytes ?? '?'}, while ${problems} (${plural(links.count, 'active HCA link')})`,
      meaning: 'Every IPoIB broadcast and multicast packet (ARP, neighbour discovery, multicast applications) moves at the group\'s rate, and datagram-mode IPoIB is limited to the group\'s MTU minus 4 bytes (2044 for 2048).',
      cause: 'opensm creates the group with its defaults, rate=3 (10 Gb/s) and mtu=4 (2048), when partitions.conf does not say otherwise.',
      remedy: `set the partition's rate and MTU in /etc/opensm/partitions.conf (${partitionsConfName(group.pkey)}, ipoib, ${settings} : ALL=full;), restart opensm, then let the hosts rejoin (restart IPoIB on them)`,
      runbook: 'infinibandmulticastgroupsuboptimal',
      alert: 'InfiniBandMulticastGroupSuboptimal',
    }];
  });
}

export function addressConflictFindings(fabric: FabricSnapshot): Finding[] {
  const topology = fabric.topology;
  if (!topology || topology.duplicateGuids + topology.duplicateLids === 0) return [];
  return [{
    condition: 'fabric-address-conflict',
    severity: 'critical',
    subject: { kind: 'subnet' },
    summary: `the fabric discovery found ${plural(topology.duplicateGuids, 'duplicate GUID')} and ${plural(topology.duplicateLids, 'duplicate LID')}: packets for one address reach the wrong port or none`,
    meaning: 'A GUID two nodes share hides one of them from discovery and from the subnet manager\'s routing; two ports with one LID make it route to either. The subnet manager may refuse to bring ports up.',
    cause: 'Duplicate GUIDs: a card with a cloned or badly burnt firmware image. Duplicate LIDs: two subnets joined by a cable while each had its own subnet manager, or a LID set by hand.',
    remedy: 'find them with ibnetdiscover -p (one GUID or LID twice); reburn a duplicate GUID with the card\'s own (mstflint -d <pci> -guid <guid> sg) or replace the card; for duplicate LIDs unplug the cable that joined two subnets and restart the subnet manager',
    runbook: 'infinibandfabricaddressconflict',
    alert: 'InfiniBandFabricAddressConflict',
  }];
}

function durationText(seconds: number): string {
  if (seconds < 120) return plural(Math.round(seconds), 'second');
  if (seconds < 7200) return plural(Math.round(seconds / 60), 'minute');
  return plural(Math.round(seconds / 3600), 'hour');
}

const COMMANDS_FAIL = 'no access to /dev/infiniband/umad* (not root), ib_umad not loaded or the local port down, a command past --diag.timeout on a large fabric, the tool not installed (--<tool>.path), or its output cut short or garbled on its way (a wrapper script, a tool of another version: the read errors name the lines)';

/** What a failed discovery means: the age of the topology in use. */
export function discoveryFailure(fabric: FabricSnapshot, report: CollectorReport): CollectorFailure {
  const topology = fabric.topology;
  return {
    consequence: topology
      ? `the topology in use is from ${new Date(topology.discoveredAt * 1000).toISOString()}, ${durationText(Math.max(0, report.finishedAt - topology.discoveredAt))} older: switches, hosts and cables added, moved or removed since are not seen`
      : 'no discovery has succeeded, so no switch, port or link of the fabric could be checked',
    meaning: 'Fabric mode reads every port, link and counter through the topology that discovery found.',
    cause: `ibnetdiscover failed, printed less than it found, or found less than half of the fabric (kept until the next discovery confirms it): ${COMMANDS_FAIL}.`,
  };
}

export const PORTS_FAILURE: CollectorFailure = {
  consequence: 'port states, widths or counters of this cycle are missing: down, INIT and degraded links could not all be judged',
  meaning: 'The switch ports whose readings are missing may be down or degraded without a finding.',
  cause: `iblinkinfo or ibqueryerrors failed or printed less than they read: ${COMMANDS_FAIL}.`,
};

export const SA_FAILURE: CollectorFailure = {
  consequence: 'subnet manager records or multicast groups are missing: the standby, the priorities or the IPoIB broadcast groups were not all checked',
  meaning: 'The subnet administrator (part of the master subnet manager) did not answer; the fabric\'s routes still work while it is away, but nothing heals.',
  cause: `No subnet manager answers SA queries (the master died or cannot be reached; ports stay ACTIVE meanwhile), or saquery failed or printed incomplete records: ${COMMANDS_FAIL}.`,
};
