// The node-name-map file of infiniband-diags and opensm (--node-name-map): one `<guid> "<name>"`
// per line, `#` comments and blank lines ignored; the GUID as C's strtoull reads it (0x hex,
// decimal, or 0-prefixed octal); the name is the text up to the next `"` or `#`. The first line
// of a GUID wins, as in rdma-core's map.
import { atOnce, pacer, type Work } from '../event-loop/time-slices.js';
import { normaliseGuid } from '../model/guid.js';

export interface NodeNameMap {
  /** Node GUID (`0x` + 16 hex digits) → name. */
  names: Map<string, string>;
  /** Lines the tools would reject (they then ignore the whole file), 1-based. */
  errors: { line: number; text: string }[];
}

function strtoull(text: string): bigint | undefined {
  try {
    if (/^0x[0-9a-f]+$/i.test(text)) return BigInt(text);
    if (/^0[0-7]*$/.test(text)) return BigInt(`0o${text.slice(1) || '0'}`);
    if (/^[1-9]\d*$/.test(text)) return BigInt(text);
  } catch {
    // not a number
  }
  return undefined;
}

/**
 * The map as work in steps (event-loop/time-slices.ts): read again at each discovery while the
 * server runs, a map of 16 MiB (its size limit) is a second of parsing, taken a slice at a time.
 */
export function* nodeNameMapSteps(text: string): Work<NodeNameMap> {
  const names = new Map<string, string>();
  const errors: NodeNameMap['errors'] = [];
  const pace = pacer();
  let index = 0;
  for (let from = 0; from <= text.length; index++) {
    const newline = text.indexOf('\n', from);
    const end = newline < 0 ? text.length : newline;
    const raw = text.slice(from, end);
    from = end + 1;
    if (pace()) yield;
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const match = /^(\S+?)(?=\s|#|$)(.*)$/.exec(line)!;
    const number = strtoull(match[1]!);
    if (number === undefined || number > 0xffffffffffffffffn) {
      errors.push({ line: index + 1, text: raw });
      continue;
    }
    // strtok(rest, "\"#"): leading quotes and hashes skipped, the name ends at the next one.
    const name = /^["#]*([^"#]+)/.exec(match[2]!.trimStart())?.[1]?.trimEnd();
    const guid = normaliseGuid(`0x${number.toString(16)}`)!;
    if (name && !names.has(guid)) names.set(guid, name);
  }
  return { names, errors };
}

export function parseNodeNameMap(text: string): NodeNameMap {
  return atOnce(nodeNameMapSteps(text));
}
