// The web config of a running server. The file and the certificate files it names are watched
// while the exporter runs (a stat per request and per connection): certificates rotate and users
// change without a restart. A change is read once the file has stayed the same for a second, and
// applied only when it parses, validates and still says as much about authentication as before:
// an in-place rewrite (`cat new > web.yml`, an editor's truncate-then-write) passes through an
// empty or half-written file, and that must never be the configuration, even for one request.
// What is not applied is logged once and exported
// (infiniband_exporter_web_config_last_reload_successful), as Prometheus does with its own
// configuration.
import type { Server as HttpServer } from 'node:http';
import { createSecureContext, type Server as TlsServer } from 'node:tls';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { UsageError } from '../../../config/errors.js';
import { FileRefused, WEB_CONFIG_FILE, readBoundedFile } from '../../../files/bounded-file.js';
import { inSlices } from '../../../event-loop/time-slices.js';
import { PasswordChecks, type BcryptCompare } from '../password-checks.js';
import { basicAuthHook } from './basic-auth.js';
import { fileVersion } from './file-version.js';
import { KIND, loadWebConfig, webConfigSteps, type ClientAuthType, type WebConfig } from './parse.js';
import { TlsContext, secureContextOptions } from './tls.js';

/** How long a changed web config file must stay the same before it is read. */
export const WEB_CONFIG_SETTLE_MS = 1000;

export interface WebSecurityOptions {
  /** How long a changed file must stay the same before it is read (default WEB_CONFIG_SETTLE_MS). */
  settleMs?: number;
  /** bcrypt for the password checks (tests count the checks). */
  compare?: BcryptCompare;
  now?: () => number;
}

/** The outcome of the last reading of the web config file, as Prometheus exports its own. */
export interface ReloadStatus {
  successful: boolean;
  /** Unix time (ms) of the last reading that was applied: the start, or a reload. */
  successAt: number;
}

/** Why a parsed new version cannot replace the running one; undefined when it can. */
function reloadProblem(
  running: WebConfig,
  next: WebConfig,
  startedWith: { tls: boolean; clientAuth: ClientAuthType | undefined },
): string | undefined {
  if ((next.tls !== undefined) !== startedWith.tls || next.tls?.clientAuth !== startedWith.clientAuth) {
    return 'turning TLS on or off or changing client_auth_type takes a restart';
  }
  if (running.users.size > 0 && next.users.size === 0 && !next.usersExplicitlyNone) {
    // A file cut short while it is rewritten looks just like this.
    return 'the file lists no basic_auth_users; to turn authentication off, say so with "basic_auth_users: {}"';
  }
  return undefined;
}

/**
 * The web config of a running server. `current()` notices a change of the file (a stat); the
 * change is read once the file has been the same for `settleMs`, and applied when it is usable
 * (a broken one is logged and the last good one kept); `attach()` refreshes the server's TLS
 * context before each connection's handshake when a certificate, key or CA file changed.
 */
export class WebSecurity {
  private config: WebConfig;
  /** The version of the file last read (applied or not). */
  private readVersion: string;
  /** A newer version seen and waiting to settle, with its timer. */
  private pending: { version: string; timer: NodeJS.Timeout } | undefined;
  private status: ReloadStatus;
  /** A changed file is being parsed (in slices). */
  private parsing = false;
  private closed = false;
  /** Connections the server accepted: the password checks let the event loop take them in first. */
  private accepted = 0;
  private readonly settleMs: number;
  private readonly now: () => number;
  readonly passwords: PasswordChecks;
  /** TLS on or off and the client certificate policy are fixed when the server is created. */
  private readonly startedWith: { tls: boolean; clientAuth: ClientAuthType | undefined };
  private readonly tlsContext: TlsContext;
  /** fastify onRequest hook: headers and basic auth (basic-auth.ts). */
  readonly authenticate: (request: FastifyRequest, reply: FastifyReply) => Promise<FastifyReply | undefined>;

