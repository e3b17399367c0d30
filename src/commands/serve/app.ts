// The HTTP application, built from options and free of process concerns (signals, listen, exit):
// tests drive it through inject(). A scrape serves the cached parts of the exposition (see
// metrics/exposition-parts.ts), gzip-compressed when the client accepts it; it waits only when the
// host reading is older than one collection interval (see exporter.ts).
import { STATUS_CODES } from 'node:http';
import { Readable, type Duplex } from 'node:stream';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest, type FastifyServerOptions } from 'fastify';
import type { Logger } from 'pino';
import { inSlices } from '../../event-loop/time-slices.js';
import { MAX_JOINED_BYTES, joinParts, plainBody, plainBodyLength, type EncodedPart } from '../../metrics/exposition-parts.js';
import type { Snapshot } from '../../model/snapshot.js';
import type { Collector } from '../../collection/collector.js';
import { DEFAULT_MAX_CONNECTIONS_PER_CLIENT, capConnections } from './connection-cap.js';
import { COLLECTORS } from '../../collectors/registry.js';
import { FabricPage } from './fabric-page.js';
import { badLinksResponse } from './bad-links.js';
import { landingPageSteps, withAge } from './landing-page.js';
import { renderRunbooks } from './runbooks-page.js';
import { PageCache } from './page-cache.js';
import { guardSlowClients } from './slow-clients.js';

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** What the server needs to know about collection. */
export interface MetricsSource {
  /** The parts of the exposition, in order, fresh enough to serve. */
  parts(): Promise<readonly EncodedPart[]>;
  /** Unix time (ms) at which the collection last read the host; undefined before the first. */
  takenAt(): number | undefined;
}

export interface AppOptions {
  source: MetricsSource;
  telemetryPath: string;
  /** /ready fails when the last snapshot is older than this. */
  maxSnapshotAgeMs: number;
  version: string;
  logger: Logger;
  now?: () => number;
  /** TLS and other options of the underlying server (see web-config.ts). */
  serverOptions?: Partial<FastifyServerOptions> & Record<string, unknown>;
  /**
   * Runs on every request before anything else (basic auth): before routing, the method check and
   * the URL's decoding, so that a request without credentials learns nothing but 401.
   */
  authenticate?: (request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
  /**
   * Connections open at once; at the limit, the one waiting longest for its request headers is
   * closed, or the newcomer when all are in requests (connection-cap.ts).
   */
  maxConnections?: number;
  /** The same from one remote address (DEFAULT_MAX_CONNECTIONS_PER_CLIENT by default). */
  maxConnectionsPerClient?: number;
  /** Called for each connection closed at maxConnections or maxConnectionsPerClient. */
  onConnectionRefused?: () => void;
  /** The current snapshot, for the findings of the landing page; undefined before the first collection. */
  currentSnapshot?: () => Snapshot | undefined;
  /** The collectors that judge it (the registry's by default). */
  collectors?: readonly Collector[];
  /** The host's name, in the landing page's title and heading. */
  hostname?: string;
  /** What the collectors cannot check here and why (the "Not checked" list). */
  notChecked?: () => readonly string[];
  /** Seconds between collections: the landing page reloads itself at this interval. */
  refreshSeconds?: number;
  /** --web.runbook-url: the runbooks the pages link to; the exporter's own /runbooks when undefined. */
  runbookUrl?: string;
}

/**
 * Limits of the Node server under fastify (HTTP and HTTPS alike). A scrape is a small GET with a
 * few hundred bytes of headers: a client that sends more, or sends its headers slowly, is not one.
 */
export const SERVER_LIMITS = {
  /** Request line and headers together; beyond it: 431. */
  maxHeaderSize: 8192,
  /** Headers complete within this or the connection is answered 408 and closed (slowloris). */
  headersTimeout: 5_000,
  /**
   * How often Node checks those deadlines, waking the process every time whether anyone is
   * connected or not. Node's default, 30 s, is the backstop: headersTimeout is enforced within a
   * second by guardSlowClients (slow-clients.ts), whose timer runs only while connections are open.
   */
  connectionsCheckingInterval: 30_000,
} as const;

/** Limits of an HTTPS server on top of SERVER_LIMITS. */
export const TLS_LIMITS = {
  /** The TLS handshake is done within this or the connection is closed (Node's default: 120 s). */
  handshakeTimeout: 5_000,
} as const;

/** How long one reading of the process's own metrics serves scrapes. */
export const OWN_METRICS_MAX_AGE_MS = 1000;

/**
 * Whether an Accept-Encoding header accepts gzip: `gzip` (or `x-gzip`, or `*` when gzip is not
 * named) with a quality above 0. Prometheus sends `Accept-Encoding: gzip`.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  let wildcard = false;
  for (const item of header.split(',')) {
    const [coding = '', ...parameters] = item.split(';').map((part) => part.trim().toLowerCase());
    const q = parameters.find((parameter) => parameter.startsWith('q='));
    const accepted = q === undefined || Number(q.slice(2)) > 0;
    if (coding === 'gzip' || coding === 'x-gzip') return accepted;
    if (coding === '*') wildcard = accepted;
  }
  return wildcard;
}

/** Only reading methods: anything else is refused before a body is read or a password checked. */
export const ALLOWED_METHODS = 'GET, HEAD';

/** The body of an error response: the status's standard phrase, nothing about internals. */
function statusText(status: number): string {
  return `${(STATUS_CODES[status] ?? 'error').toLowerCase()}\n`;
}

/**
 * Errors Node meets before there is a request (headers too large or too slow, bad framing): the
 * status and its phrase in plain text, then the connection is closed.
 */
function refuseConnection(error: Error & { code?: string }, socket: Duplex): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const status = error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
  const body = statusText(status);
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy();
}

