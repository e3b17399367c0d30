// `check` for a person: the findings grouped by device (the group with the worst finding first),
// worst first within a group, one line each plus an indented remedy, then a one-line summary.
// Colour only on a terminal, and never with NO_COLOR (https://no-color.org).
import { severityRank, type Finding, type Severity } from '../findings/finding.js';
import { subjectDevice } from '../findings/findings.js';
import type { Device } from '../snapshot/types.js';
import type { CheckReport } from './report.js';

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
  const identity = [device.hcaType, device.firmwareVersion && `firmware ${device.firmwareVersion}`, device.nodeDesc && `"${device.nodeDesc}"`]
    .filter((part): part is string => Boolean(part));
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

function plural(count: number, one: string, many = `${one}s`): string {
  return `${count} ${count === 1 ? one : many}`;
}

export function summaryLine(report: CheckReport): string {
  const { counts, snapshot } = report;
  const ports = snapshot.devices.reduce((sum, device) => sum + device.ports.length, 0);
  const tally = `${counts.critical} critical, ${counts.warning} warning, ${counts.info} info`;
  const scope = `${plural(snapshot.devices.length, 'InfiniBand device')}, ${plural(ports, 'port')}, ${plural(snapshot.ipoib.length, 'IPoIB interface')}`;
  const first = report.findings[0];
  const worst = report.exitCode === 1 && first ? `; first: ${printable(first.summary)}` : '';
  return `${report.status.toUpperCase()}: ${tally} on ${scope}${worst}`;
}

export function renderText(report: CheckReport, style: TextStyle): string {
  const devices = new Map(report.snapshot.devices.map((device, index) => [device.name, { device, index }]));
  const groups = new Map<string, Finding[]>();
  for (const finding of report.findings) {
    const key = subjectDevice(finding.subject) ?? '';
    groups.set(key, [...(groups.get(key) ?? []), finding]);
  }
  // Findings arrive worst first, so a group's first finding is its worst; ties keep device order,
  // host-wide findings (key '') after the devices.
  const order = [...groups.entries()].sort(([a, left], [b, right]) =>
    severityRank(left[0]!.severity) - severityRank(right[0]!.severity) ||
    (devices.get(a)?.index ?? Number.MAX_SAFE_INTEGER) - (devices.get(b)?.index ?? Number.MAX_SAFE_INTEGER));
  const lines: string[] = [];
  for (const [name, findings] of order) {
    lines.push(paint(style, 'bold', name === '' ? 'this host' : printable(deviceHeading(devices.get(name)?.device, name))));
    for (const finding of findings) lines.push(...findingLines(finding, style));
  }
  if (report.findings.length === 0) lines.push('Nothing to report: every port, IPoIB interface and collector looks right.');
  if (report.notChecked.length > 0) {
    lines.push('', 'Not checked:');
    for (const item of report.notChecked) lines.push(`  ${printable(item)}`);
  }
  lines.push('', paint(style, report.status === 'ok' ? 'bold' : report.status, summaryLine(report)));
  return lines.join('\n') + '\n';
}
