// Slowloris against the server's limits, over real sockets on 127.0.0.1 (issue 31): many half-sent
// requests from one address must not lock an authorised scrape out, and must not stay open past
// the header deadline. The scrape's 1 s bound is the contract; everything else is counts.
import { request } from 'node:http';
import net from 'node:net';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { EncodedPart } from '../../../src/metrics/exposition-parts.js';
import { buildApp, SERVER_LIMITS, type AppOptions } from '../../../src/commands/serve/app.js';
import { DEFAULT_MAX_CONNECTIONS_PER_CLIENT } from '../../../src/commands/serve/connection-cap.js';
import { waitFor } from '../../../synthetic/processes.js';

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function listening(overrides: Partial<AppOptions>): Promise<{ server: FastifyInstance; port: number }> {
  const server = buildApp({
    source: { parts: async () => [new EncodedPart('up 1\n')], takenAt: () => Date.now() },
    telemetryPath: '/metrics',
    maxSnapshotAgeMs: 30_000,
    version: 'test',
    logger: pino({ level: 'silent' }),
    ...overrides,
  });
  cleanups.push(() => server.close());
  await server.listen({ host: '127.0.0.1', port: 0 });
  return { server, port: (server.server.address() as net.AddressInfo).port };
}

/** `count` connections that send a request line and one header, and never the rest. */
function slowloris(port: number, count: number): { sockets: net.Socket[]; opened: Promise<void> } {
  const sockets: net.Socket[] = [];
  const opened = Promise.all(
    Array.from(
      { length: count },
      () =>
        new Promise<void>((resolve) => {
          const socket = net.connect(port, '127.0.0.1', () => {
            socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n');
            resolve();
          });
          socket.on('error', () => resolve());
          socket.on('close', () => resolve());
          sockets.push(socket);
        }),
    ),
  ).then(() => undefined);
  cleanups.push(() => sockets.forEach((socket) => socket.destroy()));
  return { sockets, opened };
}

function scrape(port: number): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/metrics', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode!, ms: performance.now() - started }));
    });
    req.on('error', reject);
    req.end();
  });
}

const openCount = (server: FastifyInstance) =>
  new Promise<number>((resolve) => server.server.getConnections((_error, count) => resolve(count)));

describe('slowloris from one address', () => {
  it('600 half-sent connections against a cap of 100: a scrape is still answered within 1 s', async () => {
    let closed = 0;
    const { server, port } = await listening({
      maxConnections: 100,
      maxConnectionsPerClient: 1000,
      onConnectionRefused: () => (closed += 1),
    });
    const attack = slowloris(port, 600);
    await attack.opened;
    await waitFor('the server to have seen every connection', () => (closed >= 500 ? true : undefined));
    expect(await openCount(server)).toBeLessThanOrEqual(100);
    const answer = await scrape(port);
    expect(answer.status).toBe(200);
    expect(answer.ms).toBeLessThan(1000);
    // The scrape took the place of the oldest half-sent connection.
    expect(closed).toBe(501);
  });

  it(`keeps one address to ${DEFAULT_MAX_CONNECTIONS_PER_CLIENT} connections by default, and the scrape still gets in`, async () => {
    let closed = 0;
    const { server, port } = await listening({ maxConnections: 512, onConnectionRefused: () => (closed += 1) });
    const attack = slowloris(port, 200);
    await attack.opened;
    await waitFor('the server to have seen every connection', () =>
      closed >= 200 - DEFAULT_MAX_CONNECTIONS_PER_CLIENT ? true : undefined,
    );
    expect(await openCount(server)).toBe(DEFAULT_MAX_CONNECTIONS_PER_CLIENT);
    const answer = await scrape(port);
    expect(answer.status).toBe(200);
    expect(answer.ms).toBeLessThan(1000);
    // The oldest half-sent connections are the ones closed.
    expect(attack.sockets.slice(0, 100).some((socket) => !socket.destroyed)).toBe(false);
  });
});

describe('the header deadline', () => {
  it('closes a half-sent connection with 408 within a second after headersTimeout, under the production limits', async () => {
    // Node's own check of headersTimeout runs only every connectionsCheckingInterval (30 s here):
    // what keeps the promise is guardSlowClients (slow-clients.ts).
    const { server, port } = await listening({});
    expect(server.server.headersTimeout).toBe(SERVER_LIMITS.headersTimeout);
    const started = performance.now();
    const socket = net.connect(port, '127.0.0.1', () => socket.write('GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n'));
    cleanups.push(() => void socket.destroy());
    let received = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (received += chunk));
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.once('close', resolve));
    const seconds = (performance.now() - started) / 1000;
    expect(received).toMatch(/^HTTP\/1\.1 408 /);
    expect(seconds).toBeGreaterThanOrEqual(SERVER_LIMITS.headersTimeout / 1000 - 0.1);
    expect(seconds).toBeLessThan(SERVER_LIMITS.headersTimeout / 1000 + 1.5);
  }, 15_000);
});
