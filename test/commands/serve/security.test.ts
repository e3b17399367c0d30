// The HTTP surface against an attacker, over real sockets on 127.0.0.1: authentication before
// routing, a flood of wrong passwords beside an authorised scrape, idle TLS handshakes, and the
// connection cap. Orderings and counts are asserted, never durations.
import { execFileSync, spawn } from 'node:child_process';
import { METHODS, request } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcryptjs from 'bcryptjs';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { EncodedPart } from '../../../src/metrics/exposition-parts.js';
import { buildApp, TLS_LIMITS, type AppOptions } from '../../../src/commands/serve/app.js';
import { loadBcrypt, type BcryptCompare, type PasswordChecks } from '../../../src/commands/serve/password-checks.js';
import { WebSecurity } from '../../../src/commands/serve/web-config/reload.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { waitFor } from '../../../synthetic/processes.js';
import { requireSystemTools } from '../../support/system.js';
import { ZOO } from '../../support/trees.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-security-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const cleanups: (() => Promise<unknown> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

function app(overrides: Partial<AppOptions> = {}): FastifyInstance {
  const built = buildApp({
    source: { parts: async () => [new EncodedPart('up 1\n')], takenAt: () => Date.now() },
    telemetryPath: '/metrics',
    maxSnapshotAgeMs: 30_000,
    version: 'test',
    logger: pino({ level: 'silent' }),
    ...overrides,
  });
  cleanups.push(() => built.close());
  return built;
}

