// A pino logger whose lines a test reads back, parsed, as soon as they are written.
import pino, { type Logger } from 'pino';

export interface LogLines {
  logger: Logger;
  lines: Record<string, unknown>[];
  /** The messages so far, in order. */
  messages(): string[];
}

export function logLines(level: pino.Level = 'debug'): LogLines {
  const lines: Record<string, unknown>[] = [];
  // A destination with a synchronous write: no stream buffering to wait for.
  const logger = pino({ level }, { write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  return { logger, lines, messages: () => lines.map((line) => String(line.msg)) };
}
