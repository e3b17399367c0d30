// `ibnetdiscover` topology output (rdma-core infiniband-diags, its default format): one record per
// node — `vendid=`/`devid=`/`sysimgguid=` lines, a `switchguid=`/`caguid=`/`rtguid=` line, the
// node line, then one line per connected port — separated by blank lines. Unconnected ports are
// not listed (the node line gives the port count). Every line is matched on its own: a line this
// parser does not understand is returned in `unparsed` and skipped, never fatal.
import { normaliseGuid } from '../../model/guid.js';
import { parseLinkSpeed, parseLinkWidth, type LinkSpeed, type LinkWidth } from '../../model/link-rate.js';
import type { FabricNodeType } from '../../model/fabric.js';
import { detached, parseWhole, type LineParser } from '../output-lines.js';
import { UnparsedLines } from '../unparsed-lines.js';

export interface IbnetdiscoverNode {
  guid: string;
  type: FabricNodeType;
  description: string;
  portCount: number;
  /** A switch's port 0 GUID (from `switchguid=0x…(portguid)`). */
  portGuid: string | undefined;
  /** A switch's LID from its node line; for CAs and routers see the port lines. */
  lid: number | undefined;
  vendorId: number | undefined;
  deviceId: number | undefined;
}

export interface IbnetdiscoverPort {
  nodeGuid: string;
  port: number;
  /** Printed for CA and router ports only. */
  portGuid: string | undefined;
  /** The port's own LID (CA and router ports). */
  lid: number | undefined;
  peer: { nodeGuid: string; type: FabricNodeType; port: number; portGuid: string | undefined };
  /** 1-based line of the output (a saved discovery read as a cabling plan names it in its errors). */
  line: number;
  /** Width and speed the link trained at, from the line's `4xQDR`; undefined when it names none this exporter knows. */
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
}

export interface IbnetdiscoverTopology {
  nodes: IbnetdiscoverNode[];
  /** Connected ports, as each node's record lists them (so every cable appears from both ends). */
  ports: IbnetdiscoverPort[];
  /** Lines that matched nothing, for the read-error count. */
  unparsed: UnparsedLines;
}

const TYPE_BY_PREFIX: Readonly<Record<string, FabricNodeType>> = { S: 'switch', H: 'ca', R: 'router' };
const TYPE_BY_KEYWORD: Readonly<Record<string, FabricNodeType>> = { Switch: 'switch', Ca: 'ca', Rt: 'router' };

