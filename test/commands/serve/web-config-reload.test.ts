// Reloading --web.config.file while the server runs: a change is read once it has settled and
// applied only when usable; an in-place rewrite, an emptied, invalid or cut-short file never lets
// a request in without credentials. Real sockets on 127.0.0.1; a short settle time so that no test
// waits long (the exporter's is WEB_CONFIG_SETTLE_MS).
import { execFileSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import bcryptjs from 'bcryptjs';
import pino from 'pino';
import type { FastifyInstance } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EncodedPart } from '../../../src/metrics/exposition-parts.js';
import { buildApp } from '../../../src/commands/serve/app.js';
import { WEB_CONFIG_SETTLE_MS, WebSecurity } from '../../../src/commands/serve/web-config/reload.js';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { waitFor } from '../../../synthetic/processes.js';
import { ZOO } from '../../support/trees.js';

const SETTLE_MS = 30;
const ALICE = `alice: ${bcryptjs.hashSync('secret', 4).replace(/^\$2b\$/, '$2y$')}`;
const BOB = `bob: ${bcryptjs.hashSync('other', 4)}`;
const GOOD = `http_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n  ${ALICE}\n`;
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let dir: string;
let file: string;
let app: FastifyInstance | undefined;
let web: WebSecurity | undefined;
let exporter: Exporter | undefined;
let logged: { level: number; msg: string; reason?: string }[];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-reload-'));
  file = path.join(dir, 'web.yml');
  logged = [];
});
afterEach(async () => {
  web?.close();
  await app?.close();
  await exporter?.stop();
  app = web = exporter = undefined;
  rmSync(dir, { recursive: true, force: true });
});

/** A server with the web config in `file` (written from `text` first); its URL. */
async function serve(text: string): Promise<string> {
  writeFileSync(file, text);
  const logger = pino({ level: 'info' }, { write: (line: string) => logged.push(JSON.parse(line)) });
  web = WebSecurity.load(file, logger, { settleMs: SETTLE_MS });
  app = buildApp({
    source: { parts: async () => [new EncodedPart('up 1\n')], takenAt: () => Date.now() },
    telemetryPath: '/metrics',
    maxSnapshotAgeMs: 30_000,
    version: 'test',
    logger,
    authenticate: web.authenticate,
  });
  web.attach(app.server);
  return `${await app.listen({ host: '127.0.0.1', port: 0 })}/metrics`;
}

const status = async (url: string, authorization?: string): Promise<number> =>
  (await fetch(url, authorization ? { headers: { authorization } } : {})).status;

/**
 * Until the web config has read the file as it is now (settled, then applied or refused): a line
 * logged after the first `from` lines. A test whose request noticed the change passes the count
 * from before it: on a busy machine the change can settle and be read before the answer comes.
 */
async function settled(from = logged.length): Promise<void> {
  await waitFor(
    'the change to be read',
    async () => {
      web!.current();
      return logged.length > from ? true : undefined;
    },
    5_000,
    10,
  );
}

/** What the log said about reloads since `from`. */
const reloads = (from = 0) => logged.slice(from).filter((line) => line.msg.startsWith('web config'));

