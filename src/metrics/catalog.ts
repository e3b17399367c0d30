// Every metric family the exporter serves: each collector's (declared in its module) and the
// exporter's own. The README's metric table is generated from this list, and a test keeps the two
// equal.
import type { Collector } from '../collection/collector.js';
import { COLLECTORS } from '../collectors/registry.js';
import type { MetricSpec } from '../exposition/metric-spec.js';
import { EXPORTER_METRICS, SERVER_METRICS } from './exporter-metrics.js';

export function allMetrics(collectors: readonly Collector[] = COLLECTORS): MetricSpec[] {
  return [
    ...collectors.flatMap((collector) => collector.metrics?.families ?? []),
    ...Object.values(EXPORTER_METRICS),
    ...Object.values(SERVER_METRICS),
  ];
}
