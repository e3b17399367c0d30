import { describe, expect, it } from 'vitest';
import { RecurringErrors } from '../../src/log/recurring-errors.js';
import { logLines } from '../support/log-lines.js';

describe('RecurringErrors', () => {
  it('logs an error once, summarises it hourly and says when it clears', () => {
    const { logger, lines, messages } = logLines('info');
    let now = 0;
    const errors = new RecurringErrors(logger, 3_600_000, () => now);
    const error = {
      collector: 'sysfs' as const,
      item: 'class/infiniband/mlx5_0/ports/1/rate',
      message: 'the kernel refused the read (EINVAL)',
    };
    for (let cycle = 0; cycle < 400; cycle++) {
      errors.cycle('sysfs', [error]);
      now += 10_000; // 400 cycles of 10 s = 4000 s
    }
    errors.cycle('ipoib', []); // another collector's cycle does not clear sysfs errors
    errors.cycle('sysfs', []);
    expect(messages()).toEqual(['read failed; repeats of this error are summarised hourly', 'read still failing', 'read works again']);
    expect(lines[1]).toMatchObject({ occurrences: 361, item: error.item });
    expect(lines[2]).toMatchObject({ occurrences: 400 });
  });

  it('knows a failure by its item: another message for the same item is the same failure going on, told in the summary', () => {
    const { logger, lines, messages } = logLines('info');
    let now = 0;
    const errors = new RecurringErrors(logger, 3_600_000, () => now);
    const item = 'ibnetdiscover';
    const failures = ['killed after 5000 ms time limit (--diag.timeout)', 'exit code 255: ibnetdiscover: iberror: failed: discover failed'];
    for (let cycle = 0; cycle < 7; cycle++) {
      // Each unparsable line of a garbled output is one read error of the same item.
      errors.cycle('fabric_discovery', [
        { collector: 'fabric_discovery', item, message: failures[cycle % 2]! },
        { collector: 'fabric_discovery', item, message: failures[cycle % 2]! },
      ]);
      now += 600_000;
    }
    expect(messages()).toEqual(['read failed; repeats of this error are summarised hourly', 'read still failing']);
    expect(lines[0]).toMatchObject({ item, error: failures[0] });
    expect(lines[1]).toMatchObject({ item, error: failures[0], occurrences: 7 });
  });

  it('says "works again" only of an item the cycle read: one that vanished is kept quietly until it is read again', () => {
    const { logger, lines, messages } = logLines('info');
    const errors = new RecurringErrors(logger);
    const counter = {
      collector: 'sysfs' as const,
      item: 'class/infiniband/mlx5_1/ports/1/counters/symbol_error',
      message: 'the kernel refused the read (EINVAL)',
    };
    const rate = { collector: 'sysfs' as const, item: 'class/infiniband/mlx5_0/ports/1/rate', message: 'unexpected content "fast"' };
    const onlyMlx5_0 = (item: string): boolean => !item.startsWith('class/infiniband/mlx5_1/');
    errors.cycle('sysfs', [counter, rate]);
    // mlx5_1 unplugged, mlx5_0's rate fixed: only mlx5_0 was read.
    errors.cycle('sysfs', [], onlyMlx5_0);
    expect(lines.at(-1)).toMatchObject({ msg: 'read works again', item: rate.item });
    // Back, still failing: the same failure, no new line.
    errors.cycle('sysfs', [counter]);
    expect(messages()).toHaveLength(3);
    // Back and working.
    errors.cycle('sysfs', []);
    expect(lines.at(-1)).toMatchObject({ msg: 'read works again', item: counter.item, occurrences: 2 });
    expect(messages()).toEqual([
      'read failed; repeats of this error are summarised hourly',
      'read failed; repeats of this error are summarised hourly',
      'read works again',
      'read works again',
    ]);
  });
});
