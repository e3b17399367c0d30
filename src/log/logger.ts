// pino, JSON by default. --log.format=logfmt writes key=value lines for people reading a terminal.
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';

function logfmtValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return /^[^\s"=]+$/.test(text) ? text : JSON.stringify(text);
}

/** Turns pino's JSON lines into logfmt: time=… level=… msg=… key=value. */
export function logfmtStream(out: NodeJS.WritableStream = process.stderr): Writable {
  return new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (!line) continue;
        try {
          const { time, level, msg, ...rest } = JSON.parse(line) as Record<string, unknown>;
          const fields = [`time=${new Date(Number(time)).toISOString()}`, `level=${String(level)}`, `msg=${logfmtValue(msg ?? '')}`];
          for (const [key, value] of Object.entries(rest)) fields.push(`${key}=${logfmtValue(value)}`);
          out.write(fields.join(' ') + '\n');
        } catch {
          out.write(line + '\n');
        }
      }
      callback();
    },
  });
}

export function createLogger(level: string, format: 'json' | 'logfmt', destination?: NodeJS.WritableStream): Logger {
  const options: pino.LoggerOptions = {
    level,
    base: undefined,
    formatters: { level: (label) => ({ level: label }) },
  };
  if (format === 'logfmt') return pino(options, logfmtStream(destination));
  // Written as each line is logged, as Node.js writes process.stderr to a pipe or file on Linux
  // (and so the logfmt lines above). pino's default destination writes in the background, a line
  // at a time, and flushes what waits at exit: a crash's line then went out before the line whose
  // write was under way, or that line was lost (3 runs in 200 of a script that logs one line and
  // crashes in the next turn; none with sync). The exporter logs a few lines an hour.
  return pino(options, (destination as pino.DestinationStream | undefined) ?? pino.destination({ dest: 2, sync: true }));
}
