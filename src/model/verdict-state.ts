// The bad-links verdict's state file (--fabric.state-dir): the links judged bad and each one's
// clean-since time, so that a restart neither forgets a link to drain nor lists a link again
// that went clean. JSON with a version: a file of another version, or one that does not parse or
// has the wrong shape, is not used (the caller logs it and starts afresh).
import { VERDICT_REASONS, type BadLink, type VerdictReason } from './link-verdict.js';

export const VERDICT_STATE_VERSION = 1;

interface StateFile {
  version: number;
  links: {
    node_guid: string;
    port: number;
    peer_guid: string;
    peer_port: number;
    reasons: string[];
    since: number;
    clean_since: number;
    worst: number;
  }[];
}

export function verdictStateText(links: readonly BadLink[]): string {
  const file: StateFile = {
    version: VERDICT_STATE_VERSION,
    links: links.map((link) => ({
      node_guid: link.end.nodeGuid,
      port: link.end.port,
      peer_guid: link.peer.nodeGuid,
      peer_port: link.peer.port,
      reasons: link.reasons,
      since: link.since,
      clean_since: link.cleanSince,
      worst: link.worst,
    })),
  };
  return `${JSON.stringify(file)}\n`;
}

const GUID = /^0x[0-9a-f]{16}$/;
const isPort = (value: unknown): value is number => Number.isInteger(value) && (value as number) >= 0 && (value as number) <= 255;
const isTime = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;
const isReason = (value: unknown): value is VerdictReason => (VERDICT_REASONS as readonly unknown[]).includes(value);

/** The links of a state file, or why it is not used (one phrase). */
export function parseVerdictState(text: string): { links: BadLink[] } | { error: string } {
  let file: unknown;
  try {
    file = JSON.parse(text);
  } catch (error) {
    return { error: `is not JSON (${(error as Error).message})` };
  }
  if (typeof file !== 'object' || file === null || !('version' in file)) return { error: 'has no version' };
  const { version, links } = file as { version: unknown; links: unknown };
  if (version !== VERDICT_STATE_VERSION) return { error: `is of version ${JSON.stringify(version)}, not ${VERDICT_STATE_VERSION}` };
  if (!Array.isArray(links)) return { error: 'has no list of links' };
  const out: BadLink[] = [];
  for (const [i, entry] of links.entries()) {
    const link = entry as Partial<StateFile['links'][number]> | null;
    if (
      typeof link !== 'object' ||
      link === null ||
      typeof link.node_guid !== 'string' ||
      !GUID.test(link.node_guid) ||
      !isPort(link.port) ||
      typeof link.peer_guid !== 'string' ||
      !GUID.test(link.peer_guid) ||
      !isPort(link.peer_port) ||
      !Array.isArray(link.reasons) ||
      link.reasons.length === 0 ||
      !link.reasons.every(isReason) ||
      !isTime(link.since) ||
      !isTime(link.clean_since) ||
      !isTime(link.worst)
    ) {
      return { error: `has a malformed link (entry ${i + 1})` };
    }
    out.push({
      end: { nodeGuid: link.node_guid, port: link.port },
      peer: { nodeGuid: link.peer_guid, port: link.peer_port },
      reasons: VERDICT_REASONS.filter((reason) => (link.reasons as string[]).includes(reason)),
      since: link.since,
      cleanSince: link.clean_since,
      worst: link.worst,
    });
  }
  return { links: out };
}
