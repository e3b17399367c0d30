// A page made once per state of what it shows (the snapshot and when it was read) and shared by
// every view of that state: in fabric mode a page judges every port, seconds of work at 120 000.
// A page that could not be made is made again at the next view. The state is held weakly: a
// page viewed once must not keep its snapshot (a whole ports cycle's readings, 17 MiB for a shard
// of the 122 880-port fabric) alive for as long as no one views a page again.

/** An item of a key as kept: an object by a weak reference, anything else as it is. */
type KeptItem = { weak: WeakRef<object> } | { value: unknown };

const keep = (item: unknown): KeptItem =>
  (typeof item === 'object' && item !== null) || typeof item === 'function' ? { weak: new WeakRef(item) } : { value: item };

const same = (kept: KeptItem, item: unknown): boolean => ('weak' in kept ? kept.weak.deref() === item : kept.value === item);

export class PageCache {
  private last: { key: readonly KeptItem[]; page: Promise<string> } | undefined;

  /** The page for `key` (compared item by item, by identity), made by `make` when the key changed. */
  get(key: readonly unknown[], make: () => Promise<string>): Promise<string> {
    const last = this.last;
    if (last && last.key.length === key.length && last.key.every((kept, i) => same(kept, key[i]))) return last.page;
    const made = { key: key.map(keep), page: make() };
    this.last = made;
    made.page.catch(() => {
      if (this.last === made) this.last = undefined;
    });
    return made.page;
  }
}
