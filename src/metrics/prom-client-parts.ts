// The parts of prom-client this exporter uses, loaded without its index: the index also loads the
// summary (tdigest), the pushgateway, the cluster aggregator and the default metrics, and with
// them @opentelemetry/api — about 8 MiB of resident memory for code never run here
// (docs/benchmarks.md). prom-client publishes these CommonJS files without an exports map.
import { createRequire } from 'node:module';
import type * as PromClient from 'prom-client';

const require = createRequire(import.meta.url);

export const Registry = require('prom-client/lib/registry.js') as typeof PromClient.Registry;
export const Gauge = require('prom-client/lib/gauge.js') as typeof PromClient.Gauge;
export const Counter = require('prom-client/lib/counter.js') as typeof PromClient.Counter;
export type Registry = PromClient.Registry;

/** One of prom-client's default metric modules: registers its metrics in `registry`. */
export type DefaultMetric = (registry: PromClient.Registry, config?: object) => void;

/** prom-client's default metric module `name` (lib/metrics/<name>.js). */
export function defaultMetric(name: string): DefaultMetric {
  return require(`prom-client/lib/metrics/${name}.js`) as DefaultMetric;
}
