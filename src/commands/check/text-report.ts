// `check` for a person: the findings grouped by device (the group with the worst finding first),
// then, in fabric mode, the subnet's and each switch's (worst first), worst first within a group,
// one line each plus an indented remedy, then a one-line summary. Colour only on a terminal, and
// never with NO_COLOR (https://no-color.org).
import { badLinksOf, REASON_WORDS } from '../../collectors/fabric/verdict/index.js';
import { fabricNodeName } from '../../model/fabric-names.js';
import type { FabricOverview } from '../../findings/fabric-overview.js';
import { plural, severityRank, type Finding, type Severity } from '../../model/finding.js';
import { groupOf, type FindingGroup } from '../../findings/findings.js';
import type { FabricSnapshot } from '../../model/fabric.js';
import type { Device } from '../../model/host.js';
import type { CheckReport } from './report.js';
import { compareNatural } from '../../model/natural-order.js';

export interface TextStyle {
  colour: boolean;
}

/** Colour when writing to a terminal, unless NO_COLOR is set to anything but the empty string. */
export function textStyleFor(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): TextStyle {
  return { colour: stream.isTTY === true && (env.NO_COLOR === undefined || env.NO_COLOR === '') };
}

const SGR: Record<Severity | 'bold' | 'dim', string> = { critical: '1;31', warning: '33', info: '36', bold: '1', dim: '2' };

function paint(style: TextStyle, code: keyof typeof SGR, text: string): string {
  return style.colour ? `\u001b[${SGR[code]}m${text}\u001b[0m` : text;
}

/**
 * Node descriptions come from whoever set them (and the fabric): control characters would drive
 * the terminal. They are shown as `?`.
 */
