// GET /fabric/bad-links: the list to drain and replace (the fabric_verdict collector's), for the
// site's drain tooling, as JSON or (?format=csv) CSV. Names are NodeDescriptions, untrusted: the
// CSV quotes every field and defuses a leading formula character, so a host named "=cmd|..." is
// text in a spreadsheet, not a formula.
import { badLinksOf, type BadLinkList } from '../../collectors/fabric/verdict/index.js';
import type { Snapshot } from '../../model/snapshot.js';

const iso = (ms: number): string => new Date(ms).toISOString();

export function badLinksJson(list: BadLinkList): string {
  return `${JSON.stringify(
    {
      judged_at: iso(list.judgedAt),
      cap: list.cap,
      over_cap: list.overCap,
      links: list.links.map((link) => ({
        node_guid: link.nodeGuid,
        node_name: link.nodeName,
        port: link.port,
        peer_guid: link.peerGuid,
        peer_name: link.peerName,
        peer_port: link.peerPort,
        reasons: link.reasons,
        since: iso(link.since),
        clean_since: iso(link.cleanSince),
        leaves_at: iso(link.leavesAt),
      })),
    },
    null,
    2,
  )}\n`;
}

const CSV_COLUMNS = [
  'node_guid',
  'node_name',
  'port',
  'peer_guid',
  'peer_name',
  'peer_port',
  'reasons',
  'since',
  'clean_since',
  'leaves_at',
];

function csvField(value: string | number): string {
  const text = String(value);
  const defused = /^[=+\-@\t\r]/.test(text) ? `'${text}` : text;
  return `"${defused.replaceAll('"', '""')}"`;
}

export function badLinksCsv(list: BadLinkList): string {
  const rows = list.links.map((link) =>
    [
      link.nodeGuid,
      link.nodeName,
      link.port,
      link.peerGuid,
      link.peerName,
      link.peerPort,
      link.reasons.join(' '),
      iso(link.since),
      iso(link.cleanSince),
      iso(link.leavesAt),
    ]
      .map(csvField)
      .join(','),
  );
  return `${[CSV_COLUMNS.join(','), ...rows].join('\r\n')}\r\n`;
}

/** The response to GET /fabric/bad-links: its status, type and body. */
export function badLinksResponse(snapshot: Snapshot | undefined, format: unknown): { status: number; type: string; body: string } {
  const text = 'text/plain; charset=utf-8';
  if (format !== undefined && format !== 'json' && format !== 'csv')
    return { status: 400, type: text, body: 'format must be json or csv\n' };
  const list = snapshot && badLinksOf(snapshot);
  if (!list)
    return {
      status: 404,
      type: text,
      body: 'no bad-links list: fabric mode is off (--collector.fabric), or its first ports cycle has not finished\n',
    };
  return format === 'csv'
    ? { status: 200, type: 'text/csv; charset=utf-8', body: badLinksCsv(list) }
    : { status: 200, type: 'application/json; charset=utf-8', body: badLinksJson(list) };
}