describe('rewrites in place', () => {
  it('hundreds of unauthenticated requests during rewrites in place, some of them slow, get no 200', async () => {
    const url = await serve(GOOD);
    const text = Buffer.from(GOOD);
    const cuts = [0, text.indexOf('basic_auth_users'), text.indexOf('alice') + 3, text.length - 5];
    let writing = true;
    const answers: number[] = [];
    const asking = (async () => {
      while (writing) answers.push(await status(url));
    })();
    for (let i = 0; i < 300; i++) {
      // What `cat web.yml > web.yml.tmp; cat web.yml.tmp > web.yml` and editors do: truncate, then write.
      const cut = cuts[i % cuts.length]!;
      const fd = openSync(file, 'w');
      writeSync(fd, text, 0, cut);
      // Every 25th writer stalls past the settle time: the half-written file is read, and refused.
      await new Promise((resolve) => (i % 25 === 0 ? setTimeout(resolve, 3 * SETTLE_MS) : setImmediate(resolve)));
      writeSync(fd, text, cut, text.length - cut);
      closeSync(fd);
      if (i % 10 === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    writing = false;
    await asking;
    expect(answers.length).toBeGreaterThanOrEqual(300);
    expect(answers.filter((answer) => answer !== 401)).toEqual([]);
    // The stalled half-written files were refused, each with one line; the whole file is in force.
    const refused = reloads().filter((line) => line.level === 50);
    expect(refused.length).toBeGreaterThan(0);
    expect(refused.length).toBeLessThanOrEqual(12);
    await waitFor('the whole file to be in force', () => (web!.current(), web!.reloadStatus().successful ? true : undefined), 5_000, 10);
    expect(await status(url, basic('alice', 'secret'))).toBe(200);
  });
});

describe('a change that cannot be used keeps the previous configuration', () => {
  it.each([
    ['emptied (: > web.yml)', '', /the file is empty/],
    ['only a comment', '# being rewritten\n', /the file is empty/],
    ['not YAML', 'basic_auth_users:\n  alice: "x\n', /:3: not valid YAML/],
    ['a password in clear', 'basic_auth_users:\n  alice: secret\n', /:2: the password of "alice" must be a bcrypt hash/],
    [
      'cut short before its users',
      'http_server_config:\n  headers:\n    X-Frame-Options: deny\n',
      /lists no basic_auth_users; to turn authentication off, say so with "basic_auth_users: \{\}"/,
    ],
    [
      'cut short after "basic_auth_users:"',
      'http_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n',
      /lists no basic_auth_users/,
    ],
    [
      'turning TLS on',
      `tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\nbasic_auth_users:\n  ${BOB}\n`,
      /turning TLS on or off or changing client_auth_type takes a restart/,
    ],
  ])('%s: auth stays, one line says why, the reload is exported as failed', async (_name, text, reason) => {
    const url = await serve(GOOD);
    const startedAt = web!.reloadStatus().successAt;
    writeFileSync(file, text);
    await settled();
    expect(await status(url)).toBe(401);
    expect(await status(url, basic('alice', 'wrong'))).toBe(401);
    expect(await status(url, basic('alice', 'secret'))).toBe(200);
    const lines = reloads();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 50, msg: 'web config: the changed file is not usable; keeping the previous one' });
    expect(lines[0]!.reason).toMatch(reason);
    expect(web!.reloadStatus()).toEqual({ successful: false, successAt: startedAt });
    // Requests go on without reading it again, or logging again.
    for (let i = 0; i < 5; i++) expect(await status(url)).toBe(401);
    expect(reloads()).toHaveLength(1);
  });

  it('a FIFO in its place is refused without waiting for a writer; a good file after it is applied', async () => {
    const url = await serve(GOOD);
    rmSync(file);
    execFileSync('mkfifo', [file]);
    await settled();
    expect(reloads()[0]!.reason).toBe(`web config file ${file}: is a FIFO, not a regular file`);
    // Not frozen: requests are answered with the configuration read before.
    expect(await status(url)).toBe(401);
    expect(await status(url, basic('alice', 'secret'))).toBe(200);
    rmSync(file);
    writeFileSync(`${file}.new`, GOOD.replace(ALICE, BOB));
    renameSync(`${file}.new`, file);
    await settled();
    expect(web!.reloadStatus().successful).toBe(true);
    expect(await status(url, basic('bob', 'other'))).toBe(200);
  });

  it('a file larger than 4 MiB is refused at once, unparsed', async () => {
    const url = await serve(GOOD);
    writeFileSync(`${file}.new`, `basic_auth_users:\n${'#'.repeat(50 * 1000 * 1000)}\n`);
    renameSync(`${file}.new`, file);
    const started = performance.now();
    await settled();
    expect(performance.now() - started).toBeLessThan(SETTLE_MS + 1_000);
    expect(reloads()[0]!.reason).toMatch(/^web config file .*: is 47\.7 MiB, more than the 4\.0 MiB a web config file may have$/);
    expect(await status(url, basic('alice', 'secret'))).toBe(200);
  });

  it('20 001 users are read in time slices: requests are answered while they are parsed', async () => {
    const url = await serve(GOOD);
    const hash = ALICE.slice('alice: '.length);
    const many = `basic_auth_users:\n  ${ALICE}\n${Array.from({ length: 20_000 }, (_, i) => `  user${i}: ${hash}\n`).join('')}`;
    writeFileSync(`${file}.new`, many);
    renameSync(`${file}.new`, file);
    // The longest time the event loop was held, from a timer that asks to run every millisecond.
    let longest = 0;
    let last = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      longest = Math.max(longest, now - last);
      last = now;
    }, 1);
    try {
      await settled();
    } finally {
      clearInterval(ticker);
    }
    expect(reloads().at(-1)).toMatchObject({ msg: 'web config reloaded', users: 20_001 });
    expect(await status(url, basic('alice', 'secret'))).toBe(200);
    // The whole parse is about a second on a loaded test machine; the longest block, composing
    // the document's nodes, a small part of it.
    expect(longest).toBeLessThan(400);
  });

  it('a file that disappears is refused; its return is applied', async () => {
    const url = await serve(GOOD);
    rmSync(file);
    await settled();
    expect(reloads()[0]!.reason).toMatch(/cannot be read: ENOENT/);
    expect(await status(url)).toBe(401);
    writeFileSync(`${file}.new`, GOOD.replace(ALICE, BOB));
    renameSync(`${file}.new`, file);
    await settled();
    expect(web!.reloadStatus().successful).toBe(true);
    expect(await status(url, basic('bob', 'other'))).toBe(200);
  });
});

