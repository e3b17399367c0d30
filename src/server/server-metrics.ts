// The HTTP server's own metrics (SERVER_METRICS in metrics/catalog.ts). They are written at the end
// of the host part of /metrics, which is rendered again when the snapshot or one of these values
// changed: another part would be another gzip member in the body, which curl (7.88) does not read
// past (exposition-parts.ts), and these values change seldom.
import { SERVER_METRICS } from '../metrics/catalog.js';
import type { ExpositionBuffer } from '../metrics/exposition-buffer.js';
import { Samples } from '../metrics/render.js';
import type { ReloadStatus } from './web-config.js';

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

  /** `reloadStatus`: the web config's, when there is one (a new object at each change). */
  constructor(private readonly reloadStatus?: () => ReloadStatus) {}

  connectionRefused(): void {
    this.refused += 1;
  }

  state(): ServerState {
    const reload = this.reloadStatus?.();
    if (this.last?.connectionsRefused !== this.refused || this.last.reload !== reload) this.last = { connectionsRefused: this.refused, reload };
    return this.last;
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
