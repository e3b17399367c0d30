// `iblinkinfo --line` output: one line per port of every node the scan reached, connected or not,
// with the port's fresh PortInfo (libibnetdisc queries every port on each run):
//   0x<port guid> "<node name, right-aligned>"  <lid> <port>[<ext>] ==(<width> <speed> <state>/<phys>)==>  <remote>
// where <remote> is `0x<remote port guid> <lid> <port>[<ext>] "<name>" (<hints>)`, `[  ] "" ( )` for
// a port without a link, or `"Port not available"`. A port that is down prints no width or speed.
// The "(Could be …)" hints compare what both ends *support* and are ignored (ibsim claims 12X
// everywhere); expectations come from what the ends enable.
import { normaliseGuid } from '../../model/guid.js';
import { parseLinkWidth, speedFromMadText, type LinkSpeed, type LinkWidth } from '../../model/link-rate.js';
import { parseWhole, type LineParser } from '../output-lines.js';
import { UnparsedLines } from '../unparsed-lines.js';
import { physicalStateFromMadText, portStateFromMadText, type PhysicalStateName, type PortStateName, type StateReading } from '../../model/port-state.js';

export interface LinkinfoPort {
  /** The port's GUID (for a switch, that of its port 0, shared by all its ports). */
  portGuid: string;
  /** The node's LID (a switch) or the port's own (a CA). */
  lid: number;
  port: number;
  state: StateReading<PortStateName>;
  physicalState: StateReading<PhysicalStateName>;
  width: LinkWidth | undefined;
  speed: LinkSpeed | undefined;
  peer: { portGuid: string; port: number } | undefined;
}

export interface LinkinfoReading {
  ports: LinkinfoPort[];
  unparsed: UnparsedLines;
}

const LINE = /^(0x[0-9a-f]{1,16}) "(?:.*?)"\s+(\d{1,5})\s+(\d{1,3})\[[^\]]*\] ==\((.*)\)==>\s+(.*)$/;
// Inside ==( … ): "4X 10.0 Gbps Active/ LinkUp", "4X 10.0 Gbps (FDR10) Active/ LinkUp" or "Down/ Polling".
const LINK = /^\s*(?:(\S+)\s+(.+?)\s+)?(\S+)\/\s*(\S+)\s*$/;
const REMOTE = /^(0x[0-9a-f]{1,16})\s+\d{1,5}\s+(\d{1,3})\[[^\]]*\]\s+".*$/;
const NO_REMOTE = /^(?:\[\s*\]\s+""\s+\(\s*\)|"Port not available")\s*$/;

/** The output a line at a time, as it arrives (see OutputLines); `parseIblinkinfo` for a whole text. */
export class IblinkinfoParser implements LineParser<LinkinfoReading> {
  private readonly ports: LinkinfoPort[] = [];
  private readonly unparsed = new UnparsedLines();

  push(raw: string): void {
    const line = raw.trimEnd();
    if (line === '') return;
    const parsed = parseLine(line);
    if (parsed) this.ports.push(parsed);
    else this.unparsed.add(line);
  }

  end(): LinkinfoReading {
    return { ports: this.ports, unparsed: this.unparsed };
  }
}

export function parseIblinkinfo(text: string): LinkinfoReading {
  return parseWhole(text, new IblinkinfoParser());
}

// One reading object per state text, shared by every line and run (5 400 lines per scan at 1 900
// nodes, a handful of states); only texts that parse are kept, so odd output cannot grow the maps.
const portStates = new Map<string, StateReading<PortStateName>>();
const physicalStates = new Map<string, StateReading<PhysicalStateName>>();
function interned<Reading>(readings: Map<string, Reading>, text: string, parse: (text: string) => Reading | undefined): Reading | undefined {
  let reading = readings.get(text);
  if (reading === undefined) {
    reading = parse(text);
    if (reading !== undefined) readings.set(text, reading);
  }
  return reading;
}

function parseLine(line: string): LinkinfoPort | undefined {
  const match = LINE.exec(line);
  if (!match) return undefined;
  const link = LINK.exec(match[4]!);
  const state = link && interned(portStates, link[3]!, portStateFromMadText);
  const physicalState = link && interned(physicalStates, link[4]!, physicalStateFromMadText);
  const portGuid = normaliseGuid(match[1]!);
  if (!state || !physicalState || !portGuid) return undefined;
  let width: LinkWidth | undefined;
  let speed: LinkSpeed | undefined;
  if (link[1] !== undefined) {
    width = /^(\d{1,2})X$/.test(link[1]) ? parseLinkWidth(Number(link[1].slice(0, -1))) : undefined;
    speed = speedFromMadText(link[2]!);
    // A width or speed this exporter does not know is left out, not guessed.
  }
  const remote = REMOTE.exec(match[5]!);
  if (!remote && !NO_REMOTE.test(match[5]!)) return undefined;
  return {
    portGuid,
    lid: Number(match[2]),
    port: Number(match[3]),
    state,
    physicalState,
    width,
    speed,
    peer: remote ? { portGuid: normaliseGuid(remote[1]!)!, port: Number(remote[2]) } : undefined,
  };
}
