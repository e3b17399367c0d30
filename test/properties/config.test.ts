// The configuration parsers on any text: a value or a UsageError (exit code 2, one line), never
// another exception, NaN or a negative duration.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../src/config/config-file.js';
import { formatDuration, parseDuration } from '../../src/config/duration.js';
import { UsageError } from '../../src/config/errors.js';
import { parseListenAddress } from '../../src/config/listen-address.js';
import { EXPECTATIONS } from '../../src/collectors/host/sysfs/index.js';
import { COLLECTORS } from '../../src/collectors/registry.js';
import { flagSet } from '../../src/commands/command-line.js';
import { SERVE_FLAGS } from '../../src/commands/serve/flags.js';
import type { ExpectationRule } from '../../src/model/expectations.js';

const FLAGS = flagSet(SERVE_FLAGS, COLLECTORS);
import { anyText, numberish } from './arbitraries.js';

const unit = fc.constantFrom('ms', 's', 'm', 'h', 'd', 'us', 'y', '', 'S');
const durationText = fc.oneof(
  anyText,
  fc.array(fc.tuple(numberish, unit), { minLength: 1, maxLength: 4 }).map((parts) => parts.map(([n, u]) => `${n}${u}`).join('')),
);

/** A UsageError with a one-line message, or no error at all. */
function onlyUsageErrors(run: () => unknown): unknown {
  try {
    return run();
  } catch (error) {
    expect(error).toBeInstanceOf(UsageError);
    expect((error as Error).message).not.toMatch(/\n\s+at /);
    return undefined;
  }
}

describe('durations', () => {
  it('are undefined or a positive safe number of milliseconds', () => {
    fc.assert(
      fc.property(durationText, (text) => {
        const ms = parseDuration(text);
        if (ms !== undefined) expect(Number.isSafeInteger(ms) && ms > 0).toBe(true);
      }),
    );
  });

  it('format back to text that parses to the same value', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 2 ** 40 }), (ms) => {
        expect(parseDuration(formatDuration(ms))).toBe(ms);
      }),
    );
  });
});

describe('listen addresses', () => {
  const hostPart = fc.oneof(fc.constantFrom('', '127.0.0.1', 'localhost', '[::1]', '[::]', '::1', '[fe80::1%eth0]', '[', ']'), anyText);
  const addressText = fc.oneof(
    anyText,
    fc.tuple(hostPart, numberish).map(([host, port]) => `${host}:${port}`),
  );

  it('give a port 0–65535 or a UsageError', () => {
    fc.assert(
      fc.property(addressText, (text) => {
        const address = onlyUsageErrors(() => parseListenAddress(text, '--web.listen-address')) as
          | ReturnType<typeof parseListenAddress>
          | undefined;
        if (address === undefined) return;
        expect(Number.isInteger(address.port) && address.port >= 0 && address.port <= 65535).toBe(true);
        expect(address.host === undefined || address.host.length > 0).toBe(true);
      }),
    );
  });
});

describe('config file text', () => {
  // YAML built from the real vocabulary with random values, plus any text at all.
  const key = fc.constantFrom(
    'listen_address',
    'telemetry_path',
    'interval',
    'enabled',
    'timeout',
    'max_concurrent',
    'include',
    'exclude',
    'level',
    'format',
    'sysfs',
    'bogus',
    'device',
    'port',
    'width',
    'speed',
  );
  const scalar = fc.oneof(
    numberish,
    fc.constantFrom('true', 'no', '~', '""', '"("', "'*'", '10s', '0s', 'NDR', 'json', '[]', '{}', '*a', '&a x', '!!binary x', '? x'),
    anyText.map((t) => JSON.stringify(t)),
  );
  const section = fc.constantFrom('web', 'path', 'collection', 'diag', 'devices', 'log', 'expectations', 'other', '- ', '? ');
  const line = fc.oneof(
    fc.tuple(section, fc.constantFrom(':', ': ', ': ~', ':\n-')).map(([s, sep]) => `${s}${sep}`),
    fc.tuple(fc.constantFrom('  ', '  - ', '    ', '\t', ''), key, scalar).map(([indent, k, v]) => `${indent}${k}: ${v}`),
    anyText,
  );
  const configText = fc.oneof(
    anyText,
    fc.array(line, { maxLength: 12 }).map((lines) => lines.join('\n')),
  );

  it('gives settings or a UsageError that names the file', () => {
    fc.assert(
      fc.property(configText, (text) => {
        try {
          const settings = parseConfigText(text, 'exporter.yml', FLAGS.flags, FLAGS.sections);
          for (const rule of (settings.sections.get(EXPECTATIONS) ?? []) as ExpectationRule[]) {
            expect(rule.port === undefined || (Number.isInteger(rule.port) && rule.port >= 1 && rule.port <= 255)).toBe(true);
          }
        } catch (error) {
          expect(error).toBeInstanceOf(UsageError);
          expect((error as Error).message).toMatch(/^config file exporter\.yml(:\d+)?: /);
        }
      }),
      { numRuns: 1000 },
    );
  });
});
