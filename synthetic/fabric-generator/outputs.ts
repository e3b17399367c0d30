// The text outputs of the infiniband-diags tools fabric mode runs, for a generated fabric, byte for
// byte as rdma-core v44.0 prints them (the printf formats of ibnetdiscover.c, iblinkinfo.c,
// ibqueryerrors.c, saquery.c, sminfo.c and perfquery.c). Each renderer hands its text to a sink in
// chunks of one node (or record), so that a 120 000-port output is written without being held.
import {
  CAP_MASK,
  extSpeedText,
  gidGroups,
  gidText,
  hex,
  hex16,
  highestBit,
  humanReadable,
  legacySpeedText,
  physicalStateText,
  portStateText,
  right,
  speedCode,
  speedCompat,
  widestWidth,
  widthCompat,
  widthText,
} from './mad.js';
import {
  BASIC_TRAFFIC_FIELDS,
  DATA_FIELDS,
  ERROR_FIELDS,
  MAX_32,
  saturated,
  TRAFFIC_FIELDS,
  type ErrorField,
  type TrafficField,
} from './pma.js';
import { linkUp, portCounters, type GeneratedFabric, type GeneratedNode, type GeneratedPort } from './topology.js';

export type Sink = (text: string) => void;

/** The port at the other end of a plugged-in cable. */
function peerOf(port: GeneratedPort | undefined): GeneratedPort | undefined {
  return port && linkUp(port) ? port.cable : undefined;
}

/** A port's LID as the tools print it: a switch port answers at its switch's. */
const lidOf = (port: GeneratedPort): number => port.node.lid;

const nodeName = (node: GeneratedNode): string => `"${node.kind === 'switch' ? 'S' : 'H'}-${node.guid.toString(16).padStart(16, '0')}"`;

/** The active speed as PortInfo reports it (LinkSpeedActive, LinkSpeedExtActive). */
function activeSpeed(port: GeneratedPort): { legacy: number; ext: number } {
  return speedCode(port.speed);
}

/** `Www Mmm dd hh:mm:ss yyyy\n`, ctime(3)'s format, in UTC. */
export function ctime(date: Date): string {
  const days = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${days[date.getUTCDay()]} ${months[date.getUTCMonth()]} ${right(date.getUTCDate(), 2)} ${two(date.getUTCHours())}:${two(date.getUTCMinutes())}:${two(date.getUTCSeconds())} ${date.getUTCFullYear()}\n`;
}

function ids(fabric: GeneratedFabric, node: GeneratedNode): string {
  const { profile } = fabric;
  const [vendor, device] =
    node.kind === 'switch' ? [profile.switchVendorId, profile.switchDeviceId] : [profile.caVendorId, profile.caDeviceId];
  return `\nvendid=0x${hex(vendor)}\ndevid=0x${hex(device)}\nsysimgguid=0x${hex(node.guid)}\n`;
}

/** `ibnetdiscover` (its default topology output; `date` is the one line that changes from run to run). */
export function ibnetdiscover(fabric: GeneratedFabric, sink: Sink, date = new Date(0)): void {
  const origin = fabric.origin;
  sink(
    `#\n# Topology file: generated on ${ctime(date)}#\n# Initiated from node ${origin.guid.toString(16).padStart(16, '0')} port ${origin.ports[1]!.guid.toString(16).padStart(16, '0')}\n`,
  );
  for (const node of fabric.listed) {
    if (node.kind !== 'switch') continue;
    let text = `${ids(fabric, node)}switchguid=0x${hex(node.guid)}(${hex(node.guid)})\nSwitch\t${node.portCount} ${nodeName(node)}\t\t# "${node.description}" base port 0 lid ${node.lid} lmc 0\n`;
    for (const port of node.ports) {
      const peer = peerOf(port);
      if (!port || !peer) continue;
      const { legacy, ext } = activeSpeed(port);
      text += `[${port.number}]\t${nodeName(peer.node)}[${peer.number}]${peer.node.kind === 'switch' ? '' : `(${hex(peer.guid)}) `}\t\t# "${peer.node.description}" lid ${lidOf(peer)} ${widthCompat(port.width)}${speedCompat(legacy, ext)}\n`;
    }
    sink(text);
  }
  for (const node of fabric.listed) {
    if (node.kind !== 'ca') continue;
    let text = `${ids(fabric, node)}caguid=0x${hex(node.guid)}\nCa\t${node.portCount} ${nodeName(node)}\t\t# "${node.description}"\n`;
    for (const port of node.ports) {
      const peer = peerOf(port);
      if (!port || !peer) continue;
      const { legacy, ext } = activeSpeed(port);
      text += `[${port.number}](${hex(port.guid)}) \t${nodeName(peer.node)}[${peer.number}]${peer.node.kind === 'switch' ? '' : ` (${hex(peer.guid)}) `}\t\t# lid ${lidOf(port)} lmc 0 "${peer.node.description}" lid ${lidOf(peer)} ${widthCompat(port.width)}${speedCompat(legacy, ext)}\n`;
    }
    sink(text);
  }
}

