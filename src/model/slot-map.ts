// A slot for each key, for state kept as columns (typed arrays indexed by slot) instead of an
// object per key: the links the bad-links verdict follows are some 27 000 in one shard of four of
// the 122 880-port fabric and 110 000 unsharded, each with a dozen numbers. As objects (a track,
// its two ends, their array, the boxed numbers) they were some 350 bytes a link, 9.7 MiB in the
// shard; as columns a link costs its key, its map entry and some 60 bytes. A freed slot is
// handed out again before a new one, so the columns grow only with the most keys held at once.

/** Typed arrays a column may be. */
type Column = Float64Array | Int8Array | Uint16Array;

export class SlotMap {
  private readonly slots = new Map<string, number>();
  private readonly free: number[] = [];
  /** Slots handed out so far, freed ones included: the columns hold at least this many. */
  private used = 0;

  /** How many slots the columns must hold (grown by doubling). */
  capacity = 0;

  get size(): number {
    return this.slots.size;
  }

  get(key: string): number | undefined {
    return this.slots.get(key);
  }

  /** A new slot for a key it does not hold (a freed one first); `capacity` may have grown. */
  add(key: string): number {
    let slot = this.free.pop();
    if (slot === undefined) {
      slot = this.used++;
      if (this.used > this.capacity) this.capacity = Math.max(16, this.capacity * 2);
    }
    this.slots.set(key, slot);
    return slot;
  }

  /** Forget a key; its slot (returned) is handed out again. */
  delete(key: string): number | undefined {
    const slot = this.slots.get(key);
    if (slot === undefined) return undefined;
    this.slots.delete(key);
    this.free.push(slot);
    return slot;
  }

  /** Keys and their slots, in the order the keys were added (deleting the current one while walking is safe, as for a Map). */
  entries(): IterableIterator<[string, number]> {
    return this.slots.entries();
  }
}

/** A column at the map's capacity: itself while it is large enough, else a larger copy of it (the new room filled with `fill`). */
export function sized<C extends Column>(column: C, capacity: number, fill = 0): C {
  if (column.length >= capacity) return column;
  const larger = new (column.constructor as new (length: number) => C)(capacity);
  larger.set(column);
  if (fill !== 0) larger.fill(fill, column.length);
  return larger;
}
