// The fabric_verdict collector: the list of bad links to drain and replace, judged after each
// ports cycle from both ends of every link (model/link-verdict.ts: the reasons, windows, BER budget,
// clean period and cap), kept across restarts in --fabric.state-dir. Module temperature and the
// PHY's effective BER come from fabric_module's in-band readings of switch ports, where mstlink
// reaches them.
import { defineCollector, type Collector, type CollectorContext, type Reader } from '../../../collection/collector.js';
import type { Verdict } from '../../../model/link-verdict.js';
import type { Snapshot } from '../../../model/snapshot.js';
import { FABRIC_PORTS_PART as FABRIC_PORTS } from '../../parts.js';
import { FABRIC_PORTS_CYCLE, FABRIC_SWITCH } from '../fabric-mode.js';
import { badLinkList, verdictFindings, VERDICT_FAILURE, type BadLinkList } from './findings.js';
import { VERDICT_METRIC_ORDER, writeVerdictMetrics } from './metrics.js';
import { STATE_DIR, VERDICT_BER, VERDICT_CLEAN_PERIOD, VerdictReader } from './reader.js';

export { STATE_DIR, VERDICT_BER, VERDICT_CLEAN_PERIOD };
export type { BadLinkList, BadLinkRow } from './findings.js';
export { REASON_WORDS } from './findings.js';

function setUp(context: CollectorContext): Reader<Verdict> {
  return new VerdictReader(context);
}

export const FABRIC_VERDICT: Collector<Verdict> = defineCollector({
  name: 'fabric_verdict',
  checks: 'the links to drain and replace',
  enabledBy: FABRIC_SWITCH,
  flags: [VERDICT_BER, VERDICT_CLEAN_PERIOD, STATE_DIR],
  scope: 'fabric',
  // After each ports cycle, on its readings.
  schedule: { cycle: FABRIC_PORTS_CYCLE, after: [FABRIC_PORTS] },
  onOverrun: 'keep',
  setUp,
  metrics: { families: VERDICT_METRIC_ORDER, write: (snapshot, out) => writeVerdictMetrics(FABRIC_VERDICT.of(snapshot), out) },
  findings: (snapshot) => verdictFindings(FABRIC_VERDICT.of(snapshot), snapshot),
  failure: VERDICT_FAILURE,
});

/** The list in force, with names and times, for check, /fabric and GET /fabric/bad-links. */
export function badLinksOf(snapshot: Snapshot): BadLinkList | undefined {
  return badLinkList(FABRIC_VERDICT.of(snapshot), snapshot);
}
