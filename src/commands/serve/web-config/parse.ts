// --web.config.file: TLS, basic auth and response headers in the Prometheus exporter-toolkit
// format, so one file serves every exporter on a host. Parsed strictly (an unknown key is an
// error, like --config.file). This file reads and checks the text; reload.ts watches the file.
import path from 'node:path';
import type { SecureVersion } from 'node:tls';
import type { Node } from 'yaml';
import { describe, keyName, yamlSteps, type FileContext } from '../../../config/yaml-file.js';
import { atOnce, type Work } from '../../../event-loop/time-slices.js';
import { yaml } from '../../../config/yaml.js';
import { UsageError } from '../../../config/errors.js';
import { WEB_CONFIG_FILE, readBoundedText } from '../../../files/bounded-file.js';

export const KIND = 'web config file';

export const CLIENT_AUTH_TYPES = [
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

const TLS_VERSIONS: Record<string, SecureVersion> = { TLS10: 'TLSv1', TLS11: 'TLSv1.1', TLS12: 'TLSv1.2', TLS13: 'TLSv1.3' };

// Go's cipher suite names (exporter-toolkit passes them to crypto/tls) and their OpenSSL names.
// Go does not let TLS 1.3 suites be chosen and neither do we: all three stay on.
const CIPHER_SUITES: Record<string, string> = {
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
};
const TLS13_SUITES = 'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256';
const CURVES: Record<string, string> = { CurveP256: 'P-256', CurveP384: 'P-384', CurveP521: 'P-521', X25519: 'X25519' };

/** The response headers exporter-toolkit lets http_server_config.headers set. */
const HEADERS = ['Content-Security-Policy', 'X-Frame-Options', 'X-Content-Type-Options', 'X-XSS-Protection', 'Strict-Transport-Security'];

const TLS_KEYS = [
  'cert_file',
  'key_file',
  'cert',
  'key',
  'client_auth_type',
  'client_ca_file',
  'client_ca',
  'client_allowed_sans',
  'min_version',
  'max_version',
  'cipher_suites',
  'prefer_server_cipher_suites',
  'curve_preferences',
];
const SECTIONS = ['tls_server_config', 'http_server_config', 'basic_auth_users'];
const BCRYPT_HASH = /^\$2[aby]\$\d\d\$[./A-Za-z0-9]{53}$/;

/** A PEM value: read from a file (resolved against the web config file's folder) or given inline. */
export type Pem = { file: string } | { inline: string };

export interface TlsSettings {
  cert: Pem;
  key: Pem;
  clientAuth: ClientAuthType;
  clientCa: Pem | undefined;
  clientAllowedSans: readonly string[];
  minVersion: SecureVersion;
  maxVersion: SecureVersion | undefined;
  /** OpenSSL cipher list; undefined leaves Node's defaults. */
  ciphers: string | undefined;
  honorCipherOrder: boolean;
  ecdhCurve: string | undefined;
}

export interface WebConfig {
  /** Undefined: plain HTTP. */
  tls: TlsSettings | undefined;
  /** User name → bcrypt hash; empty: no authentication. */
  users: ReadonlyMap<string, string>;
  /** The file says `basic_auth_users: {}`: no authentication, said in so many words. */
  usersExplicitlyNone: boolean;
  headers: Readonly<Record<string, string>>;
}

function string(ctx: FileContext, node: Node | null, what: string): string {
  if (yaml().isScalar(node) && typeof node.value === 'string' && node.value !== '') return node.value;
  throw ctx.error(node, `"${what}" must be a non-empty string, got ${describe(node)}`);
}

function strings(ctx: FileContext, node: Node | null, what: string): string[] {
  if (!yaml().isSeq(node)) throw ctx.error(node, `"${what}" must be a list of strings, got ${describe(node)}`);
  return node.items.map((item) => string(ctx, item as Node, what));
}

function choice<T extends string>(ctx: FileContext, node: Node | null, what: string, allowed: readonly T[]): T {
  const value = yaml().isScalar(node) ? node.value : undefined;
  if (typeof value === 'string' && (allowed as readonly string[]).includes(value)) return value as T;
  throw ctx.error(node, `"${what}" must be one of ${allowed.join(', ')}, got ${describe(node)}`);
}

function isEmpty(node: Node | null): boolean {
  return node === null || (yaml().isScalar(node) && node.value === null);
}

/** The key/value pairs of a mapping section, each key checked against what is allowed. */
function entries(
  ctx: FileContext,
  node: Node | null,
  section: string,
  allowed: readonly string[] | undefined,
): [string, Node | null, Node][] {
  if (isEmpty(node)) return [];
  if (!yaml().isMap(node)) throw ctx.error(node, `"${section}" must be a mapping, got ${describe(node)}`);
  return node.items.map((pair) => {
    const key = keyName(ctx, pair.key);
    if (allowed && !allowed.includes(key)) {
      throw ctx.error(
        pair.key as Node,
        `unknown key "${section}.${key}", expected one of: ${allowed.map((k) => `${section}.${k}`).join(', ')}`,
      );
    }
    return [key, pair.value as Node | null, pair.key as Node];
  });
}

function parseTls(ctx: FileContext, node: Node | null, dir: string): TlsSettings | undefined {
  const fields = new Map(entries(ctx, node, 'tls_server_config', TLS_KEYS).map(([key, value, keyNode]) => [key, { value, keyNode }]));
  if (fields.size === 0) return undefined;
  const get = (key: string) => fields.get(key)?.value ?? null;
  const pem = (fileKey: string, inlineKey: string, required: boolean): Pem | undefined => {
    const file = fields.get(fileKey);
    const inline = fields.get(inlineKey);
    if (file && inline)
      throw ctx.error(inline.keyNode, `give "tls_server_config.${fileKey}" or "tls_server_config.${inlineKey}", not both`);
    if (file) return { file: path.resolve(dir, string(ctx, file.value, `tls_server_config.${fileKey}`)) };
    if (inline) return { inline: string(ctx, inline.value, `tls_server_config.${inlineKey}`) };
    if (required) throw ctx.error(node, `"tls_server_config" needs "${fileKey}" (or "${inlineKey}")`);
    return undefined;
  };
  const cert = pem('cert_file', 'cert', true)!;
  const key = pem('key_file', 'key', true)!;
  const clientCa = pem('client_ca_file', 'client_ca', false);
  const clientAuth = fields.has('client_auth_type')
    ? choice(ctx, get('client_auth_type'), 'tls_server_config.client_auth_type', CLIENT_AUTH_TYPES)
    : 'NoClientCert';
  const verifies = clientAuth === 'VerifyClientCertIfGiven' || clientAuth === 'RequireAndVerifyClientCert';
  if (verifies && !clientCa)
    throw ctx.error(
      fields.get('client_auth_type')!.keyNode,
      `client_auth_type ${clientAuth} needs "tls_server_config.client_ca_file" to verify client certificates against`,
    );
  if (!verifies && clientCa)
    throw ctx.error(
      fields.get(fields.has('client_ca_file') ? 'client_ca_file' : 'client_ca')!.keyNode,
      `a client CA is set but client_auth_type is ${clientAuth}: set client_auth_type to RequireAndVerifyClientCert (or VerifyClientCertIfGiven)`,
    );
  const clientAllowedSans = fields.has('client_allowed_sans')
    ? strings(ctx, get('client_allowed_sans'), 'tls_server_config.client_allowed_sans')
    : [];
  if (clientAllowedSans.length > 0 && !verifies)
    throw ctx.error(
      fields.get('client_allowed_sans')!.keyNode,
      'client_allowed_sans needs client_auth_type RequireAndVerifyClientCert (or VerifyClientCertIfGiven)',
    );

  const version = (k: string) => TLS_VERSIONS[choice(ctx, get(k), `tls_server_config.${k}`, Object.keys(TLS_VERSIONS))]!;
  const minVersion = fields.has('min_version') ? version('min_version') : 'TLSv1.2';
  const maxVersion = fields.has('max_version') ? version('max_version') : undefined;
  if (maxVersion && Object.values(TLS_VERSIONS).indexOf(maxVersion) < Object.values(TLS_VERSIONS).indexOf(minVersion)) {
    throw ctx.error(get('max_version'), 'max_version is below min_version');
  }
  let ciphers: string | undefined;
  if (fields.has('cipher_suites')) {
    const names = strings(ctx, get('cipher_suites'), 'tls_server_config.cipher_suites');
    const unknown = names.filter(
      (name) => !(name in CIPHER_SUITES) && !name.startsWith('TLS_AES_') && name !== 'TLS_CHACHA20_POLY1305_SHA256',
    );
    if (unknown.length > 0)
      throw ctx.error(
        get('cipher_suites'),
        `unsupported cipher suite ${unknown.join(', ')}; supported: ${Object.keys(CIPHER_SUITES).join(', ')}`,
      );
    ciphers = [TLS13_SUITES, ...names.flatMap((name) => CIPHER_SUITES[name] ?? [])].join(':');
  }
  const prefer = get('prefer_server_cipher_suites');
  if (fields.has('prefer_server_cipher_suites') && !(yaml().isScalar(prefer) && typeof prefer.value === 'boolean')) {
    throw ctx.error(prefer, `"tls_server_config.prefer_server_cipher_suites" must be true or false, got ${describe(prefer)}`);
  }
  let ecdhCurve: string | undefined;
  if (fields.has('curve_preferences')) {
    const names = strings(ctx, get('curve_preferences'), 'tls_server_config.curve_preferences');
    const unknown = names.filter((name) => !(name in CURVES));
    if (unknown.length > 0)
      throw ctx.error(get('curve_preferences'), `unsupported curve ${unknown.join(', ')}; supported: ${Object.keys(CURVES).join(', ')}`);
    ecdhCurve = names.map((name) => CURVES[name]).join(':');
  }
  return {
    cert,
    key,
    clientAuth,
    clientCa,
    clientAllowedSans,
    minVersion,
    maxVersion,
    ciphers,
    honorCipherOrder: yaml().isScalar(prefer) && prefer.value === true,
    ecdhCurve,
  };
}

function parseHttp(ctx: FileContext, node: Node | null): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const [key, value] of entries(ctx, node, 'http_server_config', ['http2', 'headers'])) {
    if (key === 'http2') {
      if (yaml().isScalar(value) && value.value === false) continue;
      throw ctx.error(
        value,
        `"http_server_config.http2": this exporter serves HTTP/1.1 only; remove the key or set it to false (got ${describe(value)})`,
      );
    }
    for (const [name, headerValue] of entries(ctx, value, 'http_server_config.headers', HEADERS)) {
      headers[name] = string(ctx, headerValue, `http_server_config.headers.${name}`);
    }
  }
  return headers;
}

