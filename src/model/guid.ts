// GUIDs appear as "0002:c903:0031:fdc0" (sysfs), "0x0002c9030031fdc0" (ibstat) and "0x100001"
// (sminfo, not zero-padded). Everything is exported in the tools' padded form so that series from
// sysfs and from infiniband-diags join on the same string.

const SYSFS_GUID = /^([0-9a-f]{1,4}):([0-9a-f]{1,4}):([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i;
const HEX_GUID = /^0x([0-9a-f]{1,16})$/i;

/** Normalise any GUID form to `0x` + 16 lower-case hex digits; undefined when it is not a GUID. */
export function normaliseGuid(text: string): string | undefined {
  // The tools' own form, as nearly every GUID a fabric's outputs print: shared as it is, without
  // the pieces the general path makes (a parse of 122 880 ports normalises 245 000 GUIDs a cycle).
  if (isPaddedGuid(text)) return sharedGuid(text);
  const trimmed = text.trim();
  const sysfs = SYSFS_GUID.exec(trimmed);
  if (sysfs)
    return sharedGuid(
      '0x' +
        sysfs
          .slice(1, 5)
          .map((group) => group.padStart(4, '0').toLowerCase())
          .join(''),
    );
  const hex = HEX_GUID.exec(trimmed);
  if (hex) return sharedGuid('0x' + hex[1]!.toLowerCase().padStart(16, '0'));
  return undefined;
}

/**
 * Every normalised GUID seen, each one string shared by whoever holds it: at 122 880 switch ports
 * the topology, the readings, the cache and each cycle's parses held 1.1 million GUID strings for
 * 50 000 GUIDs, each a concatenation of its pieces (or a slice keeping its whole output line),
 * 110 MiB. Forgotten whole past a bound, so GUIDs that come and go cannot grow it for ever.
 */
const GUIDS = new Map<string, string>();
const MAX_SHARED_GUIDS = 500_000;

/** The one shared string of a normalised GUID (`0x` + 16 lower-case hex digits). */
export function sharedGuid(guid: string): string {
  const known = GUIDS.get(guid);
  if (known !== undefined) return known;
  if (GUIDS.size >= MAX_SHARED_GUIDS) GUIDS.clear();
  // A copy of its own, one flat string: not a tree of pieces nor a slice of a larger text.
  const codes: number[] = [];
  for (let i = 0; i < guid.length; i++) codes.push(guid.charCodeAt(i));
  const own = String.fromCharCode(...codes);
  GUIDS.set(own, own);
  return own;
}

/** `0x` and 16 lower-case hex digits, nothing else. */
function isPaddedGuid(text: string): boolean {
  if (text.length !== 18 || text.charCodeAt(0) !== 48 || text.charCodeAt(1) !== 120) return false;
  for (let i = 2; i < 18; i++) {
    const c = text.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false;
  }
  return true;
}

/** Port GUID = the interface identifier (low 64 bits) of GID index 0, e.g. `fe80:0000:0000:0000:0002:c903:0031:fdc1`. */
export function portGuidFromGid(gid: string): string | undefined {
  const groups = gid.trim().split(':');
  if (groups.length !== 8 || !groups.every((group) => /^[0-9a-f]{1,4}$/i.test(group))) return undefined;
  const guid = normaliseGuid(groups.slice(4).join(':'));
  return guid === '0x0000000000000000' ? undefined : guid;
}
