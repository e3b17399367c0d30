// A saved `ibnetdiscover` output as a cabling plan (a known-good discovery): every cable of it,
// nodes by GUID, the width and speed it trained at as the plan's. Its lines the ibnetdiscover parser
// does not understand, and a port in two cables, are the user's errors, with their lines.
import type { ParsedPlan, PlanEnd, PlanError, PlannedCable } from '../../model/cabling.js';
import { fabricPortKey, type FabricNodeType } from '../../model/fabric.js';
import { atOnce, pacer, type Work } from '../../event-loop/time-slices.js';
import { IbnetdiscoverParser } from './ibnetdiscover.js';
import { MAX_LINE_CHARS } from '../output-lines.js';
import { UNPARSED_EXAMPLES } from '../unparsed-lines.js';
import { MAX_PLAN_ERRORS } from './cabling-plan-lines.js';

export function parseIbnetdiscoverPlan(text: string, file: string): ParsedPlan {
  return atOnce(parseIbnetdiscoverPlanSteps(text, file));
}

/** `parseIbnetdiscoverPlan`, pausing every few hundred lines and cables. */
export function* parseIbnetdiscoverPlanSteps(text: string, file: string): Work<ParsedPlan> {
  const parser = new IbnetdiscoverParser();
  const errors: PlanError[] = [];
  const pace = pacer();
  // The lines of `text.split('\n')`, each cut as OutputLines cuts them (as parseWhole hands them over).
  // The first few lines the parser did not understand are the errors, with their numbers.
  for (let from = 0, number = 1; from <= text.length; number++) {
    const newline = text.indexOf('\n', from);
    const to = newline < 0 ? text.length : newline;
    const line = text.slice(from, Math.min(to, from + MAX_LINE_CHARS));
    const before = parser.unparsedCount;
    parser.push(line);
    if (parser.unparsedCount > before && errors.length < UNPARSED_EXAMPLES) {
      errors.push({
        line: number,
        message: `expected an ibnetdiscover line (a node record, or a port line such as [1] "S-0002c90200400000"[3] # "desc" lid 2 4xQDR), got "${line.trimEnd().slice(0, 80)}"`,
      });
    }
    from = to + 1;
    if (pace()) yield;
  }
  const parsed = parser.end();
  if (parsed.nodes.length === 0 && errors.length === 0)
    errors.push({ line: 1, message: 'expected a saved ibnetdiscover output with at least one node record' });

  const nodes = new Map<string, { type: FabricNodeType; description: string }>();
  for (const node of parsed.nodes) nodes.set(node.guid, { type: node.type, description: node.description });
  const typeOf = (guid: string, fallback: FabricNodeType): FabricNodeType => nodes.get(guid)?.type ?? fallback;
  const refOf = (guid: string): PlanEnd['node'] => ({ text: guid, guid });

  const cables: PlannedCable[] = [];
  // Every cable is printed from both of its ends: each port is in one cable, and both lines agree.
  const peers = new Map<string, { peer: string; line: number }>();
  for (const port of parsed.ports) {
    if (pace()) yield;
    const key = fabricPortKey(port.nodeGuid, port.port);
    const peerKey = fabricPortKey(port.peer.nodeGuid, port.peer.port);
    const known = peers.get(key);
    const knownPeer = peers.get(peerKey);
    if ((known && known.peer !== peerKey) || (knownPeer && knownPeer.peer !== key)) {
      const earlier = known && known.peer !== peerKey ? known : knownPeer!;
      if (errors.length >= MAX_PLAN_ERRORS) break;
      errors.push({
        line: port.line,
        message: `port ${port.port} of ${port.nodeGuid} is cabled to port ${port.peer.port} of ${port.peer.nodeGuid} here, but line ${earlier.line} cables one of these ports elsewhere: expected each port in one cable at most`,
      });
      continue;
    }
    if (known) continue;
    peers.set(key, { peer: peerKey, line: port.line });
    peers.set(peerKey, { peer: key, line: port.line });
    const here = { node: refOf(port.nodeGuid), port: port.port, type: typeOf(port.nodeGuid, 'switch') };
    const there = { node: refOf(port.peer.nodeGuid), port: port.peer.port, type: typeOf(port.peer.nodeGuid, port.peer.type) };
    // The switch end first, then the lower GUID: stable label order for the series.
    const rank = (end: typeof here): string => `${end.type === 'switch' ? 0 : 1}${end.node.text}/${String(end.port).padStart(3, '0')}`;
    const [a, b] = rank(here) <= rank(there) ? [here, there] : [there, here];
    cables.push({
      line: port.line,
      ends: [
        { node: a.node, port: a.port },
        { node: b.node, port: b.port },
      ],
      width: port.width,
      speed: port.speed,
    });
  }
  if (errors.length > 0) return { plan: undefined, errors: errors.sort((x, y) => x.line - y.line) };
  return { plan: { file, format: 'ibnetdiscover', cables, nodes }, errors: [] };
}