describe('a good change applies', () => {
  it('new users in, old ones out, once the file has settled; the success is exported with its time', async () => {
    const url = await serve(GOOD);
    expect(await status(url, basic('alice', 'secret'))).toBe(200);
    const before = web!.reloadStatus();
    const lines = logged.length;
    writeFileSync(file, GOOD.replace(ALICE, BOB));
    // Not before it has settled: the request that noticed the change was answered by the old file.
    expect(await status(url, basic('alice', 'secret'))).toBe(200);
    await settled(lines);
    expect(await status(url, basic('bob', 'other'))).toBe(200);
    expect(await status(url, basic('alice', 'secret'))).toBe(401);
    expect(reloads()).toMatchObject([{ level: 30, msg: 'web config reloaded' }]);
    expect(web!.reloadStatus().successful).toBe(true);
    expect(web!.reloadStatus().successAt).toBeGreaterThanOrEqual(before.successAt);
    expect(web!.reloadStatus()).not.toBe(before);
  });

  it('authentication goes only when the file says `basic_auth_users: {}`', async () => {
    const url = await serve(GOOD);
    writeFileSync(file, 'http_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users: {}\n');
    await settled();
    const open = await fetch(url);
    expect(open.status).toBe(200);
    expect(open.headers.get('x-frame-options')).toBe('deny');
    // And comes back with users.
    writeFileSync(file, GOOD);
    await settled();
    expect(await status(url)).toBe(401);
  });

  it('a failed reload followed by a good one is exported as successful again', async () => {
    const url = await serve(GOOD);
    writeFileSync(file, '');
    await settled();
    expect(web!.reloadStatus().successful).toBe(false);
    writeFileSync(file, GOOD.replace(ALICE, `${ALICE}\n  ${BOB}`));
    await settled();
    expect(web!.reloadStatus().successful).toBe(true);
    expect(await status(url, basic('bob', 'other'))).toBe(200);
  });
});

describe('in /metrics', () => {
  const value = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1]);

  it('infiniband_exporter_web_config_last_reload_successful and its timestamp, only with --web.config.file', async () => {
    exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', '--web.disable-exporter-metrics']);
    const plain = (await exporter.app.inject({ url: '/metrics' })).body;
    expect(plain).not.toContain('web_config');
    await exporter.stop();

    writeFileSync(file, GOOD);
    const startedAt = Date.now() / 1000;
    exporter = exporterFromFlags([
      '--path.sysfs',
      ZOO,
      '--no-collector.diag',
      '--web.disable-exporter-metrics',
      `--web.config.file=${file}`,
    ]);
    const scrape = async () => (await exporter!.app.inject({ url: '/metrics', headers: { authorization: basic('alice', 'secret') } })).body;
    const first = await scrape();
    expect(first).toContain('# TYPE infiniband_exporter_web_config_last_reload_successful gauge\n');
    expect(value(first, 'infiniband_exporter_web_config_last_reload_successful')).toBe(1);
    const timestamp = value(first, 'infiniband_exporter_web_config_last_reload_success_timestamp_seconds');
    expect(timestamp).toBeGreaterThanOrEqual(Math.floor(startedAt) - 1);
    expect(timestamp).toBeLessThanOrEqual(Date.now() / 1000);

    writeFileSync(file, '');
    const failed = await waitFor(
      'the emptied file to be refused',
      async () => {
        const text = await scrape();
        return value(text, 'infiniband_exporter_web_config_last_reload_successful') === 0 ? text : undefined;
      },
      10 * WEB_CONFIG_SETTLE_MS,
      100,
    );
    expect(value(failed, 'infiniband_exporter_web_config_last_reload_success_timestamp_seconds')).toBe(timestamp);
    expect((await exporter.app.inject({ url: '/metrics' })).statusCode).toBe(401);
  });
});
