// Cuts off clients whose request headers do not arrive within the server's headersTimeout
// (slowloris), with a timer that runs only while connections are open. Node enforces
// headersTimeout itself by checking every connection each connectionsCheckingInterval, and that
// check wakes the process whether anyone is connected or not: once a second, it cost an idle
// exporter 7 ms of CPU and 60 wake-ups a minute (docs/benchmarks.md). Node's check stays as a
// backstop at its default 30 s (SERVER_LIMITS); this one answers within a quarter of
// headersTimeout, as Node's did within its 1 s.
import type { Server as HttpServer, IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { Server as TlsServer } from 'node:tls';

interface Connection {
  /** When the request now awaited started: the connection, or its first byte after a response. */
  since: number | undefined;
  /** socket.bytesRead when the last response ended: more means the next request has begun. */
  bytesBefore: number;
  /** A request's headers arrived and its response is not finished. */
  inRequest: boolean;
}

export interface SlowClientOptions {
  /** Answer (408) and close the socket: the same as for Node's own header timeout. */
  refuse: (socket: Socket) => void;
  now?: () => number;
}

export function guardSlowClients(server: HttpServer | TlsServer, options: SlowClientOptions): void {
  const now = options.now ?? Date.now;
  const connections = new Map<Socket, Connection>();
  let timer: NodeJS.Timeout | undefined;

  const check = (): void => {
    const limit = (server as HttpServer).headersTimeout;
    const at = now();
    for (const [socket, connection] of connections) {
      if (connection.inRequest) continue;
      if (connection.since === undefined) {
        if (socket.bytesRead > connection.bytesBefore) connection.since = at;
        continue;
      }
      if (limit > 0 && at - connection.since >= limit) {
        connections.delete(socket);
        options.refuse(socket);
      }
    }
    if (connections.size === 0) stop();
  };
  const stop = (): void => {
    clearInterval(timer);
    timer = undefined;
  };
  const track = (socket: Socket): void => {
    connections.set(socket, { since: now(), bytesBefore: 0, inRequest: false });
    socket.once('close', () => {
      connections.delete(socket);
      if (connections.size === 0) stop();
    });
    if (timer === undefined) {
      const limit = (server as HttpServer).headersTimeout;
      timer = setInterval(check, Math.min(1000, Math.max(10, Math.floor(limit / 4))));
      timer.unref();
    }
  };

  // A TLS server's requests arrive on the TLS socket, which exists once the handshake is done.
  server.on(server instanceof TlsServer ? 'secureConnection' : 'connection', track);
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const socket = request.socket;
    const connection = connections.get(socket);
    if (!connection) return;
    connection.inRequest = true;
    response.once('close', () => {
      connection.inRequest = false;
      connection.since = undefined;
      connection.bytesBefore = socket.bytesRead;
    });
  });
}
