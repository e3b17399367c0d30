// --web.config.file: strict parsing, then a real HTTPS server with basic auth, client
// certificates and certificate rotation, driven by Node's TLS client with openssl-made certificates;
// promtool checks the shipped example.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import bcrypt from 'bcryptjs';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from '../../../src/config/errors.js';
import type { Exporter } from '../../../src/commands/serve/exporter.js';
import { parseWebConfigText } from '../../../src/commands/serve/web-config/parse.js';
import { buildOnce, MAIN, PROJECT } from '../../support/built.js';
import { exporterFromFlags } from '../../support/exporter.js';
import { waitFor } from '../../../synthetic/processes.js';
import { requireSystemTools } from '../../support/system.js';
import { ZOO } from '../../support/trees.js';

const EXAMPLE = path.join(PROJECT, 'deploy/web-config.example.yml');
/** Cost 4 keeps the suite fast; `$2y$` is what htpasswd writes. */
const htpasswd = (password: string): string => bcrypt.hashSync(password, 4).replace(/^\$2b\$/, '$2y$');

function parseError(text: string): string {
  try {
    parseWebConfigText(text, '/etc/ibx/web.yml');
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    return (error as Error).message;
  }
  throw new Error('parsed without an error');
}

describe('parsing', () => {
  it("reads every supported key, defaults to TLS 1.2 and resolves files against the file's folder", () => {
    const hash = htpasswd('secret');
    const config = parseWebConfigText(
      [
        'tls_server_config:',
        '  cert_file: tls/exporter.crt',
        '  key_file: /keys/exporter.key',
        '  client_auth_type: RequireAndVerifyClientCert',
        '  client_ca_file: ca.crt',
        '  client_allowed_sans: [prometheus.example.org]',
        '  max_version: TLS13',
        '  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]',
        '  prefer_server_cipher_suites: true',
        '  curve_preferences: [X25519, CurveP256]',
        'http_server_config:',
        '  http2: false',
        '  headers: {X-Frame-Options: deny}',
        'basic_auth_users:',
        `  alice: ${hash}`,
      ].join('\n'),
      '/etc/ibx/web.yml',
    );
    expect(config.tls).toEqual({
      cert: { file: '/etc/ibx/tls/exporter.crt' },
      key: { file: '/keys/exporter.key' },
      clientAuth: 'RequireAndVerifyClientCert',
      clientCa: { file: '/etc/ibx/ca.crt' },
      clientAllowedSans: ['prometheus.example.org'],
      minVersion: 'TLSv1.2',
      maxVersion: 'TLSv1.3',
      ciphers: 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256',
      honorCipherOrder: true,
      ecdhCurve: 'X25519:P-256',
    });
    expect(config.headers).toEqual({ 'X-Frame-Options': 'deny' });
    expect([...config.users]).toEqual([['alice', hash]]);
  });

  it('empty sections or {} mean plain HTTP without authentication; only `basic_auth_users: {}` says "no users" in so many words', () => {
    const plain = { tls: undefined, users: new Map(), usersExplicitlyNone: false, headers: {} };
    expect(parseWebConfigText('{}\n', 'web.yml')).toEqual(plain);
    expect(parseWebConfigText('tls_server_config: {}\nbasic_auth_users:\n', 'web.yml')).toEqual(plain);
    expect(parseWebConfigText('basic_auth_users: {}\n', 'web.yml')).toEqual({ ...plain, usersExplicitlyNone: true });
  });

  it.each(['', '\n\n', '# nothing yet\n', '---\n'])('an empty file (%j) is an error, not a request to turn authentication off', (text) => {
    expect(parseError(text)).toBe(
      'web config file /etc/ibx/web.yml: the file is empty; for plain HTTP without authentication write {} (or leave out --web.config.file)',
    );
  });

  it.each([
    [
      'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  certfile: b.crt\n',
      /^web config file \/etc\/ibx\/web.yml:4: unknown key "tls_server_config.certfile", expected one of: tls_server_config.cert_file, /,
    ],
    [
      'basic_auth_users: {}\nweb_config: 1\n',
      /^web config file \/etc\/ibx\/web.yml:2: unknown key "web_config", expected one of: tls_server_config, http_server_config, basic_auth_users$/,
    ],
    ['basic_auth_users:\n  alice: secret\n', /:2: the password of "alice" must be a bcrypt hash \(\$2y\$…/],
    ['tls_server_config:\n  key_file: a.key\n', /:2: "tls_server_config" needs "cert_file"/],
    [
      'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_auth_type: RequireAndVerifyClientCert\n',
      /:4: client_auth_type RequireAndVerifyClientCert needs "tls_server_config.client_ca_file"/,
    ],
    [
      'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  client_ca_file: ca.crt\n',
      /:4: a client CA is set but client_auth_type is NoClientCert/,
    ],
    [
      'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  min_version: TLS1.2\n',
      /:4: "tls_server_config.min_version" must be one of TLS10, TLS11, TLS12, TLS13, got "TLS1.2"/,
    ],
    [
      'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  min_version: TLS13\n  max_version: TLS12\n',
      /:5: max_version is below min_version/,
    ],
    [
      'tls_server_config:\n  cert_file: a.crt\n  key_file: a.key\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n',
      /:4: unsupported cipher suite TLS_RSA_WITH_RC4_128_SHA; supported: /,
    ],
    ['http_server_config:\n  headers:\n    Server: ibx\n', /:3: unknown key "http_server_config.headers.Server"/],
    ['http_server_config:\n  http2: true\n', /:2: "http_server_config.http2": this exporter serves HTTP\/1.1 only/],
    ['rate_limit:\n  interval: 1s\n', /:1: "rate_limit" is not supported/],
    ['basic_auth_users: [alice]\n', /:1: "basic_auth_users" must be a mapping, got a list/],
    ['basic_auth_users:\n  alice: "x\n', /^web config file \/etc\/ibx\/web.yml:3: not valid YAML: Missing closing "quote$/],
  ])('%j', (text, message) => {
    expect(parseError(text)).toMatch(message);
  });

  it('the process exits 2 with one line naming the file and line', () => {
    buildOnce();
    const dir = mkdtempSync(path.join(tmpdir(), 'ibx-web-'));
    try {
      const file = path.join(dir, 'web.yml');
      writeFileSync(file, 'basic_auth_users: {}\ntls_config:\n  cert_file: x\n');
      const result = spawnSync(process.execPath, [MAIN, '--path.sysfs', ZOO, `--web.config.file=${file}`], {
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(result.status).toBe(2);
      expect(result.stderr).toBe(
        `infiniband-exporter: web config file ${file}:2: unknown key "tls_config", expected one of: tls_server_config, http_server_config, basic_auth_users\n`,
      );

      const missing = spawnSync(process.execPath, [MAIN, '--path.sysfs', ZOO, `--web.config.file=${path.join(dir, 'absent.yml')}`], {
        encoding: 'utf8',
        timeout: 20_000,
      });
      expect(missing.status).toBe(2);
      expect(missing.stderr).toMatch(/^infiniband-exporter: web config file .*absent\.yml: cannot be read: ENOENT/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

const tools = requireSystemTools('web-config', { promtool: 'prometheus', openssl: 'openssl' });

describe('many users', () => {
  const HASH = `$2y$10$${'a'.repeat(53)}`;
  const users = (count: number, extra = '') =>
    `basic_auth_users:\n${Array.from({ length: count }, (_, i) => `  user${i}: ${HASH}\n`).join('')}${extra}`;

  it('20 001 users load in well under a second: duplicate keys are found in linear time', () => {
    const text = users(20_001);
    parseWebConfigText(users(100), 'warm-up.yml');
    const started = performance.now();
    expect(parseWebConfigText(text, 'web.yml').users.size).toBe(20_001);
    // The yaml package's own duplicate-key check made this 28 s (7 s on this machine under load).
    expect(performance.now() - started).toBeLessThan(1_500);
  });

  it('a user named twice is an error naming the line of the second', () => {
    expect(parseError(users(20_000, `  user17: ${HASH}\n`))).toBe(
      'web config file /etc/ibx/web.yml:20002: not valid YAML: Map keys must be unique',
    );
  });
});

describe.skipIf(tools.skipReason !== undefined)('HTTPS with openssl-made certificates', () => {
  let dir: string;
  const openssl = (...args: string[]) => execFileSync(tools.paths.openssl!, args, { cwd: dir, stdio: 'pipe' });

  /** A self-signed CA: <name>.crt and <name>.key. */
  function makeCa(name: string): void {
    openssl(
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
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
    );
  }

  /** A certificate signed by a CA, with a fresh key: <name>.crt and <name>.key. */
  function makeLeaf(name: string, ca: string, extensions: string): void {
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-subj',
      `/CN=${name}`,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
    );
    writeFileSync(path.join(dir, `${name}.ext`), `${extensions}\n`);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-set_serial',
      `0x${Date.now().toString(16)}${Math.floor(Math.random() * 1e6)}`,
      '-days',
      '2',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    );
  }
  const SERVER = 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth';
  const CLIENT = 'subjectAltName=DNS:prometheus.example.org\nextendedKeyUsage=clientAuth';

  const file = (name: string) => path.join(dir, name);
  const pem = (name: string) => readFileSync(file(name), 'utf8');
  /** Replace a file the way certificate tools and Kubernetes do: write aside, rename over. */
  function replace(target: string, source: string): void {
    copyFileSync(file(source), file(`${target}.new`));
    renameSync(file(`${target}.new`), file(target));
  }

  beforeAll(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'ibx-tls-'));
    makeCa('ca');
    makeCa('other-ca');
    makeLeaf('server-a', 'ca', SERVER);
    makeLeaf('server-b', 'ca', SERVER);
    makeLeaf('client', 'ca', CLIENT);
    makeLeaf('stranger', 'other-ca', CLIENT);
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  let exporter: Exporter | undefined;
  afterEach(async () => {
    await exporter?.stop();
    exporter = undefined;
  });

  async function serve(webConfig: string): Promise<number> {
    exporter = exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', `--web.config.file=${webConfig}`]);
    await exporter.collectOnce();
    await exporter.app.listen({ host: '127.0.0.1', port: 0 });
    return (exporter.app.server.address() as AddressInfo).port;
  }

  interface Answer {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: string;
    /** SHA-256 fingerprint of the certificate the server presented. */
    served: string;
  }

  function get(port: number, options: RequestOptions & { user?: string; password?: string } = {}): Promise<Answer> {
    const { user, password, ...rest } = options;
    return new Promise((resolve, reject) => {
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/metrics',
          ca: pem('ca.crt'),
          agent: false,
          ...(user !== undefined && { auth: `${user}:${password ?? ''}` }),
          ...rest,
        },
        (res) => {
          const served = (res.socket as TLSSocket).getPeerCertificate().fingerprint256;
          let body = '';
          res.setEncoding('utf8');
          res.on('data', (chunk: string) => (body += chunk));
          res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, served }));
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  const fingerprint = (name: string) =>
    execFileSync(tools.paths.openssl!, ['x509', '-in', file(name), '-noout', '-fingerprint', '-sha256'], { encoding: 'utf8' })
      .trim()
      .replace(/^.*=/, '');

  it('serves metrics over TLS to the right password; a wrong, unknown or missing one gets 401', async () => {
    replace('exporter.crt', 'server-a.crt');
    replace('exporter.key', 'server-a.key');
    writeFileSync(
      file('web.yml'),
      `tls_server_config:\n  cert_file: exporter.crt\n  key_file: exporter.key\nhttp_server_config:\n  headers:\n    X-Frame-Options: deny\nbasic_auth_users:\n  prometheus: ${htpasswd('right')}\n`,
    );
    const port = await serve(file('web.yml'));

    const ok = await get(port, { user: 'prometheus', password: 'right' });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatch(/^infiniband_port_state_id\{device="mlx5_0",port="1"\} 4$/m);
    expect(ok.served).toBe(fingerprint('server-a.crt'));
    expect(ok.headers['x-frame-options']).toBe('deny');
    // A second time is served from the cache of good logins: the answer is the same.
    expect((await get(port, { user: 'prometheus', password: 'right' })).status).toBe(200);

    for (const credentials of [
      { user: 'prometheus', password: 'wrong' },
      { user: 'nobody', password: 'right' },
      { user: 'prometheus', password: '' },
      {},
    ]) {
      const denied = await get(port, credentials);
      expect(denied.status, JSON.stringify(credentials)).toBe(401);
      expect(denied.headers['www-authenticate']).toBe('Basic realm="infiniband-exporter", charset="UTF-8"');
      expect(denied.headers['x-frame-options']).toBe('deny');
      expect(denied.body).not.toContain('infiniband_');
    }
    expect((await get(port, { path: '/healthz' })).status).toBe(401);

    // The file is read again once a change has settled: the new user works, the old one no longer does.
    writeFileSync(
      file('web.yml'),
      `tls_server_config:\n  cert_file: exporter.crt\n  key_file: exporter.key\nbasic_auth_users:\n  scraper: ${htpasswd('new')}\n`,
    );
    await waitFor(
      'the new user to be let in',
      async () => ((await get(port, { user: 'scraper', password: 'new' })).status === 200 ? true : undefined),
      10_000,
      100,
    );
    expect((await get(port, { user: 'prometheus', password: 'right' })).status).toBe(401);
  });

  it('rotates the certificate without a restart, and keeps the old pair while a new one is half written', async () => {
    replace('exporter.crt', 'server-a.crt');
    replace('exporter.key', 'server-a.key');
    writeFileSync(file('web.yml'), 'tls_server_config:\n  cert_file: exporter.crt\n  key_file: exporter.key\n');
    const port = await serve(file('web.yml'));
    expect((await get(port)).served).toBe(fingerprint('server-a.crt'));
    // Also for a client that sends a server name (SNI).
    expect((await get(port, { servername: 'localhost' })).served).toBe(fingerprint('server-a.crt'));

    // The new certificate is in place but its key is not yet: the last good pair keeps serving.
    replace('exporter.crt', 'server-b.crt');
    const during = await get(port);
    expect(during.status).toBe(200);
    expect(during.served).toBe(fingerprint('server-a.crt'));

    replace('exporter.key', 'server-b.key');
    const after = await get(port);
    expect(after.status).toBe(200);
    expect(after.served).toBe(fingerprint('server-b.crt'));
    expect(after.served).not.toBe(fingerprint('server-a.crt'));
  });

  it('min_version TLS13 refuses a TLS 1.2 client', async () => {
    replace('exporter.crt', 'server-a.crt');
    replace('exporter.key', 'server-a.key');
    writeFileSync(file('web.yml'), 'tls_server_config:\n  cert_file: exporter.crt\n  key_file: exporter.key\n  min_version: TLS13\n');
    const port = await serve(file('web.yml'));
    expect((await get(port, { minVersion: 'TLSv1.3' })).status).toBe(200);
    await expect(get(port, { maxVersion: 'TLSv1.2' })).rejects.toThrow(/protocol version|alert/i);
  });

  it('RequireAndVerifyClientCert lets in only clients with a certificate from the CA', async () => {
    replace('exporter.crt', 'server-a.crt');
    replace('exporter.key', 'server-a.key');
    writeFileSync(
      file('web.yml'),
      'tls_server_config:\n  cert_file: exporter.crt\n  key_file: exporter.key\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  client_allowed_sans: [prometheus.example.org]\n',
    );
    const port = await serve(file('web.yml'));
    expect((await get(port, { cert: pem('client.crt'), key: pem('client.key') })).status).toBe(200);
    await expect(get(port)).rejects.toThrow();
    await expect(get(port, { cert: pem('stranger.crt'), key: pem('stranger.key') })).rejects.toThrow();
  });

  it('a certificate that does not match its key is a usage error at start', () => {
    writeFileSync(file('mismatch.yml'), 'tls_server_config:\n  cert_file: server-a.crt\n  key_file: server-b.key\n');
    expect(() => exporterFromFlags(['--path.sysfs', ZOO, '--no-collector.diag', `--web.config.file=${file('mismatch.yml')}`])).toThrow(
      new RegExp(
        `^web config file ${file('mismatch.yml')}: tls_server_config: cannot use the certificate, key or CA: .*key values mismatch`,
      ),
    );
  });

  it('the shipped example passes promtool check web-config and serves with its documented password', async () => {
    const example = path.join(dir, 'example');
    execFileSync('mkdir', ['-p', example]);
    copyFileSync(EXAMPLE, path.join(example, 'web.yml'));
    copyFileSync(file('server-a.crt'), path.join(example, 'exporter.crt'));
    copyFileSync(file('server-a.key'), path.join(example, 'exporter.key'));
    const check = spawnSync(tools.paths.promtool!, ['check', 'web-config', 'web.yml'], { cwd: example, encoding: 'utf8' });
    expect(check.stdout + check.stderr).toMatch(/web\.yml SUCCESS/);
    expect(check.status).toBe(0);

    const port = await serve(path.join(example, 'web.yml'));
    expect((await get(port, { user: 'prometheus', password: 'change-me' })).status).toBe(200);
    expect((await get(port, { user: 'prometheus', password: 'change-it' })).status).toBe(401);
  });
});
