import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { RecurringErrors } from '../../src/log/recurring-errors.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      callback();
    },
  });
  return { logger: pino({ level: 'info' }, stream), lines };
}

const flush = () => new Promise((resolve) => setImmediate(resolve));

describe('RecurringErrors', () => {
  it('logs an error once, summarises it hourly and says when it clears', async () => {
    const { logger, lines } = capture();
    let now = 0;
    const errors = new RecurringErrors(logger, 3_600_000, () => now);
    const error = { collector: 'sysfs' as const, item: 'class/infiniband/mlx5_0/ports/1/rate', message: 'the kernel refused the read (EINVAL)' };
    for (let cycle = 0; cycle < 400; cycle++) {
      errors.cycle('sysfs', [error]);
      now += 10_000; // 400 cycles of 10 s = 4000 s
    }
    errors.cycle('ipoib', []); // another collector's cycle does not clear sysfs errors
    errors.cycle('sysfs', []);
    await flush();
    expect(lines.map((line) => line.msg)).toEqual([
      'read failed; repeats of this error are summarised hourly',
      'read still failing',
      'read works again',
    ]);
    expect(lines[1]).toMatchObject({ occurrences: 361, item: error.item });
    expect(lines[2]).toMatchObject({ occurrences: 400 });
  });
});
