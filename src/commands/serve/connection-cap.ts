// --web.max-connections: the number of connections open at once (TLS handshakes, requests,
// kept-alive idle ones). Past it a new connection is closed as soon as it is accepted, before a
// byte is read, so that idle sockets cannot use up the process's file descriptors (after which the
// exporter could open neither its sysfs files nor its tools' pipes) or its memory. Each refusal is
// counted (infiniband_exporter_http_connections_refused_total); the log says so at most once a
// minute, with how many since the last line, so that a flood does not become a flood of log lines.
import type { Server } from 'node:net';
import type { Logger } from 'pino';

const LOG_EVERY_MS = 60_000;

export interface ConnectionCapOptions {
  logger: Logger;
  /** Called for every connection refused. */
  onRefused: () => void;
  now?: () => number;
}

export function capConnections(server: Server, max: number, options: ConnectionCapOptions): void {
  const now = options.now ?? Date.now;
  server.maxConnections = max;
  let loggedAt: number | undefined;
  let unlogged = 0;
  server.on('drop', (peer?: { remoteAddress?: string }) => {
    options.onRefused();
    unlogged += 1;
    const at = now();
    if (loggedAt !== undefined && at - loggedAt < LOG_EVERY_MS) return;
    options.logger.warn({ maxConnections: max, refused: unlogged, remote: peer?.remoteAddress }, 'refusing connections: --web.max-connections are open');
    loggedAt = at;
    unlogged = 0;
  });
}