/** A server with basic auth for alice (bcrypt of `cost`); its port and its password checks. */
async function secured(
  cost: number,
  users = `  alice: ${bcryptjs.hashSync('secret', cost)}\n`,
  compare?: BcryptCompare,
): Promise<{ port: number; passwords: PasswordChecks }> {
  const file = path.join(dir, `web-${cost}.yml`);
  writeFileSync(file, `basic_auth_users:\n${users}`);
  const web = WebSecurity.load(file, pino({ level: 'silent' }), compare ? { compare } : {});
  cleanups.push(() => web.close());
  const server = app({ authenticate: web.authenticate });
  web.attach(server.server);
  await server.listen({ host: '127.0.0.1', port: 0 });
  return { port: (server.server.address() as net.AddressInfo).port, passwords: web.passwords };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function ask(port: number, method: string, url: string, headers: Record<string, string> = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path: url, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A raw connection; `closed` resolves with what the server sent before it closed. */
async function connect(port: number): Promise<{ socket: net.Socket; closed: Promise<string> }> {
  const socket = net.connect(port, '127.0.0.1');
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let received = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (received += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(received)));
  cleanups.push(() => void socket.destroy());
  return { socket, closed };
}

describe('authentication before routing', () => {
  const PATHS = [
    '/',
    '/metrics',
    '/metrics/',
    '/healthz',
    '/ready',
    '/nope',
    '/admin',
    '/metrics?name[]=x',
    '/metrics%zz',
    '//etc/passwd',
    '*',
  ];
  // CONNECT opens a tunnel in Node's server, not a request.
  const methods = METHODS.filter((method) => method !== 'CONNECT');

  it('every method on every path gets 401 without credentials, and nothing that tells the routes apart', async () => {
    const { port } = await secured(4);
    for (const method of methods) {
      for (const url of PATHS) {
        const answer = await ask(port, method, url);
        expect(answer.status, `${method} ${url}`).toBe(401);
        expect(answer.headers['www-authenticate'], `${method} ${url}`).toBe('Basic realm="infiniband-exporter", charset="UTF-8"');
        expect(answer.headers.allow, `${method} ${url}`).toBeUndefined();
        expect(answer.headers['content-type'], `${method} ${url}`).toBe('text/plain; charset=utf-8');
        expect(answer.body, `${method} ${url}`).toBe(method === 'HEAD' ? '' : 'unauthorized\n');
      }
    }
  });

  it('also with a wrong password, and with a POST carrying a body', async () => {
    const { port } = await secured(4);
    for (const url of ['/metrics', '/nope']) {
      expect(
        (
          await ask(port, 'POST', url, {
            authorization: basic('alice', 'wrong'),
            'content-type': 'application/json',
            'content-length': '2',
          })
        ).status,
        url,
      ).toBe(401);
      expect((await ask(port, 'GET', url, { authorization: basic('mallory', 'secret') })).status, url).toBe(401);
    }
  });

  it('with the right credentials, routing answers as without authentication: 405, 404, 400', async () => {
    const { port } = await secured(4);
    const authorization = basic('alice', 'secret');
    expect((await ask(port, 'GET', '/metrics', { authorization })).status).toBe(200);
    expect((await ask(port, 'GET', '/healthz', { authorization })).status).toBe(200);
    const post = await ask(port, 'POST', '/metrics', { authorization });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe('GET, HEAD');
    expect((await ask(port, 'GET', '/nope', { authorization })).status).toBe(404);
    expect((await ask(port, 'GET', '/metrics%zz', { authorization })).status).toBe(400);
  });
});

/**
 * `count` requests with wrong passwords for alice from another process (so that they arrive as
 * an attacker's would, not paced by this process's event loop), each connection closed as soon as
 * its request is written or kept open. Resolves once all are written; the process is stopped by its
 * PID after the test.
 */
async function flood(port: number, count: number, mode: 'close' | 'keep'): Promise<void> {
  const script = `
    const net = require('node:net');
    let written = 0;
    for (let i = 0; i < ${count}; i++) {
      const socket = net.connect(${port}, '127.0.0.1', () => {
        const request = 'GET /metrics HTTP/1.1\\r\\nHost: a\\r\\nAuthorization: Basic ' + Buffer.from('alice:guess-' + i).toString('base64') + '\\r\\n\\r\\n';
        socket.${mode === 'close' ? 'end' : 'write'}(request, () => { if (++written === ${count}) console.log('written'); });
      });
      socket.on('error', () => {});
      socket.on('data', () => {});
    }
    setInterval(() => {}, 1000);
  `;
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
  cleanups.push(() => {
    if (child.exitCode === null) process.kill(child.pid!, 'SIGKILL');
  });
  await new Promise<void>((resolve, reject) => {
    child.stdout.once('data', () => resolve());
    child.once('exit', (code) => reject(new Error(`the flood process ended with ${code}`)));
  });
}

describe('a flood of wrong passwords', () => {
  // Cost 10, as htpasswd -nBC 10 and exporter-toolkit's docs make them: each check takes tens of ms.
  const COST = 10;
  const FLOOD = 100;

  /** A server whose password checks are recorded in the order they start. */
  async function recorded(): Promise<{ port: number; passwords: PasswordChecks; started: string[] }> {
    const started: string[] = [];
    const bcrypt = loadBcrypt();
    const { port, passwords } = await secured(
      COST,
      `  alice: ${bcryptjs.hashSync('secret', COST)}\n`,
      (password, hash) => (started.push(password), bcrypt(password, hash)),
    );
    return { port, passwords, started };
  }
  const seen = (passwords: PasswordChecks) => passwords.counts.run + passwords.counts.skipped + passwords.waitingCount;

  it('kept open: an authorised scrape with credentials not yet checked is checked next, not after the flood', async () => {
    const { port, passwords, started } = await recorded();
    await flood(port, FLOOD, 'keep');
    await waitFor('the flood to reach the server', () => (seen(passwords) >= FLOOD ? true : undefined), 20_000, 5);
    const before = started.length;
    const scrape = await ask(port, 'GET', '/metrics', { authorization: basic('alice', 'secret') });
    expect(scrape.status).toBe(200);
    // After the checks under way while its request was on its way (this process writes it between
    // two checks), not after the flood's ${FLOOD}.
    expect(started.indexOf('secret') - before).toBeLessThanOrEqual(4);
    expect(passwords.waitingCount).toBeGreaterThan(FLOOD - 10);
  });

  it('each connection closed at once: their checks are skipped, and the scrape is answered', async () => {
    const { port, passwords, started } = await recorded();
    await flood(port, FLOOD, 'close');
    await waitFor(
      'the flood to reach the server',
      () => (passwords.counts.run + passwords.counts.skipped >= FLOOD ? true : undefined),
      20_000,
      5,
    );
    expect((await ask(port, 'GET', '/metrics', { authorization: basic('alice', 'secret') })).status).toBe(200);
    expect(passwords.counts.skipped).toBeGreaterThan(FLOOD - 10);
    expect(started.filter((password) => password !== 'secret').length).toBeLessThan(10);
  });

  it('Prometheus, whose credentials were checked before, is served during a flood without a check of its own', async () => {
    const { port, passwords, started } = await recorded();
    expect((await ask(port, 'GET', '/metrics', { authorization: basic('alice', 'secret') })).status).toBe(200);
    await flood(port, FLOOD, 'keep');
    await waitFor('the flood to be checked', () => (passwords.counts.run >= 3 ? true : undefined), 20_000, 5);
    const before = started.length;
    expect((await ask(port, 'GET', '/metrics', { authorization: basic('alice', 'secret') })).status).toBe(200);
    // Served between two checks of the flood (this process writes it between two of them).
    expect(started.length - before).toBeLessThanOrEqual(4);
    expect(started.filter((password) => password === 'secret')).toHaveLength(1);
  });
});

const tools = requireSystemTools('security', { openssl: 'openssl' });

describe.skipIf(tools.skipReason !== undefined)('TLS handshake timeout', () => {
  let cert: string;
  let key: string;
  beforeAll(() => {
    execFileSync(
      tools.paths.openssl!,
      [
        'req',
        '-x509',
        '-newkey',
        'ec',
        '-pkeyopt',
        'ec_paramgen_curve:P-256',
        '-nodes',
        '-days',
        '2',
        '-subj',
        '/CN=localhost',
        '-keyout',
        'tls.key',
        '-out',
        'tls.crt',
      ],
      { cwd: dir, stdio: 'pipe' },
    );
    cert = readFileSync(path.join(dir, 'tls.crt'), 'utf8');
    key = readFileSync(path.join(dir, 'tls.key'), 'utf8');
  });

  it("is 5 s on an HTTPS server, Node's 120 s default overridden", async () => {
    const server = app({ serverOptions: { https: { cert, key } } });
    const symbol = Object.getOwnPropertySymbols(server.server).find((candidate) => candidate.description === 'handshake-timeout')!;
    expect((server.server as unknown as Record<symbol, number>)[symbol]).toBe(TLS_LIMITS.handshakeTimeout);
    expect(TLS_LIMITS.handshakeTimeout).toBe(5_000);
  });

  it('closes connections that never start the handshake, or stop in the middle of it', async () => {
    // A short limit, so that the test does not wait 5 s; the mechanism is the same.
    const server = app({ serverOptions: { https: { cert, key, handshakeTimeout: 200 } } });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.server.address() as net.AddressInfo).port;
    const silent = await connect(port);
    const stalled = await connect(port);
    // The first bytes of a TLS record (handshake, version 3.1), then nothing.
    stalled.socket.write(Buffer.from([0x16, 0x03, 0x01, 0x00, 0xf0, 0x01]));
    expect(await silent.closed).toBe('');
    await stalled.closed;
    // And a client that does finish its handshake is served.
    const answer = await new Promise<number>((resolve, reject) => {
      const req = httpsRequest({ host: '127.0.0.1', port, path: '/metrics', ca: cert, servername: 'localhost', agent: false }, (res) => {
        res.resume();
        resolve(res.statusCode!);
      });
      req.on('error', reject);
      req.end();
    });
    expect(answer).toBe(200);
  });

  it('at the connection cap, a connection in its handshake is closed for a newcomer, and one in a request is not', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let waiting = 0;
    const server = app({
      maxConnections: 2,
      serverOptions: { https: { cert, key } },
      source: {
        parts: async () => {
          waiting += 1;
          await gate;
          return [new EncodedPart('up 1\n')];
        },
        takenAt: () => Date.now(),
      },
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.server.address() as net.AddressInfo).port;
    const scrape = () =>
      new Promise<number>((resolve, reject) => {
        const req = httpsRequest({ host: '127.0.0.1', port, path: '/metrics', ca: cert, servername: 'localhost', agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
        req.end();
      });
    // One request held in the app (its headers arrived over TLS), one connection silent in its handshake.
    const busy = scrape();
    await waitFor('the request to be in the app', () => (waiting === 1 ? true : undefined));
    const silent = await connect(port);
    await waitFor(
      'both connections to be accepted',
      () =>
        new Promise<true | undefined>((resolve) =>
          server.server.getConnections((_error, count) => resolve(count === 2 ? true : undefined)),
        ),
    );
    const next = scrape();
    expect(await silent.closed).toBe('');
    await waitFor('the second request to be in the app', () => (waiting === 2 ? true : undefined));
    release();
    expect(await Promise.all([busy, next])).toEqual([200, 200]);
  });
});

describe('the connection cap', () => {
  type Line = { msg: string; refused: number; maxConnections: number; maxConnectionsPerClient: number };
  const logTo = (logged: Line[]) => pino({ level: 'warn' }, { write: (line: string) => logged.push(JSON.parse(line)) });
  const halfSent = async (port: number) => {
    const connection = await connect(port);
    connection.socket.write('GET /metrics HTTP/1.1\r\nHost: a\r\n');
    return connection;
  };
  const connections = (server: FastifyInstance) =>
    new Promise<number>((resolve) => server.server.getConnections((_error, count) => resolve(count)));

  it('at --web.max-connections closes the connection waiting longest for its headers, not the newcomer; counts and logs it', async () => {
    const logged: Line[] = [];
    let refused = 0;
    const server = app({
      maxConnections: 2,
      maxConnectionsPerClient: 100,
      onConnectionRefused: () => (refused += 1),
      logger: logTo(logged),
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.server.address() as net.AddressInfo).port;
    const first = await halfSent(port);
    await waitFor('the first connection to be accepted', async () => ((await connections(server)) === 1 ? true : undefined));
    const second = await halfSent(port);
    await waitFor('both connections to be accepted', async () => ((await connections(server)) === 2 ? true : undefined));
    expect((await ask(port, 'GET', '/metrics')).status).toBe(200);
    expect(await first.closed).toBe('');
    expect(second.socket.destroyed).toBe(false);
    expect(refused).toBe(1);
    expect(logged).toEqual([
      expect.objectContaining({ msg: 'closing connections: --web.max-connections are open', refused: 1, maxConnections: 2 }),
    ]);
  });

  it('refuses the newcomer when every open connection is in a request, and serves again once they end', async () => {
    let refused = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let waiting = 0;
    const server = app({
      maxConnections: 2,
      onConnectionRefused: () => (refused += 1),
      source: {
        parts: async () => {
          waiting += 1;
          await gate;
          return [new EncodedPart('up 1\n')];
        },
        takenAt: () => Date.now(),
      },
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.server.address() as net.AddressInfo).port;
    const busy = [ask(port, 'GET', '/metrics'), ask(port, 'GET', '/metrics')];
    await waitFor('both requests to be in the app', () => (waiting === 2 ? true : undefined));
    const newcomer = await connect(port);
    newcomer.socket.write('GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n');
    expect(await newcomer.closed).toBe('');
    expect(refused).toBe(1);
    release();
    expect((await Promise.all(busy)).map((answer) => answer.status)).toEqual([200, 200]);
    expect((await ask(port, 'GET', '/metrics')).status).toBe(200);
  });

  it("at --web.max-connections-per-client closes that address's connection waiting longest for its headers", async () => {
    const logged: Line[] = [];
    let refused = 0;
    const server = app({
      maxConnections: 100,
      maxConnectionsPerClient: 3,
      onConnectionRefused: () => (refused += 1),
      logger: logTo(logged),
    });
    await server.listen({ host: '127.0.0.1', port: 0 });
    const port = (server.server.address() as net.AddressInfo).port;
    const held = [];
    for (let i = 0; i < 3; i++) {
      held.push(await halfSent(port));
      await waitFor('the connection to be accepted', async () => ((await connections(server)) === i + 1 ? true : undefined));
    }
    expect((await ask(port, 'GET', '/metrics')).status).toBe(200);
    expect(await held[0]!.closed).toBe('');
    expect(held.slice(1).map((connection) => connection.socket.destroyed)).toEqual([false, false]);
    expect(refused).toBe(1);
    expect(logged).toEqual([
      expect.objectContaining({
        msg: 'closing connections: --web.max-connections-per-client are open from one address',
        refused: 1,
        maxConnectionsPerClient: 3,
      }),
    ]);
  });

  it('its closings are in /metrics', async () => {
    const exporter = exporterFromFlags([
      '--path.sysfs',
      ZOO,
      '--no-collector.diag',
      '--web.disable-exporter-metrics',
      '--web.max-connections=1',
    ]);
    cleanups.push(() => exporter.stop());
    await exporter.collectOnce();
    const value = async () =>
      Number(
        /^infiniband_exporter_http_connections_refused_total (\d+)$/m.exec((await exporter.app.inject({ url: '/metrics' })).body)?.[1],
      );
    expect(await value()).toBe(0);
    await exporter.app.listen({ host: '127.0.0.1', port: 0 });
    const port = (exporter.app.server.address() as net.AddressInfo).port;
    const held = await connect(port);
    await waitFor(
      'the connection to be accepted',
      () =>
        new Promise<true | undefined>((resolve) =>
          exporter.app.server.getConnections((_error, count) => resolve(count === 1 ? true : undefined)),
        ),
    );
    const newcomer = await connect(port);
    expect(await held.closed).toBe('');
    newcomer.socket.destroy();
    expect(await value()).toBe(1);
  });
});
