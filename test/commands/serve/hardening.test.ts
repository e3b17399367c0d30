// The HTTP surface against clients that are not Prometheus: methods other than GET and HEAD, large
// or slow requests, requests that make the app fail. Through inject() and over raw sockets.
import net from 'node:net';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ALLOWED_METHODS, SERVER_LIMITS, buildApp, type AppOptions } from '../../../src/commands/serve/app.js';
import type { FastifyInstance } from 'fastify';
import { EncodedPart } from '../../../src/metrics/exposition-parts.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const app of apps.splice(0)) await app.close();
});

const SECRET_PATH = '/srv/secret/infiniband/sys/class/infiniband/mlx5_0/ports/1/state';

function app(overrides: Partial<AppOptions> = {}): FastifyInstance {
  const built = buildApp({
    source: { parts: async () => [new EncodedPart('# HELP x y\n')], takenAt: () => Date.now() },
    telemetryPath: '/metrics',
    maxSnapshotAgeMs: 30_000,
    version: '0.0.0-test',
    logger: pino({ level: 'silent' }),
    ...overrides,
  });
  apps.push(built);
  return built;
}

/** Nothing in a response body that tells about the inside: paths, stack frames, fastify codes, JSON. */
function expectNoInternals(body: string): void {
  expect(body).not.toMatch(/\/srv|\/work|node_modules|\bat .*:\d+|FST_|[{}]|Error:/);
}

describe('methods', () => {
  it.each(['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'] as const)(
    "%s: 405 with Allow on the exporter's paths, 404 elsewhere",
    async (method) => {
      const server = app();
      for (const url of ['/', '/metrics', '/metrics?name[]=x', '/healthz', '/ready']) {
        const response = await server.inject({ method, url });
        expect(response.statusCode, url).toBe(405);
        expect(response.headers.allow).toBe(ALLOWED_METHODS);
        expectNoInternals(response.body);
      }
      for (const url of ['/nope', '/metrics/', '/admin']) {
        const response = await server.inject({ method, url });
        expect(response.statusCode, url).toBe(404);
        expect(response.headers.allow).toBeUndefined();
      }
    },
  );

  it('refuses a POST before reading its body, whatever its size or type', async () => {
    const server = app();
    for (const [type, payload] of [
      ['application/json', `{"a":"${'x'.repeat(1024 * 1024)}"}`],
      ['application/x-unknown', 'x'.repeat(10)],
      ['application/json', '{not json'],
    ]) {
      const response = await server.inject({ method: 'POST', url: '/metrics', headers: { 'content-type': type! }, payload });
      expect(response.statusCode).toBe(405);
      expectNoInternals(response.body);
    }
  });

  it('GET and HEAD still work on every path', async () => {
    const server = app();
    for (const url of ['/', '/metrics', '/healthz', '/ready']) {
      expect((await server.inject({ method: 'GET', url })).statusCode, url).toBe(200);
      const head = await server.inject({ method: 'HEAD', url });
      expect(head.statusCode, url).toBe(200);
      expect(head.body).toBe('');
    }
  });
});

describe('errors say nothing about internals', () => {
  it('a failing scrape is a plain 500 while the log keeps the detail', async () => {
    const logged: string[] = [];
    const logger = pino({ level: 'error' }, { write: (line: string) => logged.push(line) });
    const server = app({
      logger,
      source: {
        parts: async () => {
          throw new Error(`EACCES: permission denied, open '${SECRET_PATH}'`);
        },
        takenAt: () => undefined,
      },
    });
    const response = await server.inject({ url: '/metrics' });
    expect(response.statusCode).toBe(500);
    expect(response.body).toBe('internal error\n');
    expect(logged.join('')).toContain(SECRET_PATH);
  });

  it('a URL that cannot be decoded is a plain 400 that does not echo it', async () => {
    const response = await app().inject({ url: '/metrics%zz<script>' });
    expect(response.statusCode).toBe(400);
    expect(response.body).toBe('bad request\n');
  });

  it('a GET with a broken body is answered without parsing messages', async () => {
    const response = await app().inject({
      method: 'GET',
      url: '/metrics',
      headers: { 'content-type': 'application/json' },
      payload: '{"broken',
    });
    expectNoInternals(response.body);
    expect([200, 400, 413, 415]).toContain(response.statusCode);
  });
});

describe('limits of the server', () => {
  // maxHeaderSize is not readable back: the 431 tests below send less than Node's own 16 KiB.
  it('are set on the server by default', async () => {
    const server = app();
    await server.listen({ host: '127.0.0.1', port: 0 });
    expect(server.server.headersTimeout).toBe(SERVER_LIMITS.headersTimeout);
    expect(server.server.requestTimeout).toBeGreaterThan(0);
  });
});

