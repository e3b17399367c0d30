// ibsim's topology file (net file) for a generated fabric, so that the real tools can be run on the
// same fabric the generator describes (ibsim takes at most 2 048 nodes). Width and speed masks are
// set first (ibsim's defaults are 4X-only and SDR-only); a degraded link restricts both ends (ibsim
// trains a link to the best both ends enable); a pulled cable is not in the file, and a host cut off
// by it neither; every record ends with a blank line; the counters are preset with
// `do PerformanceSet` lines (PortCounters saturate at their widths, PortCountersExtended is 64-bit).
import { BASIC_TRAFFIC_FIELDS, ERROR_FIELDS, MAX_32, saturated, TRAFFIC_FIELDS } from './pma.js';
import { linkUp, portCounters, type GeneratedFabric, type GeneratedNode, type GeneratedPort } from './topology.js';

const hexGuid = (value: bigint): string => `0x${value.toString(16).padStart(16, '0')}`;
const hex4 = (value: number): string => `0x${value.toString(16).padStart(4, '0')}`;

/** ibsim's names of the PortCountersExtended multicast counters differ in case. */
const IBSIM_EXTENDED_NAMES: Readonly<Record<string, string>> = {
  PortMulticastXmitPkts: 'PortMultiCastXmitPkts',
  PortMulticastRcvPkts: 'PortMultiCastRcvPkts',
};

export const IBSIM_MAX_NODES = 2048;

function portOptions(fabric: GeneratedFabric, port: GeneratedPort): string {
  const { profile } = fabric;
  const options: string[] = [];
  if (port.widthEnabled !== profile.widthEnabled) options.push(`w=${port.widthEnabled}`);
  if (port.speedEnabled !== profile.speedEnabled) options.push(`s=${port.speedEnabled}`);
  if (port.extEnabled !== profile.extEnabled) options.push(`e=${port.extEnabled}`);
  return options.length === 0 ? '' : ` ${options.join(' ')}`;
}

function record(fabric: GeneratedFabric, node: GeneratedNode): string[] {
  const { profile } = fabric;
  const isSwitch = node.kind === 'switch';
  const lines = [
    `vendid=${hex4(isSwitch ? profile.switchVendorId : profile.caVendorId)}`,
    `devid=${hex4(isSwitch ? profile.switchDeviceId : profile.caDeviceId)}`,
    `sysimgguid=${hexGuid(node.guid)}`,
    isSwitch ? `switchguid=${hexGuid(node.guid)}` : `caguid=${hexGuid(node.guid)}`,
    `${isSwitch ? 'Switch' : 'Hca'} ${node.portCount} "${node.id}" # "${node.description}"`,
  ];
  for (const port of node.ports) {
    if (port && linkUp(port)) lines.push(`[${port.number}] "${port.cable!.node.id}"[${port.cable!.number}]${portOptions(fabric, port)}`);
  }
  lines.push('');
  return lines;
}

/** PerformanceSet lines presetting every counter of `port` that is not 0. */
function presets(port: GeneratedPort): string[] {
  const values = portCounters(port);
  const target = `"${port.node.id}"[${port.number}]`;
  const lines: string[] = [];
  for (const field of ERROR_FIELDS) {
    const value = saturated(values[field.name], field.max);
    if (value > 0) lines.push(`do PerformanceSet ${target} PortCounters.${field.name}=${value}`);
  }
  for (const field of BASIC_TRAFFIC_FIELDS) {
    const value = saturated(values[field], MAX_32);
    if (value > 0) lines.push(`do PerformanceSet ${target} PortCounters.${field}=${value}`);
  }
  for (const field of TRAFFIC_FIELDS) {
    const value = values[field];
    if (value > 0) lines.push(`do PerformanceSet ${target} PortCountersExtended.${IBSIM_EXTENDED_NAMES[field] ?? field}=${value}`);
  }
  return lines;
}

export interface NetOptions {
  /** Preset the PMA counters to the generated ones (default); without, ibsim starts them at 0. */
  counters?: boolean;
}

/** The net file. Throws past ibsim's 2 048 nodes. */
export function ibsimNet(fabric: GeneratedFabric, options: NetOptions = {}): string {
  const nodes = fabric.nodes.filter((node) => node.reachable);
  if (nodes.length > IBSIM_MAX_NODES) throw new Error(`ibsim simulates at most ${IBSIM_MAX_NODES} nodes, not ${nodes.length}`);
  const { profile } = fabric;
  const lines = [
    `# generated fabric: ${fabric.nodes.filter((n) => n.kind === 'switch').length} switches, ${nodes.filter((n) => n.kind === 'ca').length} hosts (${profile.name})`,
    `width=${profile.widthEnabled}`,
    `speed=${profile.speedEnabled}`,
    ...(profile.extEnabled === 0 ? [] : [`extspeed=${profile.extEnabled}`]),
    '',
  ];
  for (const node of nodes) lines.push(...record(fabric, node));
  if (options.counters ?? true) for (const node of nodes) for (const port of node.ports) if (port?.cable) lines.push(...presets(port));
  lines.push('');
  return lines.join('\n');
}