function capMaskOf(fabric: GeneratedFabric, node: GeneratedNode): number {
  return node.kind === 'switch' ? fabric.profile.switchCapMask : fabric.profile.caCapMask;
}

/** iblinkinfo's get_max_msg: "Could be …" when the link runs below what both ends support. */
function couldBe(fabric: GeneratedFabric, port: GeneratedPort, peer: GeneratedPort): [string, string] {
  const { profile } = fabric;
  // Both ends support what the profile says.
  const widest = widestWidth(profile.widthSupported);
  const width = (widest & port.width) === 0 ? `Could be ${widthText(widest)}` : '';
  const { legacy, ext } = activeSpeed(port);
  const extended =
    (capMaskOf(fabric, port.node) & CAP_MASK.hasExtendedSpeeds) !== 0 && (capMaskOf(fabric, peer.node) & CAP_MASK.hasExtendedSpeeds) !== 0;
  if (extended && profile.extSupported !== 0) {
    const fastest = highestBit(profile.extSupported);
    return [width, (fastest & ext) === 0 ? `Could be ${extSpeedText(fastest)}` : ''];
  }
  const fastest = highestBit(profile.speedSupported);
  return [width, (fastest & legacy) === 0 ? `Could be ${legacySpeedText(fastest)}` : ''];
}

function linkinfoLine(fabric: GeneratedFabric, port: GeneratedPort): string {
  const peer = peerOf(port);
  let link: string;
  if (linkUp(port)) {
    const { legacy, ext } = activeSpeed(port);
    const speed = ext !== 0 ? extSpeedText(ext) : legacySpeedText(legacy);
    link = `(${right(widthText(port.width), 3)} ${right(speed, 18)} ${right(portStateText(4), 6)}/${right(physicalStateText(5), 8)})`;
  } else {
    link = `(              ${right(portStateText(1), 6)}/${right(physicalStateText(2), 8)})`;
  }
  let remote: string;
  if (peer) {
    const [width, speed] = couldBe(fabric, port, peer);
    remote = `${hex16(peer.guid)} ${right(lidOf(peer), 6)} ${right(peer.number, 4)}[${right('', 2)}] "${peer.node.description}" (${width} ${speed})\n`;
  } else {
    remote = '           [  ] "" ( )\n';
  }
  return `${hex16(port.guid)} "${right(port.node.description, 30)}" ${right(lidOf(port), 6)} ${right(port.number, 4)}[${right('', 2)}] ==${link}==>  ${remote}`;
}

/** `iblinkinfo --line`, or with `--switches-only`. */
export function iblinkinfo(fabric: GeneratedFabric, sink: Sink, options: { switchesOnly: boolean }): void {
  for (const node of fabric.listed) {
    if (options.switchesOnly && node.kind !== 'switch') continue;
    let text = '';
    for (const port of node.ports) {
      // A CA port discovery did not go through does not exist for libibnetdisc.
      if (!port || (node.kind === 'ca' && !linkUp(port))) continue;
      text += linkinfoLine(fabric, port);
    }
    sink(text);
  }
}

/** The ports a sweep visits on a node: every port of a switch, the discovered ports of a CA. */
function sweptPorts(node: GeneratedNode): GeneratedPort[] {
  return node.ports.filter((port): port is GeneratedPort => port !== undefined && (node.kind === 'switch' || linkUp(port)));
}

function swept(fabric: GeneratedFabric, switchesOnly: boolean): GeneratedNode[] {
  return fabric.listed.filter((node) => !switchesOnly || node.kind === 'switch');
}

export interface SweepSummary {
  nodes: number;
  badNodes: number;
  ports: number;
  badPorts: number;
}

/** The summary ibqueryerrors ends with (its threshold file: /dev/null or the Debian default, both without thresholds). */
export function sweepSummary(summary: SweepSummary): string {
  return `\n## Summary: ${summary.nodes} nodes checked, ${summary.badNodes} bad nodes found\n##          ${summary.ports} ports checked, ${summary.badPorts} ports have errors beyond threshold\n## Thresholds: \n## Suppressed:\n`;
}

