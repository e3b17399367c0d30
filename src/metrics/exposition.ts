// /metrics from a snapshot: one part per collector that writes metrics, each rendered again only
// when its own part of the snapshot (or one it also reads) changed, so that a fabric cycle never
// renders the host's families again, nor a host reading the fabric's; then the exporter's own
// families, rendered after every cycle. In the registry's order: the host collectors, the
// exporter's own, then the fabric collectors (its parts can be tens of MB; the host's come first).
import type { Settings } from '../config/flags.js';
import type { Collector } from '../collectors/collector.js';
import type { Snapshot } from '../model/snapshot.js';
import type { BuildInfo } from './build-info.js';
import { RenderedPart, type EncodedPart } from './exposition-parts.js';
import { writeExporterMetrics } from './exporter-metrics.js';

export class Exposition {
  private readonly host: { collector: Collector; part: RenderedPart<Snapshot> }[];
  private readonly fabric: { collector: Collector; part: RenderedPart<Snapshot> }[];
  private readonly own: RenderedPart<Snapshot>;

  constructor(collectors: readonly Collector[], settings: Settings, build: BuildInfo) {
    const parts = collectors.flatMap((collector) => {
      const metrics = collector.metrics;
      if (!metrics) return [];
      return [{ collector, part: new RenderedPart<Snapshot>((snapshot, out) => metrics.write(snapshot, out, settings)) }];
    });
    this.host = parts.filter(({ collector }) => collector.scope === 'host');
    this.fabric = parts.filter(({ collector }) => collector.scope === 'fabric');
    this.own = new RenderedPart((snapshot, out) => writeExporterMetrics(snapshot, build, out));
  }

  /**
   * The parts of a snapshot, in order; each the same object as last time when nothing of it changed.
   * `others`: parts of the exporter's own not made from the snapshot (the HTTP server's), after
   * the exporter's families.
   */
  parts(snapshot: Snapshot, others: readonly EncodedPart[] = []): EncodedPart[] {
    const render = ({ collector, part }: { collector: Collector; part: RenderedPart<Snapshot> }): EncodedPart[] => {
      const own = collector.of(snapshot);
      // A collector that has not read yet (or is off) has no series.
      if (own === undefined) return [];
      const rendered = part.of(snapshot, [own, ...(collector.metrics!.inputs ?? []).map((input) => input.of(snapshot))]);
      return rendered ? [rendered] : [];
    };
    const own = this.own.of(snapshot, [snapshot.reports, snapshot.totals]);
    return [...this.host.flatMap(render), ...(own ? [own] : []), ...others, ...this.fabric.flatMap(render)];
  }
}

/** A snapshot's whole exposition as text (tests, the bench), rendered afresh. */
export function exposition(collectors: readonly Collector[], settings: Settings, build: BuildInfo, snapshot: Snapshot, others: readonly EncodedPart[] = []): string {
  return new Exposition(collectors, settings, build).parts(snapshot, others).map((part) => part.plain.toString('utf8')).join('\n');
}
