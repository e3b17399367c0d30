// A page made once per state of what it shows (the snapshot and when it was read) and shared by
// every view of that state: in fabric mode a page judges every port, seconds of work at 120 000.
// A page that could not be made is made again at the next view.
export class PageCache {
  private last: { key: readonly unknown[]; page: Promise<string> } | undefined;

  /** The page for `key` (compared item by item, by identity), made by `make` when the key changed. */
  get(key: readonly unknown[], make: () => Promise<string>): Promise<string> {
    const last = this.last;
    if (last && last.key.length === key.length && last.key.every((item, i) => item === key[i])) return last.page;
    const made = { key, page: make() };
    this.last = made;
    made.page.catch(() => {
      if (this.last === made) this.last = undefined;
    });
    return made.page;
  }
}