function noSchemas(): never {
  throw new Error('a route declares a schema: give fastify its default compilers back (src/commands/serve/app.ts)');
}

/** Server options with SERVER_LIMITS under the caller's own http/https options (which win). */
function withLimits(serverOptions: AppOptions['serverOptions']): NonNullable<AppOptions['serverOptions']> {
  const given = serverOptions ?? {};
  const limited: NonNullable<AppOptions['serverOptions']> = { ...given, http: { ...SERVER_LIMITS, ...(given.http as object | undefined) } };
  if (typeof given.https === 'object' && given.https !== null) limited.https = { ...SERVER_LIMITS, ...TLS_LIMITS, ...given.https };
  return limited;
}

export function buildApp(options: AppOptions): FastifyInstance {
  const now = options.now ?? Date.now;
  const app = Fastify({
    loggerInstance: options.logger,
    // A scrape every 15 s from every Prometheus would drown the log: requests are not logged.
    logController: new LogController({ disableRequestLogging: true }),
    // Scrapes are tiny GETs: anything slow or large is not a scrape. The whole request within 5 s
    // (as its headers: a GET has no body); a kept-alive connection idle for 5 s is closed; a socket
    // that moves no byte for 30 s (a client that stopped reading its response) is destroyed.
    connectionTimeout: 30_000,
    requestTimeout: 5_000,
    keepAliveTimeout: 5_000,
    bodyLimit: 1024,
    forceCloseConnections: true,
    return503OnClosing: true,
    // A URL that cannot be decoded is a plain 400, without echoing it back; 401 first when
    // credentials are required and missing.
    frameworkErrors: ((_error: unknown, request: FastifyRequest, reply: FastifyReply) => {
      void (async () => {
        if (options.authenticate) await options.authenticate(request, reply);
        if (!reply.sent) await reply.code(400).type('text/plain; charset=utf-8').send(statusText(400));
      })();
    }) as never,
    clientErrorHandler: refuseConnection,
    // No route declares a schema, so nothing is ever compiled: without these, fastify loads ajv and
    // fast-json-stringify at start anyway (55 ms of start-up CPU and 2.6 MiB of RSS here).
    schemaController: { compilersFactory: { buildValidator: noSchemas, buildSerializer: noSchemas } },
    ...withLimits(options.serverOptions),
  });

  guardSlowClients(app.server, {
    refuse: (socket) =>
      refuseConnection(Object.assign(new Error('request headers took too long'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), socket),
  });
  if (options.maxConnections !== undefined) {
    capConnections(app.server, options.maxConnections, {
      maxPerClient: options.maxConnectionsPerClient ?? DEFAULT_MAX_CONNECTIONS_PER_CLIENT,
      logger: options.logger,
      onRefused: options.onConnectionRefused ?? (() => undefined),
    });
  }

  // Authentication before anything that depends on the method or the path (exporter-toolkit's
  // order): 401 for every request without the right credentials, whatever it asks for.
  if (options.authenticate) app.addHook('onRequest', options.authenticate as never);
  // 405 with Allow on the exporter's own paths, 404 elsewhere, for every method but GET and HEAD.
  const paths = new Set(['/', options.telemetryPath, '/fabric', '/fabric/bad-links', '/runbooks', '/healthz', '/ready']);
  const runbookBase = options.runbookUrl ?? '/runbooks';
  app.addHook('onRequest', async (request, reply) => {
    if (request.method === 'GET' || request.method === 'HEAD') return;
    const path = request.url.split('?', 1)[0]!;
    if (!paths.has(path)) return reply.code(404).type('text/plain; charset=utf-8').send('not found\n');
    return reply
      .code(405)
      .header('allow', ALLOWED_METHODS)
      .type('text/plain; charset=utf-8')
      .send(`method not allowed: ${ALLOWED_METHODS} only\n`);
  });

  // The landing page of the current snapshot, made once per snapshot viewed: in fabric mode its
  // findings walk every port (judged in slices, the loop turning meanwhile).
  const landing = new PageCache();
  app.get('/', async (_request, reply) => {
    const snapshot = options.currentSnapshot?.();
    const takenAt = options.source.takenAt();
    const page = await landing.get([snapshot, takenAt], () =>
      inSlices(
        landingPageSteps({
          telemetryPath: options.telemetryPath,
          version: options.version,
          snapshot,
          ...(options.collectors && { collectors: options.collectors }),
          takenAt,
          ...(options.hostname !== undefined && { hostname: options.hostname }),
          ...(options.notChecked && { notChecked: options.notChecked() }),
          ...(options.refreshSeconds !== undefined && { refreshSeconds: options.refreshSeconds }),
          runbookBase,
        }),
      ),
    );
    return reply
      .type('text/html; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(withAge(page, takenAt, now()));
  });

  // The runbooks, rendered once on first view (the Markdown is in the bundle).
  let runbooks: string | undefined;
  app.get('/runbooks', async (_request, reply) => {
    runbooks ??= renderRunbooks();
    return reply.type('text/html; charset=utf-8').send(runbooks);
  });

  // The parts are encoded once each; the last body joined from them (plain and gzip) is kept, so
  // the scrapes of one snapshot share it instead of allocating it again.
  const joined: Record<'plain' | 'gzip', { parts: readonly EncodedPart[]; body: Buffer | readonly Buffer[] }> = {
    plain: { parts: [], body: Buffer.alloc(0) },
    gzip: { parts: [], body: Buffer.alloc(0) },
  };
  app.get(options.telemetryPath, async (request, reply) => {
    const parts = await options.source.parts();
    const gzip = acceptsGzip(request.headers['accept-encoding']);
    void reply.type(EXPOSITION_CONTENT_TYPE).header('cache-control', 'no-store').header('vary', 'Accept-Encoding');
    const plainLength = gzip ? 0 : plainBodyLength(parts);
    if (plainLength > MAX_JOINED_BYTES) {
      // A fabric's plain body (100 MiB at 122 880 switch ports) is inflated as the client reads
      // it, by zlib's threads, and not kept: Prometheus asks for gzip; a person's curl can wait.
      void reply.header('content-length', plainLength);
      return reply.send(Readable.from(plainBody(parts), { objectMode: false }));
    }
    const last = gzip ? joined.gzip : joined.plain;
    if (last.parts.length !== parts.length || last.parts.some((part, i) => part !== parts[i])) {
      // A fabric's parts are kept compressed: their plain text is inflated aside, not on the event loop.
      if (!gzip) await Promise.all(parts.map((part) => part.loadPlain()));
      last.parts = parts;
      last.body = joinParts(parts, gzip);
    }
    if (gzip) void reply.header('content-encoding', 'gzip');
    const body = last.body;
    if (Buffer.isBuffer(body)) return reply.send(body);
    void reply.header(
      'content-length',
      body.reduce((sum, buffer) => sum + buffer.length, 0),
    );
    return reply.send(Readable.from(body, { objectMode: false }));
  });

  const fabricPage = new FabricPage(options.collectors ?? COLLECTORS, runbookBase);
  app.get<{ Querystring: { job?: unknown } }>('/fabric', async (request, reply) => {
    // ?job=ID draws that job's footprint; an id is short, a longer one is no job.
    const job = typeof request.query.job === 'string' ? request.query.job.slice(0, 64) : undefined;
    const page = await fabricPage.of(options.currentSnapshot?.(), options.source.takenAt(), job);
    if ('missing' in page) return reply.code(404).type('text/plain; charset=utf-8').send(`${page.missing}\n`);
    return reply.type('text/html; charset=utf-8').header('cache-control', 'no-store').send(page.html);
  });

  app.get('/fabric/bad-links', async (request, reply) => {
    const { status, type, body } = badLinksResponse(options.currentSnapshot?.(), (request.query as Record<string, unknown>).format);
    return reply.code(status).type(type).header('cache-control', 'no-store').send(body);
  });

  app.get('/healthz', async (_request, reply) => reply.type('text/plain; charset=utf-8').send('ok\n'));

  app.get('/ready', async (_request, reply) => {
    const takenAt = options.source.takenAt();
    if (takenAt === undefined)
      return reply.code(503).type('text/plain; charset=utf-8').send('not ready: first collection has not finished\n');
    const ageMs = now() - takenAt;
    if (ageMs > options.maxSnapshotAgeMs) {
      return reply
        .code(503)
        .type('text/plain; charset=utf-8')
        .send(`not ready: last collection finished ${Math.round(ageMs / 1000)}s ago\n`);
    }
    return reply.type('text/plain; charset=utf-8').send('ready\n');
  });

  app.setNotFoundHandler(async (_request, reply) => reply.code(404).type('text/plain; charset=utf-8').send('not found\n'));

  app.setErrorHandler(async (error: { statusCode?: number }, request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status >= 500) request.log.error({ err: error, method: request.method, url: request.url }, 'request failed');
    // The status phrase only: messages can carry paths, stack frames or the request's own bytes.
    return reply
      .code(status)
      .type('text/plain; charset=utf-8')
      .send(status >= 500 ? 'internal error\n' : statusText(status));
  });

  return app;
}