  private constructor(
    readonly file: string,
    private readonly logger: Logger,
    options: WebSecurityOptions,
  ) {
    this.settleMs = options.settleMs ?? WEB_CONFIG_SETTLE_MS;
    this.now = options.now ?? Date.now;
    this.passwords = new PasswordChecks({ ...(options.compare && { compare: options.compare }), accepted: () => this.accepted });
    // The version before the reading: a change during it is noticed later.
    this.readVersion = fileVersion(file);
    this.config = loadWebConfig(file);
    this.status = { successful: true, successAt: this.now() };
    this.startedWith = { tls: this.config.tls !== undefined, clientAuth: this.config.tls?.clientAuth };
    this.tlsContext = new TlsContext(
      file,
      logger,
      () => this.current(),
      () => this.readVersion,
      this.startedWith.clientAuth,
    );
    this.authenticate = basicAuthHook(() => this.current(), this.passwords);
  }

  /** Load and check the file and its certificates; a UsageError (exit 2) when anything is wrong. */
  static load(file: string, logger: Logger, options: WebSecurityOptions = {}): WebSecurity {
    const security = new WebSecurity(file, logger, options);
    const tls = security.config.tls;
    if (tls) {
      try {
        createSecureContext(secureContextOptions(tls));
      } catch (error) {
        throw new UsageError(`${KIND} ${file}: tls_server_config: cannot use the certificate, key or CA: ${(error as Error).message}`);
      }
    }
    return security;
  }

  /** The fastify options that turn on HTTPS, or none for plain HTTP. */
  serverOptions(): Record<string, unknown> {
    const tls = this.config.tls;
    if (!tls) return {};
    return this.tlsContext.serverOptions(tls);
  }

  /** The config in force; a change of the file is noticed here and read once it has settled. */
  current(): WebConfig {
    const version = fileVersion(this.file);
    if (version !== this.readVersion && version !== this.pending?.version) this.settle(version);
    return this.config;
  }

  reloadStatus(): ReloadStatus {
    return this.status;
  }

  /** Stop waiting for a change to settle (the server is closing). */
  close(): void {
    this.closed = true;
    clearTimeout(this.pending?.timer);
    this.pending = undefined;
  }

  /** Wait until the file has been at `version` for settleMs (from now), then read it. */
  private settle(version: string): void {
    clearTimeout(this.pending?.timer);
    const timer = setTimeout(() => this.readSettled(version), this.settleMs);
    timer.unref();
    this.pending = { version, timer };
  }

  private readSettled(expected: string): void {
    this.pending = undefined;
    // One reading at a time: a change during a parse is read once it is done.
    if (this.parsing) return this.settle(expected);
    const before = fileVersion(this.file);
    if (before !== expected) return this.settle(before);
    let text: Buffer | undefined;
    let unreadable: string | undefined;
    try {
      text = readBoundedFile(this.file, WEB_CONFIG_FILE);
    } catch (error) {
      unreadable = error instanceof FileRefused ? error.reason : `cannot be read: ${(error as Error).message}`;
    }
    // Written to while it was read: wait for it to settle again.
    const after = fileVersion(this.file);
    if (after !== before || (text !== undefined && !before.startsWith(`${text.length}:`))) return this.settle(after);
    this.readVersion = after;
    void this.apply(text, unreadable);
  }

  private async apply(text: Buffer | undefined, unreadable: string | undefined): Promise<void> {
    let problem = unreadable === undefined ? undefined : `${KIND} ${this.file}: ${unreadable}`;
    let next: WebConfig | undefined;
    if (text !== undefined) {
      try {
        this.parsing = true;
        // Thousands of users are a second of parsing: in slices, requests answered meanwhile.
        next = await inSlices(webConfigSteps(text.toString('utf8'), this.file));
        if (this.closed) return;
        const reason = reloadProblem(this.config, next, this.startedWith);
        if (reason) problem = `${KIND} ${this.file}: ${reason}`;
      } catch (error) {
        if (!(error instanceof UsageError)) throw error;
        problem = error.message;
      } finally {
        this.parsing = false;
      }
    }
    if (problem !== undefined || next === undefined) {
      this.status = { ...this.status, successful: false };
      this.logger.error({ file: this.file, reason: problem }, 'web config: the changed file is not usable; keeping the previous one');
      return;
    }
    this.config = next;
    this.status = { successful: true, successAt: this.now() };
    this.logger.info({ file: this.file, users: next.users.size, tls: next.tls !== undefined }, 'web config reloaded');
  }

  /**
   * Count the server's connections (password-checks.ts says why); with TLS, refresh the context
   * before each handshake and enforce the client certificate policy after it (tls.ts).
   */
  attach(server: HttpServer | TlsServer): void {
    server.on('connection', () => (this.accepted += 1));
    this.tlsContext.attach(server);
  }
}
