import { describe, expect, it } from 'vitest';
import { chooseV8Flags } from '../src/v8-flags.js';

describe('the V8 flags the exporter sets for itself', () => {
  const ALL = ['--no-opt', '--no-sparkplug', '--semi-space-growth-factor=1', '--memory-reducer-single-gc', '--optimize-for-size', '--liftoff-only'];

  it('turns the compilers off, keeps the young generation small, the memory reducer to one collection, the old generation close to what is live and WebAssembly on its baseline compiler', () => {
    expect(chooseV8Flags([])).toEqual(ALL);
    expect(chooseV8Flags(['--max-semi-space-size=1', '--v8-pool-size=1', ''])).toEqual(ALL);
  });

  it('leaves the compilers to a user who chose', () => {
    for (const choice of ['--opt', '--no-opt', '--turbofan', '--sparkplug', '--no-sparkplug', '--max-opt=2', '--jitless']) {
      expect(chooseV8Flags([choice])).toEqual(ALL.slice(2));
    }
  });

  it('leaves the memory reducer to a user who chose', () => {
    for (const choice of ['--no-memory-reducer', '--memory-reducer', '--no-memory-reducer-single-gc', '--memory-reducer-for-small-heaps']) {
      expect(chooseV8Flags([choice])).toEqual(ALL.filter((flag) => flag !== '--memory-reducer-single-gc'));
    }
  });

  it('leaves the choice between memory and speed to a user who made it', () => {
    for (const choice of ['--optimize-for-size', '--no-optimize-for-size', '--optimize_for_size']) {
      expect(chooseV8Flags([choice])).toEqual(ALL.filter((flag) => flag !== '--optimize-for-size'));
    }
  });

  it('leaves WebAssembly\'s compilers to a user who chose', () => {
    for (const choice of ['--liftoff', '--no-liftoff', '--liftoff-only', '--no-liftoff-only', '--wasm-tier-up', '--no-wasm-dynamic-tiering']) {
      expect(chooseV8Flags([choice])).toEqual(ALL.slice(0, 5));
    }
  });
});
