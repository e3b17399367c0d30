// `smpquery` output (SMP attributes dumped by libibmad): PortInfo, NodeInfo and NodeDescription.
import { normaliseGuid } from '../../model/guid.js';
import { parseLinkWidth, speedFromMadText, type LinkSpeed, type LinkWidth } from '../../model/link-rate.js';
import { numberField, parseMadDump } from './mad-dump.js';

export { bestCommonEnabled, type LinkCapability } from '../../model/link-rate.js';

export interface PortInfo {
  lid: number | undefined;
  smLid: number | undefined;
  capabilityMask: number | undefined;
  /** `Active`, `Initialize`, `Down`… as smpquery prints LinkState. */
  linkState: string | undefined;
  physicalState: string | undefined;
  widthSupported: LinkWidth[];
  widthEnabled: LinkWidth[];
  widthActive: LinkWidth | undefined;
  /** Legacy and extended speeds together (an end without extended speeds lists only SDR–QDR). */
  speedSupported: LinkSpeed[];
  speedEnabled: LinkSpeed[];
  speedActive: LinkSpeed | undefined;
}

/** "1X or 4X or 8X or 12X or 2X (IBA extension)" → [1, 4, 8, 12, 2]. */
function widthList(text: string | undefined): LinkWidth[] {
  if (text === undefined) return [];
  const widths: LinkWidth[] = [];
  for (const item of text.split(' or ')) {
    const match = /^\s*(\d+)X\b/.exec(item);
    const width = match ? parseLinkWidth(Number(match[1])) : undefined;
    if (width !== undefined) widths.push(width);
  }
  return widths;
}

/** "2.5 Gbps or 5.0 Gbps or 10.0 Gbps" → [SDR, DDR, QDR]; `0`, `No Extended Speed`, `Extended link speeds disabled` → []. */
function speedList(text: string | undefined): LinkSpeed[] {
  if (text === undefined) return [];
  return text
    .split(' or ')
    .map((item) => speedFromMadText(item.replace(/\s*\(.*\)\s*$/, '')))
    .filter((speed): speed is LinkSpeed => speed !== undefined);
}

export function parsePortInfo(stdout: string): PortInfo | undefined {
  if (!/^# Port info:/m.test(stdout)) return undefined;
  const fields = parseMadDump(stdout);
  const lists = (suffix: 'Supported' | 'Enabled'): LinkSpeed[] => [
    ...speedList(fields.get(`LinkSpeed${suffix}`)),
    ...speedList(fields.get(`LinkSpeedExt${suffix}`)),
    ...speedList(fields.get(`LinkSpeedExt2${suffix}`)),
  ];
  // An active extended speed wins over the legacy LinkSpeedActive, which keeps a stale value.
  const speedActive =
    speedList(fields.get('LinkSpeedExt2Active'))[0] ??
    speedList(fields.get('LinkSpeedExtActive'))[0] ??
    speedList(fields.get('LinkSpeedActive'))[0];
  return {
    lid: numberField(fields, 'Lid'),
    smLid: numberField(fields, 'SMLid'),
    capabilityMask: numberField(fields, 'CapMask'),
    linkState: fields.get('LinkState'),
    physicalState: fields.get('PhysLinkState'),
    widthSupported: widthList(fields.get('LinkWidthSupported')),
    widthEnabled: widthList(fields.get('LinkWidthEnabled')),
    widthActive: widthList(fields.get('LinkWidthActive'))[0],
    speedSupported: lists('Supported'),
    speedEnabled: lists('Enabled'),
    speedActive,
  };
}

export type PeerNodeType = 'CA' | 'Switch' | 'Router';

export interface NodeInfo {
  nodeType: PeerNodeType | undefined;
  nodeGuid: string | undefined;
  portGuid: string | undefined;
  /** The port the query entered the node through: for a DR path `0,<port>`, the peer's port. */
  localPort: number | undefined;
  numberOfPorts: number | undefined;
}

const NODE_TYPES: ReadonlyMap<string, PeerNodeType> = new Map([
  ['Channel Adapter', 'CA'],
  ['Switch', 'Switch'],
  ['Router', 'Router'],
]);

export function parseNodeInfo(stdout: string): NodeInfo | undefined {
  if (!/^# Node info:/m.test(stdout)) return undefined;
  const fields = parseMadDump(stdout);
  const guid = (name: string): string | undefined => {
    const text = fields.get(name);
    return text === undefined ? undefined : normaliseGuid(text);
  };
  return {
    nodeType: NODE_TYPES.get(fields.get('NodeType') ?? ''),
    nodeGuid: guid('Guid'),
    portGuid: guid('PortGuid'),
    localPort: numberField(fields, 'LocalPort'),
    numberOfPorts: numberField(fields, 'NumPorts'),
  };
}

const NODE_DESCRIPTION = 'Node Description:';

/**
 * `Node Description:......sw1 IS5030` → `sw1 IS5030`. smpquery.c pads the name with dots to 32
 * characters, or puts one dot before a name of 32 or more: the name is read by that rule, not by
 * stripping dots or spaces, so a description made of them is kept as it was set. Only the leading
 * dots of a name shorter than 32 cannot be told from the padding (the tool prints both alike).
 */
export function parseNodeDescription(stdout: string): string | undefined {
  const line = stdout.split('\n').find((text) => text.startsWith(NODE_DESCRIPTION));
  if (line === undefined) return undefined;
  const value = line.slice(NODE_DESCRIPTION.length).replace(/\r$/, '');
  if (value.length > 32) return value.startsWith('.') ? value.slice(1) : undefined;
  return value.length === 32 ? value.replace(/^\.+/, '') : undefined;
}
