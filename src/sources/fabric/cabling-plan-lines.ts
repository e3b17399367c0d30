// The cabling plan format, one cable a line, `<node> <port> <peer node> <peer port> [width] [speed]`:
//     # rail 0, leaf 1
//     rail0-leaf1   1  "gpu01 mlx5_0"  1  4X HDR
//     rail0-leaf1   4  spine-1         1
//     0x0002c90200700001 5 0x0002c90200600002 1 4xHDR
// A node is a GUID (unquoted, `0x` + hex digits), or a name: its node-name-map name, else its
// NodeDescription. A name with spaces, `#`, `"` or `\`, or one that looks like a GUID, is written in
// double quotes (`\"` and `\\` inside). Ports are 1–255. Width `1X 2X 4X 8X 12X` (or the bare
// number), speed `SDR … XDR`, in either order or together as ibnetdiscover prints them (`4xHDR`);
// both optional. `#` starts a comment outside quotes; blank lines are ignored.
//
// `parseCablingPlan` checks the text alone: every error is the user's, with its line.
// `parseCablingPlanSteps` is the same in time slices (a plan of 16 MiB is seconds of work).
import { pacer, atOnce, type Work } from '../../event-loop/time-slices.js';
import { normaliseGuid } from '../../model/guid.js';
import { parseLinkSpeed, parseLinkWidth, type LinkSpeed, type LinkWidth } from '../../model/link-rate.js';
import type { ParsedPlan, PlanEnd, PlanError, PlannedCable } from '../../model/cabling.js';

const PLAN_LINE = '"<node> <port> <peer node> <peer port> [width] [speed]"';

/** The errors a refused plan keeps: a file of junk must not make an error object per line (only the first is said). */
export const MAX_PLAN_ERRORS = 100;

interface Token {
  text: string;
  quoted: boolean;
}

