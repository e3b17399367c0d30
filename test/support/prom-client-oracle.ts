// prom-client as the oracle of the exposition text we write ourselves (Samples.encode): what a
// fresh prom-client registry renders for the same samples, metrics in the same order.
import { Counter, Gauge, Registry } from 'prom-client';
import type { MetricSpec } from '../../src/exposition/metric-spec.js';
import type { Samples } from '../../src/exposition/samples.js';

export function promClientText(samples: Samples, order: readonly MetricSpec[]): Promise<string> {
  const registry = new Registry();
  const bySpec = new Map(samples.entries());
  for (const spec of order) {
    const list = bySpec.get(spec);
    if (!list) continue;
    const config = { name: spec.name, help: spec.help, labelNames: [...spec.labels], registers: [registry] };
    if (spec.type === 'counter') {
      const metric = new Counter(config);
      for (const [labels, value] of list) metric.inc({ ...labels }, value);
    } else {
      const metric = new Gauge(config);
      for (const [labels, value] of list) metric.set({ ...labels }, value);
    }
  }
  return registry.metrics();
}
