// A page made once per state it shows, and made again after it failed.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { PageCache } from '../../../src/commands/serve/page-cache.js';

describe('PageCache', () => {
  it('makes a page once per key, again for another key, and again after a page that failed', async () => {
    const cache = new PageCache();
    const snapshot = {};
    let made = 0;
    const make = async (): Promise<string> => `page ${++made}`;
    expect(await cache.get([snapshot, 1], make)).toBe('page 1');
    expect(await cache.get([snapshot, 1], make)).toBe('page 1');
    expect(await cache.get([snapshot, 2], make)).toBe('page 2');
    expect(await cache.get([{}, 2], make)).toBe('page 3');
    await expect(cache.get(['broken'], async () => Promise.reject(new Error('no page')))).rejects.toThrow('no page');
    expect(await cache.get(['broken'], make)).toBe('page 4');
    expect(made).toBe(4);
  });

  it('does not keep the state a page was made for alive', async () => {
    // V8's collector, asked for by name (the flag set now, the function taken from a new context).
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const cache = new PageCache();
    let collected = false;
    const registry = new FinalizationRegistry<void>(() => {
      collected = true;
    });
    let snapshot: object | undefined = { readings: new Array(1000).fill(0) };
    registry.register(snapshot, undefined);
    expect(await cache.get([snapshot, 1], async () => 'page')).toBe('page');
    snapshot = undefined;
    for (let i = 0; i < 50 && !collected; i++) {
      gc();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(collected).toBe(true);
    // And a new state makes a new page.
    expect(await cache.get([{}, 1], async () => 'another page')).toBe('another page');
  });
});
