// Natural order written out rather than an Intl.Collator: the collator pages in ICU's collation
// data, 3.3 MiB of resident memory, to sort a few names made of ASCII letters, digits and
// punctuation. For those it orders as ICU's numeric collation does: punctuation (ICU's order)
// before digits before letters, runs of digits by value, letters case-blind with lowercase first
// on a tie. Other characters sort after them by code point. `String.prototype.localeCompare` uses
// the same collator: fabric mode sorted its findings and bad links with it at every cycle, and
// sorts with this instead (a test keeps both out of src/).
const PUNCTUATION = ' _-,;:!?.\'"()[]{}@*/\\&#%`^+<=>|~$';

const isDigit = (code: number): boolean => code >= 0x30 && code <= 0x39;

/** Primary weight of a character that is not a digit. */
function weight(code: number): number {
  const punctuation = PUNCTUATION.indexOf(String.fromCharCode(code));
  if (punctuation >= 0) return punctuation;
  if (code >= 0x61 && code <= 0x7a) return 1000 + code - 0x61;
  if (code >= 0x41 && code <= 0x5a) return 1000 + code - 0x41;
  return 2000 + code;
}

/** Order `mlx5_2` before `mlx5_10` and port `2` before `10`. */
export function compareNatural(a: string, b: string): number {
  let i = 0;
  let j = 0;
  let tie = 0;
  while (i < a.length && j < b.length) {
    const ca = a.charCodeAt(i);
    const cb = b.charCodeAt(j);
    const da = isDigit(ca);
    const db = isDigit(cb);
    if (da && db) {
      let ea = i;
      let eb = j;
      while (ea < a.length && isDigit(a.charCodeAt(ea))) ea++;
      while (eb < b.length && isDigit(b.charCodeAt(eb))) eb++;
      let sa = i;
      let sb = j;
      while (sa < ea - 1 && a.charCodeAt(sa) === 0x30) sa++;
      while (sb < eb - 1 && b.charCodeAt(sb) === 0x30) sb++;
      if (ea - sa !== eb - sb) return ea - sa - (eb - sb);
      for (; sa < ea; sa++, sb++) if (a.charCodeAt(sa) !== b.charCodeAt(sb)) return a.charCodeAt(sa) - b.charCodeAt(sb);
      // The same number with more leading zeros comes later.
      if (tie === 0 && ea - i !== eb - j) tie = ea - i - (eb - j);
      i = ea;
      j = eb;
      continue;
    }
    if (da !== db) return (da ? 1 : weight(ca) < 1000 ? 0 : 2) - (db ? 1 : weight(cb) < 1000 ? 0 : 2);
    const wa = weight(ca);
    const wb = weight(cb);
    if (wa !== wb) return wa - wb;
    if (tie === 0 && ca !== cb) tie = ca > cb ? -1 : 1;
    i++;
    j++;
  }
  if (a.length - i !== b.length - j) return a.length - i - (b.length - j);
  return tie;
}
