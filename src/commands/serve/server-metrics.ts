// The HTTP server's own metrics (SERVER_METRICS, declared with the exporter's families in
// metrics/exporter-metrics.ts): connections closed at --web.max-connections or
// --web.max-connections-per-client, and the web config's reloads. One part of /metrics after the
// exporter's own families, rendered again only when one of these values changed, which is seldom.
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { Samples } from '../../exposition/samples.js';
import { RenderedPart, type EncodedPart } from '../../metrics/exposition-parts.js';
import { SERVER_METRICS } from '../../metrics/exporter-metrics.js';
import type { ReloadStatus } from './web-config/reload.js';

const NO_LABELS = {};
const ORDER = Object.values(SERVER_METRICS);

/** The values at one moment: the same object as long as none of them changes. */
export interface ServerState {
  readonly connectionsRefused: number;
  /** The web config's reloads; undefined without --web.config.file. */
  readonly reload: ReloadStatus | undefined;
}

export class ServerMetrics {
  private refused = 0;
  private last: ServerState | undefined;
  private readonly part = new RenderedPart<ServerState>(writeServerMetrics);

  /** `reloadStatus`: the web config's, when there is one (a new object at each change). */
  constructor(private readonly reloadStatus?: () => ReloadStatus) {}

  connectionRefused(): void {
    this.refused += 1;
  }

  state(): ServerState {
    const reload = this.reloadStatus?.();
    if (this.last?.connectionsRefused !== this.refused || this.last.reload !== reload)
      this.last = { connectionsRefused: this.refused, reload };
    return this.last;
  }

  /** The part of /metrics, the same object while nothing changed. */
  current(): EncodedPart | undefined {
    const state = this.state();
    return this.part.of(state, [state]);
  }
}

export function writeServerMetrics(state: ServerState, out: ExpositionBuffer): void {
  const samples = new Samples();
  samples.add(SERVER_METRICS.connectionsRefused, NO_LABELS, state.connectionsRefused);
  if (state.reload) {
    samples.add(SERVER_METRICS.webConfigReloadSuccessful, NO_LABELS, state.reload.successful ? 1 : 0);
    samples.add(SERVER_METRICS.webConfigReloadSuccessTimestamp, NO_LABELS, state.reload.successAt / 1000);
  }
  samples.writeTo(ORDER, out);
}
