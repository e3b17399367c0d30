// TLS of a running server from the web config: the secure context from the PEM files, refreshed
// before a connection's handshake when a certificate, key or CA file changed (certificates rotate
// without a restart), and the client certificate policy enforced once the handshake is done.
import type { Server as HttpServer } from 'node:http';
import { Server as TlsServer, createSecureContext, type SecureContextOptions, type TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { PEM_FILE, readBoundedText } from '../../../files/bounded-file.js';
import { fileVersion } from './file-version.js';
import type { ClientAuthType, Pem, TlsSettings, WebConfig } from './parse.js';

function readPem(pem: Pem): string {
  return 'inline' in pem ? pem.inline : readBoundedText(pem.file, PEM_FILE);
}

function pemFiles(tls: TlsSettings): string[] {
  return [tls.cert, tls.key, tls.clientCa].flatMap((pem) => (pem && 'file' in pem ? [pem.file] : []));
}

/** Options of a secure context, with the PEM files read now; throws when one cannot be read. */
export function secureContextOptions(tls: TlsSettings): SecureContextOptions {
  const options: SecureContextOptions = {
    cert: readPem(tls.cert),
    key: readPem(tls.key),
    minVersion: tls.minVersion,
    honorCipherOrder: tls.honorCipherOrder,
  };
  if (tls.clientCa) options.ca = readPem(tls.clientCa);
  if (tls.maxVersion) options.maxVersion = tls.maxVersion;
  if (tls.ciphers) options.ciphers = tls.ciphers;
  if (tls.ecdhCurve) options.ecdhCurve = tls.ecdhCurve;
  return options;
}

/** Subject alternative names of a peer certificate as Go lists them: DNS names, IPs, emails, URIs. */
function alternativeNames(subjectaltname: string | undefined): string[] {
  if (!subjectaltname) return [];
  return subjectaltname.split(', ').map((entry) => entry.replace(/^(DNS|IP Address|email|URI):/, ''));
}

/** The TLS side of a running server: its secure context and its client certificate policy. */
export class TlsContext {
  private contextVersion = '';
  private readonly reported = new Set<string>();

  constructor(
    private readonly file: string,
    private readonly logger: Logger,
    /** The config in force (noticing a change of the file). */
    private readonly current: () => WebConfig,
    /** The version of the web config file last read. */
    private readonly readVersion: () => string,
    /** Fixed when the server is created. */
    private readonly clientAuth: ClientAuthType | undefined,
  ) {}

  /** The fastify options that turn on HTTPS with `tls`. */
  serverOptions(tls: TlsSettings): Record<string, unknown> {
    this.contextVersion = pemFiles(tls).map(fileVersion).join('|') + this.readVersion();
    return {
      https: {
        ...secureContextOptions(tls),
        requestCert: tls.clientAuth !== 'NoClientCert',
        // The other policies are checked once the handshake is done (checkClientCertificate).
        rejectUnauthorized: tls.clientAuth === 'RequireAndVerifyClientCert',
      },
    };
  }

  attach(server: HttpServer | TlsServer): void {
    if (!(server instanceof TlsServer)) return;
    // Prepended: runs before the TLS server wraps the socket with its current context.
    server.prependListener('connection', () => this.refreshContext(server));
    server.on('secureConnection', (socket: TLSSocket) => this.checkClientCertificate(socket));
  }

  private refreshContext(server: TlsServer): void {
    const tls = this.current().tls;
    if (!tls) return;
    const version = pemFiles(tls).map(fileVersion).join('|') + this.readVersion();
    if (version === this.contextVersion) return;
    try {
      const options = secureContextOptions(tls);
      createSecureContext(options); // throws on a key that does not match its certificate
      server.setSecureContext(options);
      this.contextVersion = version;
      this.reported.clear();
      this.logger.info({ file: this.file }, 'TLS certificate loaded');
    } catch (error) {
      // Mid-rotation (new certificate, old key) or a broken file: keep serving the last good one.
      if (!this.reported.has(version))
        this.logger.error(
          { file: this.file, err: (error as Error).message },
          'TLS: cannot load the changed certificate files; keeping the previous ones',
        );
      this.reported.add(version);
    }
  }

  private checkClientCertificate(socket: TLSSocket): void {
    const policy = this.clientAuth;
    if (!policy || policy === 'NoClientCert' || policy === 'RequestClientCert') return;
    const cert = socket.getPeerCertificate();
    const given = cert !== null && Object.keys(cert).length > 0;
    let refusal: string | undefined;
    if (!given) {
      if (policy !== 'VerifyClientCertIfGiven') refusal = 'no client certificate';
    } else if (policy !== 'RequireAnyClientCert') {
      if (!socket.authorized) refusal = `client certificate not trusted: ${String(socket.authorizationError)}`;
      else {
        const allowed = this.current().tls?.clientAllowedSans ?? [];
        if (allowed.length > 0 && !alternativeNames(cert.subjectaltname).some((name) => allowed.includes(name)))
          refusal = 'client certificate has none of client_allowed_sans';
      }
    }
    if (refusal) {
      this.logger.debug({ remote: socket.remoteAddress, reason: refusal }, 'TLS connection refused');
      socket.destroy();
    }
  }
}
