// Lines of the infiniband-diags fabric tools rendered from their fields, the way the tools print
// them (the printf formats of rdma-core's iblinkinfo.c, ibnetdiscover.c and ibqueryerrors.c), so
// that tests can put any name where the tool puts a node description or a node-name-map name.
// libibnetdisc hands the tools a NodeDescription cut to 64 bytes and with every non-printable
// byte made a space; a node-name-map name is printed as the map file holds it.

/** C's "%<width>s" / "%<width>d": right-aligned, never cut. */
export const right = (value: string | number, width: number): string => String(value).padStart(width);

const hex16 = (guid: bigint): string => `0x${guid.toString(16).padStart(16, '0')}`;

/** A NodeDescription as libibnetdisc hands it to the tools (clean_nodedesc: printable ASCII, 64 bytes). */
export function cleanNodeDescription(raw: string): string {
  return raw.slice(0, 64).replace(/[^\x20-\x7e]/g, ' ');
}

export interface LinkinfoLink {
  /** `4X`… (absent for a port that is down: iblinkinfo prints no width or speed then). */
  width?: string;
  /** `10.0 Gbps`, `10.0 Gbps (FDR10)`… */
  speed?: string;
  state: string;
  physicalState: string;
}

export interface LinkinfoRemote {
  portGuid: bigint;
  lid: number;
  port: number;
  ext?: number;
  name: string;
  /** get_max_msg's two messages, '' when none. */
  widthHint: string;
  speedHint: string;
}

export interface LinkinfoLineFields {
  portGuid: bigint;
  name: string;
  lid: number;
  port: number;
  ext?: number;
  link: LinkinfoLink;
  /** The port at the other end, or why there is none. */
  remote: LinkinfoRemote | 'no link' | 'not available';
}

const extText = (ext: number | undefined): string => right(ext ? String(ext) : '', 2);

/** One line of `iblinkinfo --line` (iblinkinfo.c print_port, line mode), without its newline. */
export function linkinfoLine(fields: LinkinfoLineFields): string {
  const { link, remote } = fields;
  const linkText =
    link.width === undefined
      ? `(              ${right(link.state, 6)}/${right(link.physicalState, 8)})`
      : `(${right(link.width, 3)} ${right(link.speed ?? '', 18)} ${right(link.state, 6)}/${right(link.physicalState, 8)})`;
  let remoteText: string;
  if (remote === 'no link') remoteText = '           [  ] "" ( )';
  else if (remote === 'not available') remoteText = '    "Port not available"';
  else
    remoteText = `${hex16(remote.portGuid)} ${right(remote.lid, 6)} ${right(remote.port, 4)}[${extText(remote.ext)}] "${remote.name}" (${remote.widthHint} ${remote.speedHint})`;
  return `${hex16(fields.portGuid)} "${right(fields.name, 30)}" ${right(fields.lid, 6)} ${right(fields.port, 4)}[${extText(fields.ext)}] ==${linkText}==>  ${remoteText}`;
}

export type IbnetdiscoverType = 'switch' | 'ca' | 'router';

export interface IbnetdiscoverPortFields {
  port: number;
  /** A CA's or router's own port GUID and LID (printed on its port lines only). */
  portGuid?: bigint;
  lid?: number;
  remote: { type: IbnetdiscoverType; nodeGuid: bigint; port: number; portGuid?: bigint; lid: number; name: string };
  /** dump_linkwidth_compat / dump_linkspeed(ext)_compat: `4x`, `QDR`, `??`, `???`. */
  width: string;
  speed: string;
}

export interface IbnetdiscoverNodeFields {
  type: IbnetdiscoverType;
  guid: bigint;
  portGuid: bigint;
  portCount: number;
  name: string;
  /** A switch's port 0 LID. */
  lid?: number;
  vendorId: number;
  deviceId: number;
  ports: IbnetdiscoverPortFields[];
}

const letter: Readonly<Record<IbnetdiscoverType, string>> = { switch: 'S', ca: 'H', router: 'R' };
const nodeId = (type: IbnetdiscoverType, guid: bigint): string => `"${letter[type]}-${guid.toString(16).padStart(16, '0')}"`;
const bare = (guid: bigint): string => guid.toString(16);

/** One node record of `ibnetdiscover` (out_switch / out_ca and their port lines), blank line first. */
export function ibnetdiscoverRecord(node: IbnetdiscoverNodeFields): string {
  let text = `\nvendid=0x${node.vendorId.toString(16)}\ndevid=0x${node.deviceId.toString(16)}\nsysimgguid=0x${bare(node.guid)}\n`;
  if (node.type === 'switch') {
    text += `switchguid=0x${bare(node.guid)}(${bare(node.portGuid)})\n`;
    text += `Switch\t${node.portCount} ${nodeId('switch', node.guid)}\t\t# "${node.name}" base port 0 lid ${node.lid ?? 0} lmc 0\n`;
  } else {
    text += `${node.type === 'ca' ? 'ca' : 'rt'}guid=0x${bare(node.guid)}\n`;
    text += `${node.type === 'ca' ? 'Ca' : 'Rt'}\t${node.portCount} ${nodeId(node.type, node.guid)}\t\t# "${node.name}"\n`;
  }
  for (const port of node.ports) {
    const { remote } = port;
    const remoteGuid =
      remote.type === 'switch' ? '' : node.type === 'switch' ? `(${bare(remote.portGuid ?? 0n)}) ` : ` (${bare(remote.portGuid ?? 0n)}) `;
    if (node.type === 'switch') {
      text += `[${port.port}]\t${nodeId(remote.type, remote.nodeGuid)}[${remote.port}]${remoteGuid}\t\t# "${remote.name}" lid ${remote.lid} ${port.width}${port.speed}\n`;
    } else {
      text += `[${port.port}](${bare(port.portGuid ?? 0n)}) \t${nodeId(remote.type, remote.nodeGuid)}[${remote.port}]${remoteGuid}\t\t# lid ${port.lid ?? 0} lmc 0 "${remote.name}" lid ${remote.lid} ${port.width}${port.speed}\n`;
    }
  }
  return text;
}

/** `ibqueryerrors` node header (print_results / print_data_cnts): a CA's errors header has no GUID. */
export function sweepHeader(mode: 'errors' | 'counters', guid: bigint | undefined, name: string): string {
  const lead = mode === 'errors' ? 'Errors for' : 'Data Counters for';
  return guid === undefined ? `${lead} "${name}"` : `${lead} 0x${bare(guid)} "${name}"`;
}

/** `smpquery nodedesc` (smpquery.c node_desc): the name after dots that pad it to 32, or after one dot. */
export function smpqueryNodeDescription(name: string): string {
  return `Node Description:${'.'.repeat(name.length < 32 ? 32 - name.length : 1)}${name}\n`;
}
