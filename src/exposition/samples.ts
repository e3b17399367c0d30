// Samples into exposition text (format 0.0.4), byte for byte as a fresh prom-client registry
// renders the same samples (test/exposition/samples.test.ts checks it against prom-client), at a
// third of the CPU: 8 devices 1.0 against 3.0 ms per snapshot, 64 devices 6 against 21 ms. On a
// compute node scraped every 15 s that render is a large share of all the work the exporter does
// (docs/benchmarks.md). prom-client still serves the process's own metrics.
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import type { MetricSpec } from './metric-spec.js';
import { ExpositionBuffer, escapeLabelValue } from './buffer.js';

export type Labels = Readonly<Record<string, string>>;

/**
 * Label sets that stay the same object from one snapshot to the next (a port's {device, port}, that
 * plus one more label, a collector's or an interface's): a snapshot allocates no label objects for
 * them.
 */
export class StableLabels {
  private readonly roots = new Map<string, Map<string, Labels>>();
  private readonly children = new WeakMap<Labels, Map<string, Map<string, Labels>>>();

  one(name: string, value: string): Labels {
    const byValue = StableLabels.byValue(this.roots, name);
    let labels = byValue.get(value);
    if (!labels) byValue.set(value, (labels = { [name]: value }));
    return labels;
  }

  with(base: Labels, name: string, value: string): Labels {
    let byName = this.children.get(base);
    if (!byName) this.children.set(base, (byName = new Map()));
    const byValue = StableLabels.byValue(byName, name);
    let labels = byValue.get(value);
    if (!labels) byValue.set(value, (labels = { ...base, [name]: value }));
    return labels;
  }

  private static byValue(byName: Map<string, Map<string, Labels>>, name: string): Map<string, Labels> {
    let byValue = byName.get(name);
    if (!byValue) byName.set(name, (byValue = new Map()));
    return byValue;
  }
}

/** The label sets of the process: a port's {device, port} is one object for its whole life. */
export const STABLE = new StableLabels();

const CHUNK_CHARACTERS = 8192;

/**
 * `{name="value",…}` of a label set, formatted once per label object: the stable ones (a port's)
 * once for the life of the process, the others once per render.
 */
const FORMATTED = new WeakMap<Labels, string>();

function formatLabels(labels: Labels): string {
  let body = FORMATTED.get(labels);
  if (body === undefined) {
    const pairs: string[] = [];
    for (const name in labels) pairs.push(`${name}="${escapeLabelValue(labels[name]!)}"`);
    body = pairs.length === 0 ? '' : `{${pairs.join(',')}}`;
    FORMATTED.set(labels, body);
  }
  return body;
}

/** Samples gathered per metric; only metrics with at least one sample are written. */
export class Samples {
  // Two parallel lists per metric rather than a [labels, value] pair per sample: at 170 000 samples
  // (fabric mode) the pairs alone were 11 MB of garbage per render.
  private readonly byMetric = new Map<MetricSpec, { labels: Labels[]; values: number[] }>();

  add(spec: MetricSpec, labels: Labels, value: number | undefined): void {
    if (value === undefined || !Number.isFinite(value)) return;
    let samples = this.byMetric.get(spec);
    if (!samples) this.byMetric.set(spec, (samples = { labels: [], values: [] }));
    samples.labels.push(labels);
    samples.values.push(value);
  }

  /** Every metric's samples, in the order they were added (for prom-client as a test oracle). */
  *entries(): IterableIterator<[MetricSpec, readonly (readonly [Labels, number])[]]> {
    for (const [spec, { labels, values }] of this.byMetric) yield [spec, labels.map((set, i) => [set, values[i]!] as const)];
  }

  /**
   * The exposition text of the metrics of `order` that have samples, in that order, as UTF-8, laid
   * out as prom-client lays out a registry (families apart by an empty line, label order as given,
   * values as JavaScript prints them): byte for byte what a prom-client registry renders for the
   * same samples (test/exposition/samples.test.ts), written straight into one buffer, without a
   * metric object per label set. Empty when no metric has samples.
   */
  encode(order: readonly MetricSpec[]): Buffer {
    const out = new ExpositionBuffer();
    this.writeTo(order, out);
    return out.finish();
  }

  /** The same, written into `out`. */
  writeTo(order: readonly MetricSpec[], out: ExpositionBuffer): void {
    atOnce(this.writeSteps(order, out));
  }

  /** The same, as work that may pause (a fabric's hundreds of thousands of samples). */
  *writeSteps(order: readonly MetricSpec[], out: ExpositionBuffer): Work<void> {
    const pace = pacer();
    for (let s = 0; s < order.length; s++) {
      const spec = order[s]!;
      const samples = this.byMetric.get(spec);
      if (!samples) continue;
      out.header(spec);
      // Lines are joined into chunks of a few KiB before they are encoded: one UTF-8 write per
      // line was a fifth of the render.
      let chunk = '';
      for (let i = 0; i < samples.values.length; i++) {
        chunk += `${spec.name}${formatLabels(samples.labels[i]!)} ${samples.values[i]}\n`;
        if (chunk.length > CHUNK_CHARACTERS) {
          out.write(chunk);
          chunk = '';
        }
        if (pace()) yield;
      }
      out.write(chunk);
    }
  }

  /** The same as text. */
  text(order: readonly MetricSpec[]): string {
    return this.encode(order).toString('utf8');
  }
}

/**
 * The samples of one family, written as they come: the header before the first, nothing for a
 * family without samples. `labels` is a label set without its closing brace, `extra` the labels
 * that follow (`,reason="width"`). Sample values that are undefined or not finite are left out,
 * as `Samples` does.
 */
export class FamilyWriter {
  private started = false;

  constructor(
    private readonly out: ExpositionBuffer,
    private readonly spec: MetricSpec,
  ) {}

  sample(labels: string, extra: string, value: number | undefined): void {
    if (value === undefined || !Number.isFinite(value)) return;
    if (!this.started) {
      this.out.header(this.spec);
      this.started = true;
    }
    // One write per line: a compute node runs without V8's optimising compilers (startup/v8-flags.ts),
    // where every Buffer#write call allocates; a line string costs less than six calls.
    this.out.write(`${this.spec.name}${labels}${extra}} ${value}\n`);
  }
}
