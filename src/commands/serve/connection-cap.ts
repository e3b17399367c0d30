// --web.max-connections and --web.max-connections-per-client: how many connections are open at
// once (TLS handshakes, requests, kept-alive idle ones), in all and from one remote address, so
// that idle sockets cannot use up the process's file descriptors (after which the exporter could
// open neither its sysfs files nor its tools' pipes) or its memory.
//
// At a limit, the connection closed is the one that has waited longest for its request headers
// (a TLS handshake not done, a request half sent, a kept-alive connection between requests), not
// the newcomer: refusing newcomers let a slowloris client that opened its sockets first keep them
// while Prometheus's scrapes were reset. A well-behaved client sends its headers at once, so it is
// never the oldest waiting for long. Only when every connection at the limit is in a request is
// the newcomer closed, as soon as accepted, before a byte is read.
//
// Each connection closed is counted (infiniband_exporter_http_connections_refused_total); the log
// says so at most once a minute, with how many since the last line, so that a flood does not become
// a flood of log lines.
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import type { Logger } from 'pino';

const LOG_EVERY_MS = 60_000;

/** Connections from one address at once by default: far above one Prometheus's one or two. */
export const DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 64;

export interface ConnectionCapOptions {
  /** Connections open at once from one remote address. */
  maxPerClient: number;
  logger: Logger;
  /** Called for every connection closed by a limit (refused or made room for). */
  onRefused: () => void;
  now?: () => number;
}

interface Connection {
  readonly socket: Socket;
  readonly address: string;
  /** peerKey(socket), kept: a closed socket forgets its remote address. */
  readonly peer: string;
  /** A request's headers arrived and its response is not finished. */
  inRequest: boolean;
}

/** The TCP connection's own name: what a TLS socket and the raw socket under it share. */
const peerKey = (socket: Socket): string => `${socket.remoteAddress}|${socket.remotePort}`;

export function capConnections(server: Server, max: number, options: ConnectionCapOptions): void {
  const now = options.now ?? Date.now;
  // Every open connection, in the order in which they started waiting for request headers, the
  // oldest first: a connection whose response ends is moved to the end (it waits for its next).
  const connections = new Map<Socket, Connection>();
  const byPeer = new Map<string, Connection>();
  const perAddress = new Map<string, Map<Socket, Connection>>();
  let loggedAt: number | undefined;
  let unlogged = 0;

  const refused = (limit: 'total' | 'client', address: string): void => {
    options.onRefused();
    unlogged += 1;
    const at = now();
    if (loggedAt !== undefined && at - loggedAt < LOG_EVERY_MS) return;
    const message =
      limit === 'total'
        ? 'closing connections: --web.max-connections are open'
        : 'closing connections: --web.max-connections-per-client are open from one address';
    options.logger.warn(
      { maxConnections: max, maxConnectionsPerClient: options.maxPerClient, refused: unlogged, remote: address },
      message,
    );
    loggedAt = at;
    unlogged = 0;
  };

  /** The connection waiting longest for headers among `among`; undefined when all are in requests. */
  const oldestWaiting = (among: Map<Socket, Connection>): Connection | undefined => {
    for (const connection of among.values()) if (!connection.inRequest) return connection;
    return undefined;
  };

  const forget = (connection: Connection): void => {
    if (!connections.delete(connection.socket)) return;
    byPeer.delete(connection.peer);
    const fromAddress = perAddress.get(connection.address);
    fromAddress?.delete(connection.socket);
    if (fromAddress?.size === 0) perAddress.delete(connection.address);
  };
  const close = (connection: Connection, limit: 'total' | 'client'): void => {
    forget(connection);
    // destroy() closes the descriptor now; 'close' follows on a later turn.
    connection.socket.destroy();
    refused(limit, connection.address);
  };

  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const connection: Connection = { socket, address, peer: peerKey(socket), inRequest: false };
    let fromAddress = perAddress.get(address);
    if (fromAddress === undefined) perAddress.set(address, (fromAddress = new Map()));
    connections.set(socket, connection);
    fromAddress.set(socket, connection);
    byPeer.set(connection.peer, connection);
    socket.once('close', () => forget(connection));

    if (fromAddress.size > options.maxPerClient) close(oldestWaiting(fromAddress) ?? connection, 'client');
    if (connections.size > max && !socket.destroyed) close(oldestWaiting(connections) ?? connection, 'total');
  });

  // A request's headers are complete: not a candidate until its response ends. The request comes
  // on the TLS socket under HTTPS, found by the TCP connection's ends.
  (server as HttpServer).on('request', (request: IncomingMessage, response: ServerResponse) => {
    const connection = byPeer.get(peerKey(request.socket));
    if (connection === undefined) return;
    connection.inRequest = true;
    response.once('close', () => {
      connection.inRequest = false;
      if (connection.socket.destroyed) return;
      // Waiting again, from now: to the end of the line.
      connections.delete(connection.socket);
      connections.set(connection.socket, connection);
      const fromAddress = perAddress.get(connection.address);
      fromAddress?.delete(connection.socket);
      fromAddress?.set(connection.socket, connection);
    });
  });
}
