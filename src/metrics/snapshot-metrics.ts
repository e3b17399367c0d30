// /metrics from a snapshot: one part per collector that writes metrics, each rendered again only
// when its own part of the snapshot (or one it also reads) changed, so that a fabric cycle never
// renders the host's families again, nor a host reading the fabric's; then the exporter's own
// families, rendered after every cycle. In the registry's order: the host collectors, the
// exporter's own, then the fabric collectors (its parts can be tens of MB; the host's come first).
import type { Settings } from '../config/flags.js';
import type { Collector } from '../collection/collector.js';
import type { Snapshot } from '../model/snapshot.js';
import type { BuildInfo } from './build-info.js';
import { RenderedPart, type EncodedPart } from './exposition-parts.js';
import { writeExporterMetrics } from './exporter-metrics.js';

interface CollectorPart {
  collector: Collector;
  part: RenderedPart<Snapshot>;
}

export class Exposition {
  private readonly host: CollectorPart[];
  private readonly fabric: CollectorPart[];
  private readonly own: RenderedPart<Snapshot>;

  constructor(collectors: readonly Collector[], settings: Settings, build: BuildInfo) {
    const parts = collectors.flatMap((collector) => {
      const metrics = collector.metrics;
      if (!metrics) return [];
      const steps = metrics.writeSteps?.bind(metrics);
      const part = new RenderedPart<Snapshot>(
        (snapshot, out) => metrics.write(snapshot, out, settings),
        steps && ((snapshot, out) => steps(snapshot, out, settings)),
      );
      return [{ collector, part }];
    });
    this.host = parts.filter(({ collector }) => collector.scope === 'host');
    this.fabric = parts.filter(({ collector }) => collector.scope === 'fabric');
    this.own = new RenderedPart((snapshot, out) => writeExporterMetrics(snapshot, build, out));
  }

  /**
   * The parts of a snapshot, in order; each the same object as last time when nothing of it changed.
   * `others`: parts of the exporter's own not made from the snapshot (the HTTP server's), after
   * the exporter's families. The host's parts are rendered at once (milliseconds); the fabric's in
   * time slices (seconds at 120 000 ports: the event loop keeps turning), normally already done
   * by `prepare` when the cycle published.
   */
  async parts(snapshot: Snapshot, others: readonly EncodedPart[] = []): Promise<EncodedPart[]> {
    return this.assemble(snapshot, others, await this.fabricParts(snapshot));
  }

  /**
   * The same with the fabric's parts rendered at once too: for a program that renders one snapshot
   * and is done (tests, the bench), never beside `parts` on one instance (they share its buffers).
   */
  partsAtOnce(snapshot: Snapshot, others: readonly EncodedPart[] = []): EncodedPart[] {
    return this.assemble(
      snapshot,
      others,
      this.fabric.flatMap((entry) => renderedNow(entry, snapshot)),
    );
  }

  /** Render the fabric's parts of a snapshot just published, before a scrape asks for them. */
  async prepare(snapshot: Snapshot): Promise<void> {
    await this.fabricParts(snapshot);
  }

  /** In the registry's order: the host's, the exporter's own, `others`, the fabric's. */
  private assemble(snapshot: Snapshot, others: readonly EncodedPart[], fabric: readonly EncodedPart[]): EncodedPart[] {
    const own = this.own.of(snapshot, [snapshot.reports, snapshot.totals]);
    return [...this.host.flatMap((entry) => renderedNow(entry, snapshot)), ...(own ? [own] : []), ...others, ...fabric];
  }

  private async fabricParts(snapshot: Snapshot): Promise<EncodedPart[]> {
    const parts: EncodedPart[] = [];
    for (const { collector, part } of this.fabric) {
      const inputs = inputsOf(collector, snapshot);
      const rendered = inputs && (await part.render(snapshot, inputs));
      if (rendered) parts.push(rendered);
    }
    return parts;
  }
}

/** A collector's part rendered at once, when it has one. */
function renderedNow({ collector, part }: CollectorPart, snapshot: Snapshot): EncodedPart[] {
  const inputs = inputsOf(collector, snapshot);
  const rendered = inputs && part.of(snapshot, inputs);
  return rendered ? [rendered] : [];
}

/** What a collector's part is made of in a snapshot; undefined when it has not read yet (or is off): no series. */
function inputsOf(collector: Collector, snapshot: Snapshot): unknown[] | undefined {
  const own = collector.of(snapshot);
  return own === undefined ? undefined : [own, ...(collector.metrics!.inputs ?? []).map((input) => input.of(snapshot))];
}

/** A snapshot's whole exposition as text (tests, the bench), rendered afresh. */
export function exposition(
  collectors: readonly Collector[],
  settings: Settings,
  build: BuildInfo,
  snapshot: Snapshot,
  others: readonly EncodedPart[] = [],
): string {
  return new Exposition(collectors, settings, build)
    .partsAtOnce(snapshot, others)
    .map((part) => part.plain.toString('utf8'))
    .join('\n');
}
