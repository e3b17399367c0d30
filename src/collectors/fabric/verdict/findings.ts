// The list to drain and replace, as people and the site's drain tooling read it (check, /fabric,
// GET /fabric/bad-links), and one finding per listed link.
import { composeFabric, type FabricSnapshot } from '../../../model/fabric.js';
import { fabricNodeName, fabricPortName, portPhrase } from '../../../model/fabric-names.js';
import type { CollectorFailure, Finding } from '../../../model/finding.js';
import type { BadLink, Verdict, VerdictReason } from '../../../model/link-verdict.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { FABRIC_DISCOVERY_PART as FABRIC_DISCOVERY } from '../../parts.js';

export const REASON_WORDS: Readonly<Record<VerdictReason, string>> = {
  symbol_errors_12m: 'symbol errors over the BER budget in 12 minutes',
  symbol_errors_125m: 'symbol errors over the BER budget in 125 minutes',
  link_downed: 'went down at both ends within 12 minutes',
  module_temperature: 'module at its high temperature alarm, or 10 °C warmer within 125 minutes',
  effective_ber: 'effective BER over its threshold',
};

/** One listed link, with its ends' names (untrusted: NodeDescriptions) and its times. */
export interface BadLinkRow {
  nodeGuid: string;
  nodeName: string;
  port: number;
  peerGuid: string;
  peerName: string;
  peerPort: number;
  reasons: VerdictReason[];
  since: number;
  cleanSince: number;
  /** When it leaves the list if none of its counters rises again (ms). */
  leavesAt: number;
}

export interface BadLinkList {
  judgedAt: number;
  cap: number;
  overCap: number;
  links: BadLinkRow[];
}

function row(fabric: FabricSnapshot, link: BadLink, cleanPeriodMs: number): BadLinkRow {
  return {
    nodeGuid: link.end.nodeGuid,
    nodeName: fabricNodeName(fabric, link.end.nodeGuid).name,
    port: link.end.port,
    peerGuid: link.peer.nodeGuid,
    peerName: fabricNodeName(fabric, link.peer.nodeGuid).name,
    peerPort: link.peer.port,
    reasons: link.reasons,
    since: link.since,
    cleanSince: link.cleanSince,
    leavesAt: link.cleanSince + cleanPeriodMs,
  };
}

/** The list of `verdict` for people and tools; undefined before the first verdict. */
export function badLinkList(verdict: Verdict | undefined, snapshot: Snapshot): BadLinkList | undefined {
  if (!verdict) return undefined;
  const discovery = FABRIC_DISCOVERY.of(snapshot);
  const fabric = composeFabric(discovery?.topology, undefined, undefined, discovery?.shard ?? { index: 1, count: 1 });
  return {
    judgedAt: verdict.at,
    cap: verdict.cap,
    overCap: verdict.overCap,
    links: verdict.listed.map((link) => row(fabric, link, verdict.cleanPeriodMs)),
  };
}

export function verdictFindings(verdict: Verdict | undefined, snapshot: Snapshot): Finding[] {
  if (!verdict) return [];
  const discovery = FABRIC_DISCOVERY.of(snapshot);
  const fabric = composeFabric(discovery?.topology, undefined, undefined, discovery?.shard ?? { index: 1, count: 1 });
  const findings = verdict.listed.map((link): Finding => {
    const end = fabricPortName(fabric, link.end);
    const peer = fabricPortName(fabric, link.peer);
    return {
      condition: 'fabric-link-bad',
      severity: 'warning',
      subject: { kind: 'fabric-port', node: end.node, port: link.end.port, peer },
      summary: `the link ${portPhrase(end)} – ${portPhrase(peer)} is on the list to drain and replace: ${link.reasons.map((reason) => REASON_WORDS[reason]).join('; ')}`,
      meaning:
        'A link this bad corrupts or drops traffic, and the jobs on it slow down or fail; it stays listed until a clean period passes without its counters rising.',
      cause: 'A dirty or damaged connector, a failing cable or transceiver, or a port of a switch or adapter going bad.',
      remedy:
        "Drain the link (take it out of the jobs' routes), then reseat or replace the cable or module; GET /fabric/bad-links lists every such link.",
      runbook: 'infinibandfabriclinkbad',
      alert: 'InfiniBandFabricLinkBad',
    };
  });
  if (verdict.overCap > 0) {
    findings.push({
      condition: 'fabric-links-bad-over-cap',
      severity: 'warning',
      subject: { kind: 'subnet' },
      summary: `${verdict.overCap} more links are bad than the ${verdict.cap} the list may hold: a fabric-wide problem, not single links`,
      meaning: 'Only the worst links are listed, so that no verdict can drain a large part of the fabric at once.',
      cause:
        'A bad batch of cables or modules, a hot row or rack, a firmware problem, or a BER budget (--fabric.verdict.ber) too strict for this fabric.',
      remedy: 'Look for what the listed links share (a switch, a rack, a cable batch) before draining any more.',
      runbook: 'infinibandfabriclinkbad',
      alert: 'InfiniBandFabricLinkBad',
    });
  }
  return findings;
}

export const VERDICT_FAILURE: CollectorFailure = {
  consequence: 'the bad-links list is not judged again',
  meaning: "The verdict runs on the ports cycle's readings; without them it keeps its last list.",
  cause: 'The state directory (--fabric.state-dir) cannot be written, or a ports cycle failed (see the fabric_ports collector).',
};