/** A line's fields: whitespace-separated, `"…"` with `\"` and `\\` inside, up to a `#` outside quotes. */
function tokenize(line: string): Token[] | string {
  const tokens: Token[] = [];
  let i = 0;
  while (i < line.length) {
    const c = line[i]!;
    if (c === ' ' || c === '\t' || c === '\r') {
      i++;
    } else if (c === '#') {
      break;
    } else if (c === '"') {
      let text = '';
      i++;
      for (;;) {
        if (i >= line.length) return 'a closing " for the quoted name';
        const q = line[i]!;
        if (q === '\\' && (line[i + 1] === '"' || line[i + 1] === '\\')) {
          text += line[i + 1];
          i += 2;
        } else if (q === '"') {
          i++;
          break;
        } else {
          text += q;
          i++;
        }
      }
      if (i < line.length && !/[ \t\r#]/.test(line[i]!)) return 'a space after the closing " of a quoted name';
      tokens.push({ text, quoted: true });
    } else {
      const start = i;
      while (i < line.length && !/[ \t\r#"]/.test(line[i]!)) i++;
      if (line[i] === '"') return `a space before the " after "${line.slice(start, i)}"`;
      tokens.push({ text: line.slice(start, i), quoted: false });
    }
  }
  return tokens;
}

function nodeRef(token: Token): PlanEnd['node'] {
  const guid = token.quoted || !/^0x[0-9a-f]{1,16}$/i.test(token.text) ? undefined : normaliseGuid(token.text);
  return { text: token.text, guid };
}

function portNumber(token: Token): number | undefined {
  if (token.quoted || !/^\d{1,3}$/.test(token.text)) return undefined;
  const port = Number(token.text);
  return port >= 1 && port <= 255 ? port : undefined;
}

/** Width and speed from the optional fields: `4X HDR`, `HDR 4X`, `4xHDR`, `4`, `HDR`. */
function linkRate(tokens: readonly Token[]): { width: LinkWidth | undefined; speed: LinkSpeed | undefined } | string {
  let width: LinkWidth | undefined;
  let speed: LinkSpeed | undefined;
  const expected = `a width (${['1X', '2X', '4X', '8X', '12X'].join(' ')}) and/or a speed (SDR DDR QDR FDR10 FDR EDR HDR NDR XDR)`;
  for (const token of tokens) {
    const combined = /^(\d{1,2})x([a-z0-9]+)$/i.exec(token.text);
    const widthText = combined?.[1] ?? /^(\d{1,2})x?$/i.exec(token.text)?.[1];
    const speedText = combined?.[2] ?? (widthText === undefined ? token.text : undefined);
    if (token.quoted) return `${expected}, got "${token.text}" in quotes`;
    if (widthText !== undefined) {
      const parsed = parseLinkWidth(Number(widthText));
      if (parsed === undefined || width !== undefined) return `${expected}, got "${token.text}"`;
      width = parsed;
    }
    if (speedText !== undefined) {
      const parsed = parseLinkSpeed(speedText);
      if (parsed === undefined || speed !== undefined) return `${expected}, got "${token.text}"`;
      speed = parsed;
    }
  }
  return { width, speed };
}

/** "port 12 of leaf07" for messages about the plan's text. */
const portText = (end: PlanEnd): string => `port ${end.port} of ${end.node.text}`;

/** The key of a plan end as written: a GUID, or the name (so `leaf07` and its GUID are told apart only by resolvePlan). */
const writtenKey = (end: PlanEnd): string => `${end.node.guid ?? `name:${end.node.text}`}/${end.port}`;

export function parseCablingPlan(text: string, file: string): ParsedPlan {
  return atOnce(parseCablingPlanSteps(text, file));
}

/** `parseCablingPlan`, pausing every few hundred lines. */
export function* parseCablingPlanSteps(text: string, file: string): Work<ParsedPlan> {
  const cables: PlannedCable[] = [];
  const errors: PlanError[] = [];
  const seen = new Map<string, number>();
  const pace = pacer();
  // The lines of `text.split('\n')`, without holding them all at once.
  for (let from = 0, number = 1; from <= text.length; number++) {
    const newline = text.indexOf('\n', from);
    const to = newline < 0 ? text.length : newline;
    parseLine(text.slice(from, to), number);
    if (errors.length >= MAX_PLAN_ERRORS) break;
    from = to + 1;
    if (pace()) yield;
  }
  if (errors.length > 0) return { plan: undefined, errors };
  return { plan: { file, format: 'plan', cables, nodes: new Map() }, errors: [] };

  function parseLine(raw: string, line: number): void {
    const tokens = tokenize(raw);
    if (typeof tokens === 'string') {
      errors.push({ line, message: `expected ${tokens}` });
      return;
    }
    if (tokens.length === 0) return;
    if (tokens.length < 4 || tokens.length > 6) {
      errors.push({
        line,
        message: `expected ${PLAN_LINE} (a node name with spaces in double quotes), got ${tokens.length} field${tokens.length === 1 ? '' : 's'}`,
      });
      return;
    }
    const ends: PlanEnd[] = [];
    for (const [nodeToken, portToken] of [
      [tokens[0]!, tokens[1]!],
      [tokens[2]!, tokens[3]!],
    ] as const) {
      const port = portNumber(portToken);
      if (nodeToken.text === '') {
        errors.push({ line, message: `expected a node (a GUID, a node-name-map name or a NodeDescription), got ""` });
        return;
      }
      if (port === undefined) {
        const hint = portToken.quoted
          ? ' in quotes'
          : /^\d+$/.test(portToken.text)
            ? ''
            : ' (a node name with spaces goes in double quotes)';
        errors.push({ line, message: `expected a port number 1–255 after "${nodeToken.text}", got "${portToken.text}"${hint}` });
        return;
      }
      ends.push({ node: nodeRef(nodeToken), port });
    }
    const rate = linkRate(tokens.slice(4));
    if (typeof rate === 'string') {
      errors.push({ line, message: `expected ${rate} after the ports` });
      return;
    }
    const [a, b] = ends as [PlanEnd, PlanEnd];
    if (writtenKey(a) === writtenKey(b)) {
      errors.push({ line, message: `expected two different ports, got ${portText(a)} at both ends` });
      return;
    }
    for (const end of ends) {
      const earlier = seen.get(writtenKey(end));
      if (earlier !== undefined) {
        errors.push({ line, message: `${portText(end)} is already cabled at line ${earlier}: expected each port in one cable at most` });
        return;
      }
    }
    for (const end of ends) seen.set(writtenKey(end), line);
    cables.push({ line, ends: [a, b], width: rate.width, speed: rate.speed });
  }
}
