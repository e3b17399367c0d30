import { UsageError } from './errors.js';

export interface ListenAddress {
  /** Undefined = every interface. */
  host: string | undefined;
  port: number;
}

/** Parse "host:port", ":port" or "[v6]:port" as node_exporter's --web.listen-address does. */
export function parseListenAddress(text: string, source: string): ListenAddress {
  const match = /^(?:\[([0-9a-fA-F:.%a-zA-Z]+)\]|([^:[\]]*)):(\d{1,5})$/.exec(text.trim());
  const port = match ? Number(match[3]) : NaN;
  if (!match || port > 65535) {
    throw new UsageError(`${source}: "${text}" is not a listen address; expected host:port, :port or [ipv6]:port, e.g. ":10460"`);
  }
  const host = match[1] ?? match[2];
  return { host: host ? host : undefined, port };
}
