// `iblinkinfo --line` output: one line per port of every node the scan reached, connected or not,
// with the port's fresh PortInfo (libibnetdisc queries every port on each run):
//   0x<port guid> "<node name, right-aligned>"  <lid> <port>[<ext>] ==(<width> <speed> <state>/<phys>)==>  <remote>
// where <remote> is `0x<remote port guid> <lid> <port>[<ext>] "<name>" (<hints>)`, `[  ] "" ( )` for
// a port without a link, or `"Port not available"`. A port that is down prints no width or speed.
// The "(Could be …)" hints compare what both ends *support* and are ignored (ibsim claims 12X
// everywhere); expectations come from what the ends enable.
import { normaliseGuid } from '../../model/guid.js';
import { parseLinkWidth, speedFromMadText, type LinkSpeed, type LinkWidth } from '../../model/link-rate.js';
import { detached, parseWhole, type LineParser } from '../output-lines.js';
import { UnparsedLines } from '../unparsed-lines.js';
import {
  physicalStateFromMadText,
  portStateFromMadText,
  type PhysicalStateName,
  type PortStateName,
  type StateReading,
} from '../../model/port-state.js';

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

// How iblinkinfo.c prints a `--line` line (rdma-core), fixed parts in their printf widths:
//   0x%016x "%30s" %6d %4d[%2s] ==(%3s %18s %6s/%8s)==>  0x%016x %6d %4d[%2s] "%s" (%s %s)
// The two "%s" in quotes are node descriptions (or node-name-map names): any printable ASCII,
// quotes, brackets, parentheses and arrows included, up to 64 characters (libibnetdisc cuts and
// cleans them). A description must never decide how a line is split, so the line is read from its
// fixed parts: the GUID prefix from the left, then every place where the fixed middle (from the
// closing quote of the node name to the opening quote of the remote name) fits with its exact
// widths, and the fixed tail from the right. A forged middle needs at least 73 characters of a name
// (borrowing the line's own tail), more than a description holds, so a description alone never fits
// a second place; a line that still fits two places with different readings (node-name-map names)
// is not understood, never guessed.
const PREFIX = /^0x([0-9a-f]{16}) "/;
const MIDDLE = /" ( *\d{1,5}) ( *\d{1,3})\[( *\d{0,3})\] ==\(([^=]*?)\)==>  /y;
// After the middle: a remote port, a down port without one, or a port libibnetdisc could not follow.
const REMOTE = /^0x([0-9a-f]{16}) ( *\d{1,5}) ( *\d{1,3})\[( *\d{0,3})\] "/;
// The hints (get_max_msg) after the remote name: "(Could be 12X Could be 53.125 Gbps)", "( )".
const REMOTE_TAIL = /" \((?:Could be [^ ()"]+)? (?:Could be [^"]+)?\)$/;
const NO_REMOTE = /^(?: {11}\[ {2}\] "" \( \)| {4}"Port not available")$/;
// Inside ==( … ): "%3s %18s %6s/%8s" for a port that is up, "              %6s/%8s" for one that is down.
const LINK_UP = /^( *(?:\d{1,2}X|undefined \(\d{1,3}\))) ( *\S.*?) ( *\S+)\/( *\S+)$/;
const LINK_DOWN = /^ {14}( *\S+)\/( *\S+)$/;
// A name printed "%30s" is at least 30 characters between its quotes.
const NAME_WIDTH = 30;

/**
 * The output a line at a time, as it arrives (see OutputLines); `parseIblinkinfo` for a whole text.
 * With `onPort`, each port is handed over as it is read and not kept (`ports` stays empty): a scan
 * of 122 880 ports held as objects until its end was 16 MiB.
 */
export class IblinkinfoParser implements LineParser<LinkinfoReading> {
  private readonly ports: LinkinfoPort[] = [];
  private readonly unparsed = new UnparsedLines();

  constructor(private readonly onPort?: (port: LinkinfoPort) => void) {}

  push(raw: string): void {
    const line = raw.trimEnd();
    if (line === '') return;
    const parsed = parseLine(line);
    if (!parsed) this.unparsed.add(line);
    else if (this.onPort) this.onPort(parsed);
    else this.ports.push(parsed);
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
function interned<Reading>(
  readings: Map<string, Reading>,
  text: string,
  parse: (text: string) => Reading | undefined,
): Reading | undefined {
  let reading = readings.get(text);
  if (reading === undefined) {
    reading = parse(text.trimStart());
    // A key of its own: the text is a slice of its output's chunk, which the map would keep.
    if (reading !== undefined) readings.set(detached(text), reading);
  }
  return reading;
}

/**
 * `text` is a value right-aligned in `width` (C's "%<width>s"): the value, else undefined. Every
 * text handed here was captured as spaces then a non-space (the patterns say so), so the value
 * starts after the leading spaces, and it is aligned when the text is exactly `width` long, or
 * longer without any padding. Checked in place: a scan calls it seven times a line.
 */
function aligned(text: string, width: number): string | undefined {
  return isAligned(text, width) ? text.trimStart() : undefined;
}

/** Whether `text` is a non-empty value right-aligned in `width`, as `aligned` reads it. */
function isAligned(text: string, width: number): boolean {
  let spaces = 0;
  while (spaces < text.length && text.charCodeAt(spaces) === 32) spaces++;
  return spaces < text.length && (text.length === width || (spaces === 0 && text.length > width));
}

function parseLine(line: string): LinkinfoPort | undefined {
  const prefix = PREFIX.exec(line);
  // The GUID as the line starts with it (PREFIX: `0x` and 16 lower-case hex digits).
  const portGuid = prefix && normaliseGuid(line.slice(0, 18));
  if (!portGuid) return undefined;
  let found: LinkinfoPort | undefined;
  for (let quote = line.indexOf('"', prefix![0].length + NAME_WIDTH); quote >= 0; quote = line.indexOf('"', quote + 1)) {
    const reading = readingAt(line, quote, portGuid);
    if (!reading) continue;
    // Two places the middle fits that read differently: which one the tool printed is unknown.
    if (found && !sameReading(found, reading)) return undefined;
    found = reading;
  }
  return found;
}

/** The line read with its fixed middle starting at `quote` (the node name's closing quote), if it fits there. */
function readingAt(line: string, quote: number, portGuid: string): LinkinfoPort | undefined {
  MIDDLE.lastIndex = quote;
  const middle = MIDDLE.exec(line);
  if (!middle) return undefined;
  if (!isAligned(middle[1]!, 6) || !isAligned(middle[2]!, 4) || !extPort(middle[3]!)) return undefined;
  const link = parseLink(middle[4]!);
  if (!link) return undefined;
  const rest = line.slice(MIDDLE.lastIndex);
  let peer: LinkinfoPort['peer'];
  const remote = REMOTE.exec(rest);
  if (remote) {
    if (!isAligned(remote[2]!, 6) || !isAligned(remote[3]!, 4) || !extPort(remote[4]!)) return undefined;
    // The remote name runs from the quote that ends REMOTE to the quote the tail starts with.
    const tail = REMOTE_TAIL.exec(rest);
    if (!tail || tail.index < remote[0].length) return undefined;
    // Number() reads past the padding (the capture is aligned: spaces, then digits).
    peer = { portGuid: normaliseGuid(rest.slice(0, 18))!, port: Number(remote[3]!) };
  } else if (!NO_REMOTE.test(rest)) {
    return undefined;
  }
  return { portGuid, lid: Number(middle[1]!), port: Number(middle[2]!), ...link, peer };
}

/** `[%2s]`: an external port number, or nothing. */
function extPort(text: string): boolean {
  return text === '  ' || isAligned(text, 2);
}

function parseLink(text: string): Pick<LinkinfoPort, 'state' | 'physicalState' | 'width' | 'speed'> | undefined {
  const up = LINK_UP.exec(text);
  const down = up ? undefined : LINK_DOWN.exec(text);
  const fields = up
    ? { width: up[1]!, speed: up[2]!, state: up[3]!, physical: up[4]! }
    : down
      ? { state: down[1]!, physical: down[2]! }
      : undefined;
  if (!fields) return undefined;
  // Looked up as printed, padding and all (one printed form per state: the width is fixed).
  const state = isAligned(fields.state, 6) ? interned(portStates, fields.state, portStateFromMadText) : undefined;
  const physicalState = isAligned(fields.physical, 8) ? interned(physicalStates, fields.physical, physicalStateFromMadText) : undefined;
  if (!state || !physicalState) return undefined;
  if (fields.width === undefined) return { state, physicalState, width: undefined, speed: undefined };
  const widthText = aligned(fields.width, 3);
  const speedText = aligned(fields.speed!, 18);
  if (widthText === undefined || speedText === undefined) return undefined;
  // A width or speed this exporter does not know is left out, not guessed.
  const width = /^(\d{1,2})X$/.test(widthText) ? parseLinkWidth(Number(widthText.slice(0, -1))) : undefined;
  return { state, physicalState, width, speed: speedFromMadText(speedText) };
}

function sameReading(a: LinkinfoPort, b: LinkinfoPort): boolean {
  return (
    a.lid === b.lid &&
    a.port === b.port &&
    a.state === b.state &&
    a.physicalState === b.physicalState &&
    a.width === b.width &&
    a.speed === b.speed &&
    a.peer?.portGuid === b.peer?.portGuid &&
    a.peer?.port === b.peer?.port
  );
}