/** PortCounters error values above 0, `[Name == value]` each (the counters saturate at their widths). */
function errorItems(values: Readonly<Record<ErrorField, number>>): string {
  let text = '';
  for (const field of ERROR_FIELDS) {
    const value = saturated(values[field.name], field.max);
    if (value > 0) text += ` [${field.name} == ${value}]`;
  }
  return text;
}

/**
 * `ibqueryerrors --skip-sl --threshold-file /dev/null --load-cache FILE [--switch]`: every
 * threshold 0, so every non-zero error counter (and PortXmitWait) is printed; per node the
 * all-ports sum first, then the ports, as the PMA supports AllPortSelect. Returns its exit code.
 */
export function ibqueryerrorsErrors(fabric: GeneratedFabric, sink: Sink, options: { switchesOnly: boolean }): number {
  const summary: SweepSummary = { nodes: 0, badNodes: 0, ports: 0, badPorts: 0 };
  for (const node of swept(fabric, options.switchesOnly)) {
    summary.nodes += 1;
    const ports = sweptPorts(node);
    const sums = Object.fromEntries(ERROR_FIELDS.map((field) => [field.name, 0])) as Record<ErrorField, number>;
    const each = ports.map((port) => {
      const values = portCounters(port);
      for (const field of ERROR_FIELDS) sums[field.name] += values[field.name];
      return { port, values };
    });
    for (const field of ERROR_FIELDS)
      sums[field.name] = saturated(sums[field.name], fabric.profile.allPortsSumLimits[field.name] ?? field.max);
    const all = errorItems(sums);
    if (all === '') {
      summary.ports += node.portCount;
      continue;
    }
    let text =
      node.kind === 'switch'
        ? `Errors for 0x${hex(node.guid)} "${node.description}"\n   GUID 0x${hex(node.guid)} port ALL:${all}\n`
        : `Errors for "${node.description}"\n`;
    summary.badNodes += 1;
    for (const { port, values } of each) {
      summary.ports += 1;
      const items = errorItems(values);
      if (items === '') continue;
      text += `   GUID 0x${hex(port.guid)} port ${port.number}:${items}\n`;
      summary.badPorts += 1;
    }
    sink(text);
  }
  sink(sweepSummary(summary));
  return summary.badPorts > 0 ? 1 : 0;
}

/** `ibqueryerrors --skip-sl --counters --load-cache FILE [--switch]`: PortCountersExtended of every port. */
export function ibqueryerrorsCounters(fabric: GeneratedFabric, sink: Sink, options: { switchesOnly: boolean }): number {
  const summary: SweepSummary = { nodes: 0, badNodes: 0, ports: 0, badPorts: 0 };
  for (const node of swept(fabric, options.switchesOnly)) {
    summary.nodes += 1;
    let text = `Data Counters for 0x${hex(node.guid)} "${node.description}"\n`;
    for (const port of sweptPorts(node)) {
      summary.ports += 1;
      const values = portCounters(port);
      text += `   GUID 0x${hex(node.guid)} port ${port.number}:`;
      for (const field of TRAFFIC_FIELDS)
        text += ` [${field} == ${values[field]} (${humanReadable(values[field], DATA_FIELDS.has(field))})]`;
      text += '\n';
    }
    sink(text);
  }
  sink(sweepSummary(summary));
  return 0;
}

const dotted = (name: string, width: number): string => `${name}${'.'.repeat(Math.max(0, width - name.length))}`;

/** `saquery SMIR`. */
export function saquerySmInfo(fabric: GeneratedFabric, sink: Sink): void {
  for (const sm of fabric.subnetManagers) {
    sink(
      `SMInfoRecord dump:\n\t\tRID\n\t\t${dotted('LID', 22)}${sm.port.node.lid}\n\t\tSMInfo dump:\n\t\t${dotted('GUID', 22)}${hex16(sm.port.guid)}\n\t\t${dotted('SM_Key', 22)}0x0000000000000000\n\t\t${dotted('ActCount', 22)}${sm.activityCount}\n\t\t${dotted('Priority', 22)}${sm.priority}\n\t\t${dotted('SMState', 22)}${sm.recordState}\n`,
    );
  }
}

const upperHex = (value: number): string => `0x${value.toString(16).toUpperCase()}`;

/** `saquery -g`: one record per multicast group. */
export function saqueryGroups(fabric: GeneratedFabric, sink: Sink): void {
  for (const group of fabric.multicastGroups) {
    sink(
      `MCMemberRecord group dump:\n\t\t${dotted('MGID', 24)}${gidText(group.mgid)}\n\t\t${dotted('Mlid', 24)}${upperHex(group.mlid)}\n\t\t${dotted('Mtu', 24)}${upperHex(group.mtu)}\n\t\t${dotted('pkey', 24)}${upperHex(group.pkey)}\n\t\t${dotted('Rate', 24)}${upperHex(group.rate)}\n\t\t${dotted('SL', 24)}${upperHex(group.sl)}\n`,
    );
  }
}

