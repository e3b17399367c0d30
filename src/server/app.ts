// The HTTP application, built from options and free of process concerns (signals, listen, exit):
// tests drive it through inject(). It serves the last rendered snapshot; a scrape never waits for
// a collection cycle.
import Fastify, { LogController, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** What the server needs to know about collection. */
export interface MetricsSource {
  /** Exposition text of the last snapshot; undefined before the first cycle finished. */
  text(): string | undefined;
  /** Unix time (ms) at which the last snapshot was taken; undefined before the first. */
  takenAt(): number | undefined;
}

export interface AppOptions {
  source: MetricsSource;
  telemetryPath: string;
  /** The exporter's own process_* and nodejs_* metrics; undefined when disabled. */
  processRegistry: Registry | undefined;
  /** /ready fails when the last snapshot is older than this. */
  maxSnapshotAgeMs: number;
  version: string;
  logger: Logger;
  now?: () => number;
  /** TLS and other options of the underlying server (see server/web-config.ts). */
  serverOptions?: Partial<FastifyServerOptions> & Record<string, unknown>;
  /** Runs on every request before routing (basic auth). */
  authenticate?: Parameters<FastifyInstance['addHook']>[1];
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function landingPage(options: AppOptions): string {
  const metrics = escapeHtml(options.telemetryPath);
  return `<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>InfiniBand Exporter</title>
<style>body{font-family:sans-serif;max-width:50em;margin:2em auto;line-height:1.5}code{background:#eee;padding:0 .2em}</style></head>
<body>
<h1>InfiniBand Exporter</h1>
<p>Prometheus exporter for InfiniBand hosts: port and link health, subnet manager, PMA counters, IPoIB settings. Version ${escapeHtml(options.version)}.</p>
<ul>
<li><a href="${metrics}">${metrics}</a> — metrics</li>
<li><a href="/healthz">/healthz</a> — the process is alive</li>
<li><a href="/ready">/ready</a> — the last collection is recent</li>
</ul>
</body>
</html>
`;
}

export function buildApp(options: AppOptions): FastifyInstance {
  const now = options.now ?? Date.now;
  const app = Fastify({
    loggerInstance: options.logger,
    // A scrape every 15 s from every Prometheus would drown the log: requests are not logged.
    logController: new LogController({ disableRequestLogging: true }),
    // Scrapes are tiny GETs: anything slow or large is not a scrape.
    connectionTimeout: 30_000,
    requestTimeout: 10_000,
    keepAliveTimeout: 5_000,
    bodyLimit: 1024,
    forceCloseConnections: true,
    return503OnClosing: true,
    ...options.serverOptions,
  });

  if (options.authenticate) app.addHook('onRequest', options.authenticate as never);

  app.get('/', async (_request, reply) => reply.type('text/html; charset=utf-8').send(landingPage(options)));

  app.get(options.telemetryPath, async (_request, reply) => {
    const text = options.source.text() ?? '';
    const own = options.processRegistry ? await options.processRegistry.metrics() : '';
    return reply.type(EXPOSITION_CONTENT_TYPE).header('cache-control', 'no-store').send(text + own);
  });

  app.get('/healthz', async (_request, reply) => reply.type('text/plain; charset=utf-8').send('ok\n'));

  app.get('/ready', async (_request, reply) => {
    const takenAt = options.source.takenAt();
    if (takenAt === undefined) return reply.code(503).type('text/plain; charset=utf-8').send('not ready: first collection has not finished\n');
    const ageMs = now() - takenAt;
    if (ageMs > options.maxSnapshotAgeMs) {
      return reply.code(503).type('text/plain; charset=utf-8').send(`not ready: last collection finished ${Math.round(ageMs / 1000)}s ago\n`);
    }
    return reply.type('text/plain; charset=utf-8').send('ready\n');
  });

  app.setNotFoundHandler(async (_request, reply) => reply.code(404).type('text/plain; charset=utf-8').send('not found\n'));

  app.setErrorHandler(async (error: { statusCode?: number; message?: string }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error, method: request.method, url: request.url }, 'request failed');
    // Client errors say what was wrong; server errors say nothing about internals.
    return reply.code(status).type('text/plain; charset=utf-8').send(status >= 500 ? 'internal error\n' : `${error.message ?? 'bad request'}\n`);
  });

  return app;
}
