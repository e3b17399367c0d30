// A page made once per state it shows, and made again after it failed.
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
});