/** `saquery -m`: one record per membership; a group opensm made that nobody joined answers with one record of GID `::`. */
export function saqueryMembers(fabric: GeneratedFabric, sink: Sink): void {
  const record = (mgid: number[], mlid: number, portGid: string, scopeState: number, description: string): string =>
    `MCMemberRecord member dump:\n\t\t${dotted('MGID', 24)}${gidText(mgid)}\n\t\t${dotted('Mlid', 24)}${upperHex(mlid)}\n\t\t${dotted('PortGid', 24)}${portGid}\n\t\t${dotted('ScopeState', 24)}${upperHex(scopeState)}\n\t\t${dotted('ProxyJoin', 24)}0x0\n\t\t${dotted('NodeDescription', 24)}${description}\n`;
  for (const group of fabric.multicastGroups) {
    if (group.members.length === 0) {
      sink(record(group.mgid, group.mlid, '::', 0x20, '<unknown>'));
      continue;
    }
    let text = '';
    for (const member of group.members)
      text += record(group.mgid, group.mlid, gidText(gidGroups(0xfe80000000000000n, member.guid)), 0x21, member.node.description);
    sink(text);
  }
}

const SM_STATES = ['SMINFO_NOTACT', 'SMINFO_DISCOVER', 'SMINFO_STANDBY', 'SMINFO_MASTER'];

/** `sminfo <lid>` of each subnet manager, by LID. */
export function sminfo(fabric: GeneratedFabric): Map<number, string> {
  return new Map(
    fabric.subnetManagers.map((sm) => [
      sm.port.node.lid,
      `sminfo: sm lid ${sm.port.node.lid} sm guid 0x${hex(sm.port.guid)}, activity count ${sm.activityCount} priority ${sm.priority} state ${sm.state} ${SM_STATES[sm.state]}\n`,
    ]),
  );
}

const perfLine = (name: string, value: string | number): string => `${dotted(`${name}:`, 33)}${value}\n`;

/**
 * `perfquery -l <lid> 1-<N>` (PortCounters) or `perfquery -x -l <lid> 1-<N>` (PortCountersExtended)
 * of a switch: one block per port, as the fabric mode's per-switch fallback runs it.
 */
export function perfquery(fabric: GeneratedFabric, node: GeneratedNode, extended: boolean): string {
  const { pmaCapMask, pmaCapMask2 } = fabric.profile;
  const capMask = `0x${pmaCapMask.toString(16).toUpperCase().padStart(2, '0')}`;
  let text = '';
  for (const port of sweptPorts(node)) {
    const values = portCounters(port);
    if (extended) {
      text += `# Port extended counters: Lid ${node.lid} port ${port.number} (CapMask: ${capMask} CapMask2: 0x${pmaCapMask2.toString(16).toUpperCase().padStart(7, '0')})\n`;
      text += perfLine('PortSelect', String(port.number)) + perfLine('CounterSelect', '0x0000');
      for (const field of TRAFFIC_FIELDS) text += perfLine(field, values[field]);
      continue;
    }
    const value = (name: ErrorField | TrafficField, max: number): number => saturated(values[name], max);
    text += `# Port counters: Lid ${node.lid} port ${port.number} (CapMask: ${capMask})\n`;
    text += perfLine('PortSelect', String(port.number)) + perfLine('CounterSelect', '0x0000');
    for (const field of ERROR_FIELDS.slice(0, 9)) text += perfLine(field.name, value(field.name, field.max));
    text += perfLine('CounterSelect2', '0x00');
    for (const field of ERROR_FIELDS.slice(9, 11)) text += perfLine(field.name, value(field.name, field.max));
    // libibmad (v44) places QP1Dropped at the bits of VL15Dropped (fields.c: {160, 16} where
    // VL15Dropped is BITSOFFS(176, 16), the same bits): perfquery prints VL15Dropped twice.
    text += perfLine('QP1Dropped', value('VL15Dropped', 0xffff)) + perfLine('VL15Dropped', value('VL15Dropped', 0xffff));
    for (const field of BASIC_TRAFFIC_FIELDS) text += perfLine(field, value(field, MAX_32));
    text += perfLine('PortXmitWait', value('PortXmitWait', MAX_32));
  }
  return text;
}
