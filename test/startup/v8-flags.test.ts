import { describe, expect, it } from 'vitest';
import { asksForFabricMode, chooseV8Flags, FABRIC_HEAP_GROWING, MEMORY_REDUCER_ONE_GC } from '../../src/startup/v8-flags.js';

describe('the V8 flags the exporter sets for itself', () => {
  const ALL = [
    '--no-opt',
    '--no-sparkplug',
    '--semi-space-growth-factor=1',
    MEMORY_REDUCER_ONE_GC,
    '--optimize-for-size',
    '--liftoff-only',
  ];

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
    for (const choice of [
      '--no-memory-reducer',
      '--memory-reducer',
      '--no-memory-reducer-single-gc',
      '--memory-reducer-gc-count=2',
      '--memory-reducer-for-small-heaps',
    ]) {
      expect(chooseV8Flags([choice])).toEqual(ALL.filter((flag) => flag !== MEMORY_REDUCER_ONE_GC));
    }
  });

  it('leaves the choice between memory and speed to a user who made it', () => {
    for (const choice of ['--optimize-for-size', '--no-optimize-for-size', '--optimize_for_size']) {
      expect(chooseV8Flags([choice])).toEqual(ALL.filter((flag) => flag !== '--optimize-for-size'));
    }
  });

  it("leaves WebAssembly's compilers to a user who chose", () => {
    for (const choice of [
      '--liftoff',
      '--no-liftoff',
      '--liftoff-only',
      '--no-liftoff-only',
      '--wasm-tier-up',
      '--no-wasm-dynamic-tiering',
    ]) {
      expect(chooseV8Flags([choice])).toEqual(ALL.slice(0, 5));
    }
  });

  it('keeps the optimizing compilers for fabric mode, which parses and renders hundreds of thousands of lines a cycle, and lets its heap grow', () => {
    const fabric = ['--semi-space-growth-factor=1', MEMORY_REDUCER_ONE_GC, FABRIC_HEAP_GROWING, '--liftoff-only'];
    expect(chooseV8Flags([], { fabric: true })).toEqual(fabric);
    expect(chooseV8Flags(['--no-opt'], { fabric: true })).toEqual(fabric);
  });

  it("keeps fabric mode's old generation within a quarter of what was live, unless the user chose how far it grows", () => {
    expect(FABRIC_HEAP_GROWING).toBe('--heap-growing-percent=25');
    expect(chooseV8Flags([], { fabric: true })).toContain(FABRIC_HEAP_GROWING);
    expect(chooseV8Flags([])).not.toContain(FABRIC_HEAP_GROWING);
    for (const choice of ['--heap-growing-percent=50', '--heap_growing_percent=10']) {
      const flags = chooseV8Flags([choice], { fabric: true });
      expect(flags.some((flag) => flag.startsWith('--heap'))).toBe(false);
    }
  });
});

describe('whether the arguments ask for fabric mode', () => {
  const config = (file: string): unknown =>
    ({ 'on.yml': { fabric: { enabled: true } }, 'off.yml': { fabric: { enabled: false } }, 'host.yml': { diag: {} }, 'empty.yml': null })[
      file
    ];
  const unreadable = (): unknown => {
    throw new Error('ENOENT');
  };

  it.each([
    [['--collector.fabric'], true],
    [['check', '--collector.fabric', '--format=json'], true],
    [['--collector.fabric=true'], true],
    [['--collector.fabric', '--no-collector.fabric'], false],
    [['--collector.fabric=false'], false],
    [[], false],
    [['--config.file', 'on.yml'], true],
    [['--config.file=on.yml'], true],
    [['--config.file', 'on.yml', '--no-collector.fabric'], false],
    [['--config.file', 'off.yml', '--collector.fabric'], true],
    [['--config.file', 'off.yml'], false],
    [['--config.file', 'host.yml'], false],
    [['--config.file', 'empty.yml'], false],
  ])('%j: %s', (argv, fabric) => {
    expect(asksForFabricMode(argv, config)).toBe(fabric);
  });

  it('says no for a config file that cannot be read (the program says why a moment later)', () => {
    expect(asksForFabricMode(['--config.file', '/nonexistent.yml'], unreadable)).toBe(false);
  });
});