function parseUsers(ctx: FileContext, node: Node | null): Map<string, string> {
  const users = new Map<string, string>();
  for (const [user, value] of entries(ctx, node, 'basic_auth_users', undefined)) {
    if (user.includes(':')) throw ctx.error(value, `user name "${user}" must not contain ":"`);
    const hash = yaml().isScalar(value) ? value.value : undefined;
    if (typeof hash !== 'string' || !BCRYPT_HASH.test(hash)) {
      throw ctx.error(
        value,
        `the password of "${user}" must be a bcrypt hash ($2y$…, from htpasswd -nBC 10 "" | tr -d ':\\n'), got ${typeof hash === 'string' ? 'something else' : describe(value)}`,
      );
    }
    users.set(user, hash);
  }
  return users;
}

/**
 * A web config file's text. An empty file (nothing, or comments only) is an error: it is what an
 * in-place rewrite shows for a moment, never a request to turn TLS and authentication off; `{}`
 * says that.
 */
export function parseWebConfigText(text: string, file: string): WebConfig {
  return atOnce(webConfigSteps(text, file));
}

/** parseWebConfigText as work in steps: a reload parses in time slices, scrapes answered meanwhile. */
export function* webConfigSteps(text: string, file: string): Work<WebConfig> {
  const { root, ctx } = yield* yamlSteps(text, file, KIND);
  if (root === null)
    throw ctx.error(null, `the file is empty; for plain HTTP without authentication write {} (or leave out --web.config.file)`);
  if (!yaml().isMap(root)) throw ctx.error(root, `expected a mapping of ${SECTIONS.join(', ')}, got ${describe(root)}`);
  const dir = path.dirname(path.resolve(file));
  const config: WebConfig = { tls: undefined, users: new Map(), usersExplicitlyNone: false, headers: {} };
  for (const pair of root.items) {
    const section = keyName(ctx, pair.key);
    const body = pair.value as Node | null;
    if (section === 'tls_server_config') config.tls = parseTls(ctx, body, dir);
    else if (section === 'http_server_config') config.headers = parseHttp(ctx, body);
    else if (section === 'basic_auth_users') {
      config.users = parseUsers(ctx, body);
      config.usersExplicitlyNone = yaml().isMap(body) && body.items.length === 0;
    } else if (section === 'rate_limit') throw ctx.error(pair.key as Node, '"rate_limit" is not supported by this exporter');
    else throw ctx.error(pair.key as Node, `unknown key "${section}", expected one of: ${SECTIONS.join(', ')}`);
  }
  return config;
}

export function loadWebConfig(file: string): WebConfig {
  let text: string;
  try {
    text = readBoundedText(file, WEB_CONFIG_FILE);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  return parseWebConfigText(text, file);
}
