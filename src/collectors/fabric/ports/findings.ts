// The fabric_ports collector's findings: its ports and links, judged from the fabric collectors'
// parts (a FabricSnapshot; address conflicts are fabric_discovery's findings, subnet managers and
// multicast groups fabric_sa's, each in its own module). Each condition mirrors an alert of
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
import { fabricPortName, portPhrase } from '../../../model/fabric-names.js';
import { PHYSICAL_STATE_LINK_UP, PORT_STATE_INIT } from '../../../model/port-state.js';
import { fabricPortKey, type FabricPortReading, type FabricSnapshot, type PortAddress } from '../../../model/fabric.js';
import { assessLink } from '../../../model/link-degradation.js';
import type { LinkExpectation } from '../../../model/link-rate.js';
import { atOnce, pacer, type Work } from '../../../event-loop/time-slices.js';
import { plural, type CollectorFailure, type Finding } from '../../../model/finding.js';
import { COMMANDS_FAIL } from '../fabric-mode.js';
import { composeFabric } from '../../../model/fabric.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { FABRIC_DISCOVERY_PART, FABRIC_PORTS_PART } from '../../parts.js';
import { compareNatural } from '../../../model/natural-order.js';

function counter(reading: FabricPortReading, name: string): number {
  return reading.counters.get(name) ?? 0;
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
      : `reseat the cable at both ends (the QSFP must click in), then try another cable or transceiver, and check the device at the other end is powered (ibportstate -G ${guid} ${end.port} query shows the port's state)`,
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
    meaning:
      'The link trained, but the port carries no traffic until a subnet manager configures it. INIT is normal for the seconds until the next sweep; a port still INIT a minute later is stuck.',
    cause:
      'No subnet manager runs; it runs but its sweep fails on this part of the fabric (its log names the port); it marked the port bad after repeated errors; or an M_Key or partition misconfiguration on the node.',
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
  return (
    rank(a) - rank(b) ||
    (a.reading.nodeGuid < b.reading.nodeGuid ? -1 : a.reading.nodeGuid > b.reading.nodeGuid ? 1 : 0) ||
    a.reading.port - b.reading.port
  );
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
    links.set(link, [
      ...(links.get(link) ?? []),
      { key, reading, expectation, width: widthDegraded === true, speed: speedDegraded === true, peer },
    ]);
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
      cause:
        'A damaged cable or a dirty or failing transceiver (lost lanes), a cable of a lower generation, a port configured narrower or slower by hand (ibportstate … width/speed), or a split cable in the wrong port.',
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
    return compareNatural(nameA, nameB) || compareNatural(guidA, guidB) || portA - portB;
  });
}

export const PORTS_FAILURE: CollectorFailure = {
  consequence: 'port states, widths or counters of this cycle are missing: down, INIT and degraded links could not all be judged',
  meaning: 'The switch ports whose readings are missing may be down or degraded without a finding.',
  cause: `iblinkinfo or ibqueryerrors failed or printed less than they read: ${COMMANDS_FAIL}.`,
};

/** Every read port and link. */
export function* judge(snapshot: Snapshot): Work<Finding[]> {
  const part = FABRIC_PORTS_PART.of(snapshot);
  const discovery = FABRIC_DISCOVERY_PART.of(snapshot);
  return part && discovery?.topology ? yield* portFindingsSteps(composeFabric(discovery.topology, part, undefined, discovery.shard)) : [];
}