// Record ids are the type letter and the node GUID: "S-0002c90200410000".
const NODE_ID = String.raw`"([SHR])-([0-9a-f]{16})"`;
const ATTRIBUTE = /^(vendid|devid|sysimgguid)=(0x[0-9a-f]{1,16})\s*$/i;
const GUID_LINE = /^(switch|ca|rt)guid=(0x[0-9a-f]{1,16})(?:\(([0-9a-f]{1,16})\))?(?:\s+#.*)?$/i;
const SWITCH_LINE = new RegExp(
  String.raw`^Switch\s+(\d{1,3})\s+${NODE_ID}\s+#\s+"(.*)"\s+(?:base|enhanced) port 0 lid (\d{1,5}) lmc \d{1,2}\s*$`,
);
const CA_LINE = new RegExp(String.raw`^(Ca|Rt)\s+(\d{1,3})\s+${NODE_ID}\s+#\s+"(.*)"(?:\s+\(scp\))?\s*$`);
// `[4]	"S-…"[1]		# "desc" lid 2 1xQDR` (switch) or `[1](portguid) 	"S-…"[1]		# lid 1 lmc 0 "desc" lid 4 4xQDR` (CA).
// The description (the remote node's, or its node-name-map name) may hold quotes, `#`, `lid`:
// the fixed head is read from the left up to its opening quote, the fixed tail — `" lid <L> <rate>`,
// the width (`4x`, `??` unknown) and speed (`QDR`, `???`) ibnetdiscover.c prints — from the right.
const PORT_LINE = new RegExp(
  String.raw`^\[(\d{1,3})\](?:\[ext \d+\])?(?:\(([0-9a-f]{1,16})\))?\s+${NODE_ID}\[(\d{1,3})\](?:\[ext \d+\])?\s*(?:\(([0-9a-f]{1,16})\))?\s+#\s+(?:lid (\d{1,5}) lmc \d{1,2}\s+)?"(.*)" lid \d{1,5} (\d{1,2}x|\?\?)([A-Z0-9]{3,5}|\?\?\?)$`,
);
const IGNORED = /^(?:#.*|\s*|Chassis \d+.*)$/;

function hexNumber(text: string | undefined): number | undefined {
  return text === undefined ? undefined : Number.parseInt(text, 16);
}

function guid(hex: string | undefined): string | undefined {
  return hex === undefined ? undefined : normaliseGuid(hex.startsWith('0x') ? hex : `0x${hex}`);
}

/** The output a line at a time, as it arrives (see OutputLines); `parseIbnetdiscover` for a whole text. */
export class IbnetdiscoverParser implements LineParser<IbnetdiscoverTopology> {
  private readonly nodes: IbnetdiscoverNode[] = [];
  private readonly ports: IbnetdiscoverPort[] = [];
  private readonly unparsed = new UnparsedLines();
  private attributes = new Map<string, string>();
  private pendingPortGuid: string | undefined;
  private current: IbnetdiscoverNode | undefined;
  private lines = 0;

  /** Lines not understood so far (a saved output read as a plan names the first ones by line number). */
  get unparsedCount(): number {
    return this.unparsed.count;
  }

  push(raw: string): void {
    const line = raw.trimEnd();
    const number = ++this.lines;
    let match: RegExpExecArray | null;
    if (line === '') {
      // Records end with a blank line.
      this.current = undefined;
      this.attributes = new Map();
      this.pendingPortGuid = undefined;
    } else if ((match = ATTRIBUTE.exec(line))) {
      this.attributes.set(match[1]!.toLowerCase(), match[2]!);
    } else if ((match = GUID_LINE.exec(line))) {
      this.current = undefined;
      this.pendingPortGuid = guid(match[3]);
    } else if ((match = SWITCH_LINE.exec(line))) {
      this.current = this.node('switch', match[3]!, Number(match[1]), match[4]!, Number(match[5]));
    } else if ((match = CA_LINE.exec(line))) {
      this.current = this.node(TYPE_BY_KEYWORD[match[1]!]!, match[4]!, Number(match[2]), match[5]!, undefined);
    } else if ((match = PORT_LINE.exec(line)) && this.current) {
      this.ports.push({
        nodeGuid: this.current.guid,
        port: Number(match[1]),
        portGuid: guid(match[2]),
        lid: match[7] === undefined ? undefined : Number(match[7]),
        peer: { nodeGuid: guid(match[4])!, type: TYPE_BY_PREFIX[match[3]!]!, port: Number(match[5]), portGuid: guid(match[6]) },
        line: number,
        width: match[9] === '??' ? undefined : parseLinkWidth(Number(match[9]!.slice(0, -1))),
        speed: parseLinkSpeed(match[10]!),
      });
    } else if (!IGNORED.test(line)) {
      this.unparsed.add(line);
    }
  }

  end(): IbnetdiscoverTopology {
    return { nodes: this.nodes, ports: this.ports, unparsed: this.unparsed };
  }

  /** The node line of a record: the node takes the record's attributes. */
  private node(type: FabricNodeType, hexGuid: string, portCount: number, description: string, lid: number | undefined): IbnetdiscoverNode {
    const found: IbnetdiscoverNode = {
      guid: guid(hexGuid)!,
      type,
      description: detached(description),
      portCount,
      portGuid: type === 'switch' ? this.pendingPortGuid : undefined,
      lid,
      vendorId: hexNumber(this.attributes.get('vendid')),
      deviceId: hexNumber(this.attributes.get('devid')),
    };
    this.nodes.push(found);
    return found;
  }
}

export function parseIbnetdiscover(text: string): IbnetdiscoverTopology {
  return parseWhole(text, new IbnetdiscoverParser());
}

// libibnetdisc reaching a GUID it already holds through another path (two devices share it: one of
// them is hidden from discovery) says so on stderr:
//   ./libibnetdisc/ibnetdisc.c:667; Duplicate Port: Port with guid 0x0002c90300a10011 already exists in ports DB
const DUPLICATE = /Duplicate (?:Node|Port): (?:Node|Port) with guid (0x[0-9a-f]{1,16}) already exists/gi;

/** GUIDs ibnetdiscover reported as duplicates on stderr. */
export function reportedDuplicateGuids(stderr: string): string[] {
  return [...new Set([...stderr.matchAll(DUPLICATE)].map((match) => normaliseGuid(match[1]!)!))];
}
