// The verdict's families: each listed link once per reason, and the links beyond the cap.
import type { ExpositionBuffer } from '../../../exposition/buffer.js';
import type { MetricSpec } from '../../../exposition/metric-spec.js';
import { Samples } from '../../../exposition/samples.js';
import type { Verdict } from '../../../model/link-verdict.js';

const gauge = (name: string, labels: readonly string[], help: string): MetricSpec => ({ name, type: 'gauge', labels, help });

export const VERDICT_METRICS = {
  linkBad: gauge(
    'infiniband_fabric_link_bad',
    ['node_guid', 'port', 'peer_guid', 'peer_port', 'reason'],
    'Present (value 1) while a link is on the list to drain and replace, once per reason: symbol_errors_12m or symbol_errors_125m (symbol errors over the --fabric.verdict.ber budget at its data rate in that window), link_downed (it went down at both ends within 12 minutes), module_temperature, effective_ber. It leaves the list after --fabric.verdict.clean-period without a rise. GET /fabric/bad-links serves the same list.',
  ),
  linksBadOverCap: gauge(
    'infiniband_fabric_links_bad_over_cap',
    [],
    "Links judged bad but not listed, because at most max(10, 0.5 %) of the fabric's links are listed at once (a shard its share), the worst first: more than 0 is a fabric-wide problem (a bad batch of cables, a hot row), not single links to drain.",
  ),
} as const;

export const VERDICT_METRIC_ORDER: readonly MetricSpec[] = Object.values(VERDICT_METRICS);

export function writeVerdictMetrics(verdict: Verdict | undefined, out: ExpositionBuffer): void {
  if (!verdict) return;
  const samples = new Samples();
  for (const link of verdict.listed) {
    for (const reason of link.reasons) {
      samples.add(
        VERDICT_METRICS.linkBad,
        {
          node_guid: link.end.nodeGuid,
          port: String(link.end.port),
          peer_guid: link.peer.nodeGuid,
          peer_port: String(link.peer.port),
          reason,
        },
        1,
      );
    }
  }
  samples.add(VERDICT_METRICS.linksBadOverCap, {}, verdict.overCap);
  samples.writeTo(VERDICT_METRIC_ORDER, out);
}
