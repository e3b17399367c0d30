// libibmad prints attributes as `Name:.......value` lines (dots pad the name to a column); the
// perfquery and smpquery parsers read them through this.

/** Field name → value of every `Name:....value` line; continuation lines (flag lists) are skipped. */
export function parseMadDump(text: string): Map<string, string> {
  const fields = new Map<string, string>();
  for (const line of text.split('\n')) {
    const match = /^([A-Za-z][A-Za-z0-9 ]*?):\.*(.*)$/.exec(line.trimEnd());
    if (!match) continue;
    const name = match[1]!;
    if (!fields.has(name)) fields.set(name, match[2]!.trim());
  }
  return fields;
}

/** An unsigned decimal or 0x-hex field; undefined when absent or not a number. */
export function numberField(fields: ReadonlyMap<string, string>, name: string): number | undefined {
  const text = fields.get(name);
  if (text === undefined) return undefined;
  if (/^\d{1,15}$/.test(text)) return Number(text);
  if (/^0x[0-9a-f]{1,12}$/i.test(text)) return Number.parseInt(text, 16);
  return undefined;
}

/** The text after a tool's `iberror: failed: ` (its fatal error), if it printed one. */
export function iberror(stdout: string): string | undefined {
  return /iberror: (?:\[pid \d+\] \S+: )?failed: (.*)$/m.exec(stdout)?.[1]?.trim();
}