/** Open a raw connection to the app; `received` collects what the server sent until it closed. */
async function connect(server: FastifyInstance): Promise<{ socket: net.Socket; closed: Promise<string> }> {
  const address = server.server.address() as net.AddressInfo;
  const socket = net.connect(address.port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  socket.on('error', () => undefined);
  return { socket, closed };
}

describe('over a raw socket', () => {
  // Short deadlines so the test does not wait the production 5 s; the mechanism is the same: Node's
  // own check stays at 30 s, so what cuts the client off within a second is guardSlowClients.
  const quick = (): FastifyInstance => app({ serverOptions: { requestTimeout: 2_000, http: { headersTimeout: 300 } } });

  it('cuts off a client whose headers never finish (slowloris) with 408', async () => {
    const server = quick();
    await server.listen({ host: '127.0.0.1', port: 0 });
    const { socket, closed } = await connect(server);
    socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    let sent = 0;
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write(`X-Slow-${sent++}: still coming\r\n`);
    }, 20);
    try {
      const received = await closed;
      expect(received).toMatch(/^HTTP\/1\.1 408 /);
      expect(received.split('\r\n\r\n')[1]).toBe('request timeout\n');
    } finally {
      clearInterval(drip);
    }
  });

  it("cuts off a kept-alive client whose next request's headers never finish, but not an idle one", async () => {
    const server = quick();
    await server.listen({ host: '127.0.0.1', port: 0 });
    const idle = await connect(server);
    idle.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    const slow = await connect(server);
    slow.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await new Promise((resolve) => setTimeout(resolve, 100));
    slow.socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    let sent = 0;
    const drip = setInterval(() => {
      if (!slow.socket.destroyed) slow.socket.write(`X-Slow-${sent++}: still coming\r\n`);
    }, 20);
    try {
      const received = await slow.closed;
      const responses = received.split(/(?=HTTP\/1\.1 )/);
      expect(responses.map((response) => response.split(' ', 2)[1])).toEqual(['200', '408']);
      // The idle connection is left to keepAliveTimeout (5 s): no 408 was written on it.
      expect(idle.socket.destroyed).toBe(false);
    } finally {
      clearInterval(drip);
      idle.socket.destroy();
    }
  });

  it('cuts off a client that connects and says nothing', async () => {
    const server = quick();
    await server.listen({ host: '127.0.0.1', port: 0 });
    const { closed } = await connect(server);
    // Node closes an idle connection without a word, or with a 408: either way it is gone.
    const received = await closed;
    expect(received === '' || received.startsWith('HTTP/1.1 408 ')).toBe(true);
  });

  it.each([
    ['one huge header', `GET /metrics HTTP/1.1\r\nHost: a\r\nX-Big: ${'a'.repeat(SERVER_LIMITS.maxHeaderSize)}\r\n\r\n`],
    [
      'many headers',
      `GET /metrics HTTP/1.1\r\nHost: a\r\n${Array.from({ length: 400 }, (_, i) => `X-H${i}: 12345678901234567890\r\n`).join('')}\r\n`,
    ],
    ['a huge URL', `GET /metrics?${'q'.repeat(SERVER_LIMITS.maxHeaderSize)} HTTP/1.1\r\nHost: a\r\n\r\n`],
  ])('answers %s with 431 and closes', async (_name, request) => {
    const server = app();
    await server.listen({ host: '127.0.0.1', port: 0 });
    const { socket, closed } = await connect(server);
    socket.write(request);
    const received = await closed;
    expect(received).toMatch(/^HTTP\/1\.1 431 /);
    expect(received.endsWith('\r\n\r\nrequest header fields too large\n')).toBe(true);
  });

  it('answers a chunked POST that never ends with 405, and keeps serving', async () => {
    const server = app();
    await server.listen({ host: '127.0.0.1', port: 0 });
    const { socket, closed } = await connect(server);
    socket.write(
      'POST /metrics HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n400\r\n' +
        'x'.repeat(1024) +
        '\r\n',
    );
    const first = await new Promise<string>((resolve) => socket.once('data', (chunk: string) => resolve(chunk)));
    expect(first).toMatch(/^HTTP\/1\.1 405 /);
    expect(first).toMatch(/\r\nallow: GET, HEAD\r\n/i);
    socket.destroy();
    await closed;
    const address = server.server.address() as net.AddressInfo;
    expect((await fetch(`http://127.0.0.1:${address.port}/metrics`)).status).toBe(200);
  });
});