export function printable(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

function deviceHeading(device: Device | undefined, name: string): string {
  if (!device) return name;
  const identity = [
    device.hcaType,
    device.firmwareVersion && `firmware ${device.firmwareVersion}`,
    device.nodeDesc && `"${device.nodeDesc}"`,
  ].filter((part): part is string => Boolean(part));
  return identity.length === 0 ? name : `${name}  ${identity.join(', ')}`;
}

const LABEL_WIDTH = 10;

function findingLines(finding: Finding, style: TextStyle): string[] {
  const label = finding.severity.toUpperCase().padEnd(LABEL_WIDTH);
  return [
    `  ${paint(style, finding.severity, label)}${printable(finding.summary)}`,
    `  ${' '.repeat(LABEL_WIDTH)}${paint(style, 'dim', '→')} ${printable(finding.remedy)} ${paint(style, 'dim', `[runbook: ${finding.runbook}]`)}`,
  ];
}

function fabricScope(fabric: FabricOverview): string {
  if (fabric.discoveredAt === undefined) return 'a fabric not discovered';
  const { switch: switches, ca, router } = fabric.nodes;
  const nodes = [plural(switches, 'switch', 'switches'), plural(ca, 'CA'), ...(router > 0 ? [plural(router, 'router')] : [])];
  return `a fabric of ${nodes.join(', ')} and ${plural(fabric.links, 'link')}`;
}

export function summaryLine(report: CheckReport): string {
  const { counts, snapshot } = report;
  const ports = snapshot.devices.reduce((sum, device) => sum + device.ports.length, 0);
  const tally = `${counts.critical} critical, ${counts.warning} warning, ${counts.info} info`;
  const host = `${plural(snapshot.devices.length, 'InfiniBand device')}, ${plural(ports, 'port')}, ${plural(report.ipoibInterfaces, 'IPoIB interface')}`;
  const scope = report.fabric ? `${host} and ${fabricScope(report.fabric)}` : host;
  const first = report.findings[0];
  const worst = report.exitCode === 1 && first ? `; first: ${printable(first.summary)}` : '';
  return `${report.status.toUpperCase()}: ${tally} on ${scope}${worst}`;
}

function groupKey(group: FindingGroup): string {
  switch (group.kind) {
    case 'device':
      return `device ${group.device}`;
    case 'fabric-node':
      return `node ${group.guid}`;
    default:
      return group.kind;
  }
}

function fabricNodeHeading(fabric: FabricSnapshot | undefined, guid: string): string {
  const node = fabric?.topology?.nodes.get(guid);
  if (!fabric || !node) return guid;
  const { name } = fabricNodeName(fabric, guid);
  const described = node.description.trim() !== '' && node.description.trim() !== name ? [`"${node.description.trim()}"`] : [];
  return `${name}  ${[`${node.type} ${guid}`, ...(node.lid === undefined ? [] : [`LID ${node.lid}`]), ...described].join(', ')}`;
}

function heading(report: CheckReport, group: FindingGroup, devices: ReadonlyMap<string, Device>): string {
  switch (group.kind) {
    case 'device':
      return deviceHeading(devices.get(group.device), group.device);
    case 'host':
      return 'this host';
    case 'subnet':
      return report.fabric ? `the fabric  ${fabricScope(report.fabric).replace(/^a fabric (of )?/, '')}` : 'the fabric';
    case 'fabric-node':
      return fabricNodeHeading(report.fabricSnapshot, group.guid);
  }
}

/**
 * The host's groups first (devices, then the host as a whole), each part ordered by its worst
 * finding; then the fabric: the subnet, then its nodes, worst first, then by name.
 */
function orderedGroups(report: CheckReport, deviceIndex: ReadonlyMap<string, number>): { group: FindingGroup; findings: Finding[] }[] {
  const groups = new Map<string, { group: FindingGroup; findings: Finding[] }>();
  for (const finding of report.findings) {
    const group = groupOf(finding.subject);
    const key = groupKey(group);
    const entry = groups.get(key) ?? { group, findings: [] };
    entry.findings.push(finding);
    groups.set(key, entry);
  }
  const part = (group: FindingGroup): number => (group.kind === 'device' || group.kind === 'host' ? 0 : group.kind === 'subnet' ? 1 : 2);
  const place = (group: FindingGroup): number =>
    group.kind === 'device' ? (deviceIndex.get(group.device) ?? Number.MAX_SAFE_INTEGER) : Number.MAX_SAFE_INTEGER;
  const name = (entry: { findings: Finding[] }): string => {
    const subject = entry.findings[0]!.subject;
    return subject.kind === 'fabric-port' ? subject.node.name : '';
  };
  // Findings arrive worst first, so a group's first finding is its worst.
  return [...groups.values()].sort(
    (a, b) =>
      part(a.group) - part(b.group) ||
      severityRank(a.findings[0]!.severity) - severityRank(b.findings[0]!.severity) ||
      place(a.group) - place(b.group) ||
      compareNatural(name(a), name(b)),
  );
}

/** Fabric mode's list to drain and replace (GET /fabric/bad-links serves the same). */
function badLinkLines(report: CheckReport): string[] {
  const list = badLinksOf(report.snapshot);
  if (!list) return [];
  if (list.links.length === 0) return ['', 'Links to drain and replace: none.'];
  const over = list.overCap > 0 ? `; ${list.overCap} more over the cap of ${list.cap}` : '';
  return [
    '',
    `Links to drain and replace (${list.links.length}${over}):`,
    ...list.links.map((link) =>
      printable(
        `  ${link.nodeName} port ${link.port} – ${link.peerName} port ${link.peerPort}: ${link.reasons.map((reason) => REASON_WORDS[reason]).join('; ')}; leaves the list ${new Date(link.leavesAt).toISOString()} if clean until then`,
      ),
    ),
  ];
}

export function renderText(report: CheckReport, style: TextStyle): string {
  const devices = new Map(report.snapshot.devices.map((device) => [device.name, device]));
  const deviceIndex = new Map(report.snapshot.devices.map((device, index) => [device.name, index]));
  const lines: string[] = [];
  for (const { group, findings } of orderedGroups(report, deviceIndex)) {
    lines.push(paint(style, 'bold', printable(heading(report, group, devices))));
    for (const finding of findings) lines.push(...findingLines(finding, style));
  }
  if (report.findings.length === 0) {
    lines.push(`Nothing to report: every port, IPoIB interface${report.fabric ? ', the fabric' : ''} and collector looks right.`);
  }
  lines.push(...badLinkLines(report));
  if (report.notChecked.length > 0) {
    lines.push('', 'Not checked:');
    for (const item of report.notChecked) lines.push(`  ${printable(item)}`);
  }
  lines.push('', paint(style, report.status === 'ok' ? 'bold' : report.status, summaryLine(report)));
  return lines.join('\n') + '\n';
}
