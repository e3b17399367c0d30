import { describe, expect, it } from 'vitest';
import { chooseV8Flags } from '../src/v8-flags.js';

describe('the V8 flags the exporter sets for itself', () => {
  it('turns the compilers off, keeps the young generation small and the memory reducer to one collection', () => {
    expect(chooseV8Flags([])).toEqual(['--no-opt', '--no-sparkplug', '--semi-space-growth-factor=1', '--memory-reducer-single-gc']);
    expect(chooseV8Flags(['--max-semi-space-size=1', '--v8-pool-size=1', ''])).toEqual(['--no-opt', '--no-sparkplug', '--semi-space-growth-factor=1', '--memory-reducer-single-gc']);
  });

  it('leaves the compilers to a user who chose', () => {
    for (const choice of ['--opt', '--no-opt', '--turbofan', '--sparkplug', '--no-sparkplug', '--max-opt=2', '--jitless']) {
      expect(chooseV8Flags([choice])).toEqual(['--semi-space-growth-factor=1', '--memory-reducer-single-gc']);
    }
  });

  it('leaves the memory reducer to a user who chose', () => {
    for (const choice of ['--no-memory-reducer', '--memory-reducer', '--no-memory-reducer-single-gc', '--memory-reducer-for-small-heaps']) {
      expect(chooseV8Flags([choice])).toEqual(['--no-opt', '--no-sparkplug', '--semi-space-growth-factor=1']);
    }
  });
});
