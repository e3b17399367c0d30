// Basic auth and the configured response headers, checked on every request before routing.
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { PasswordChecks } from '../password-checks.js';
import type { WebConfig } from './parse.js';

const REALM = 'Basic realm="infiniband-exporter", charset="UTF-8"';

/**
 * fastify onRequest hook, before routing: configured headers on every response, then basic
 * auth, so that whatever the method and path, a request without the right credentials learns
 * nothing but 401.
 */
export function basicAuthHook(current: () => WebConfig, passwords: PasswordChecks) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> => {
    const config = current();
    for (const [name, value] of Object.entries(config.headers)) reply.header(name, value);
    if (config.users.size === 0) return undefined;
    const credentials = basicCredentials(request.headers.authorization);
    const socket = request.raw.socket;
    const client = { address: socket.remoteAddress ?? '', gone: () => socket.destroyed === true || socket.writable === false };
    if (credentials && (await passwords.verify(config.users, credentials.user, credentials.password, client))) return undefined;
    return reply.code(401).header('www-authenticate', REALM).type('text/plain; charset=utf-8').send('unauthorized\n');
  };
}

function basicCredentials(header: string | undefined): { user: string; password: string } | undefined {
  const match = header?.match(/^Basic +([A-Za-z0-9+/=]+)\s*$/i);
  if (!match) return undefined;
  const decoded = Buffer.from(match[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return undefined;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
