// Slurm hostlist expressions (`gpu[001-004,010],cpu-a[1,3-4]`, `r[1-2]n[01-16]`) expanded to host
// names as Slurm does: commas outside brackets separate expressions, each bracket group is a list
// of numbers and ranges, several groups in one name multiply, and a range keeps the zero padding
// of its lower bound (`[08-10]` is 08 09 10). The text comes from squeue or a jobs file, so a
// hostlist that would expand to more than a cluster's hosts is refused rather than allocated.

/**
 * One job's hosts at most: an InfiniBand subnet has 49 151 unicast LIDs, so no job on one fabric
 * spans more hosts; a larger expansion is a mistake or hostile.
 */
export const MAX_HOSTLIST_HOSTS = 65_536;

/**
 * The hosts of all the jobs of one reading (squeue's output, a jobs file) at most: jobs may share
 * hosts, but a million host names (tens of MiB) is past any cluster; what comes after is refused.
 */
export const MAX_LISTED_HOSTS = 1_000_000;

export type HostlistExpansion = { hosts: string[]; error?: undefined } | { hosts?: undefined; error: string };

/** One bracket group's members, as text (padded). */
function groupMembers(group: string, limit: number): string[] | string {
  const members: string[] = [];
  for (const item of group.split(',')) {
    const match = /^(\d+)(?:-(\d+))?$/.exec(item.trim());
    if (!match) return `"[${group}]": "${item}" is neither a number nor a range of numbers`;
    const low = match[1]!;
    const high = match[2] ?? low;
    const from = Number(low);
    const to = Number(high);
    if (!Number.isSafeInteger(to) || to < from) return `"[${group}]": range ${item} runs backwards or is too large`;
    if (members.length + (to - from + 1) > limit) return `expands to more than ${limit} hosts`;
    // Slurm pads to the width of the lower bound when it has a leading zero.
    const width = low.length > 1 && low.startsWith('0') ? low.length : 0;
    for (let n = from; n <= to; n++) members.push(String(n).padStart(width, '0'));
  }
  return members;
}

/** One expression without top-level commas: literal text and bracket groups. */
function expandOne(expression: string, limit: number): string[] | string {
  let names = [''];
  let rest = expression;
  while (rest.length > 0) {
    const open = rest.indexOf('[');
    if (open < 0) {
      if (rest.includes(']')) return `"${expression}": "]" without "["`;
      names = names.map((name) => name + rest);
      break;
    }
    const literal = rest.slice(0, open);
    if (literal.includes(']')) return `"${expression}": "]" without "["`;
    const close = rest.indexOf(']', open);
    if (close < 0) return `"${expression}": "[" without "]"`;
    const members = groupMembers(rest.slice(open + 1, close), limit);
    if (typeof members === 'string') return members;
    if (names.length * members.length > limit) return `expands to more than ${limit} hosts`;
    names = names.flatMap((name) => members.map((member) => name + literal + member));
    rest = rest.slice(close + 1);
  }
  return names;
}

/** Top-level items: commas inside brackets belong to the group. */
function splitTopLevel(hostlist: string): string[] | undefined {
  const items: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < hostlist.length; i++) {
    const c = hostlist[i];
    if (c === '[') depth += 1;
    else if (c === ']') depth -= 1;
    else if (c === ',' && depth === 0) {
      items.push(hostlist.slice(start, i));
      start = i + 1;
    }
    if (depth < 0 || depth > 1) return undefined;
  }
  items.push(hostlist.slice(start));
  return items;
}

/** The host names of a hostlist, each once, in order; an empty text is no host (a pending job's `%N`). */
export function expandHostlist(hostlist: string, limit = MAX_HOSTLIST_HOSTS): HostlistExpansion {
  const text = hostlist.trim();
  if (text === '' || text === '(null)') return { hosts: [] };
  const items = splitTopLevel(text);
  if (!items) return { error: `"${text}": brackets do not pair (or nest)` };
  const hosts = new Set<string>();
  for (const item of items) {
    const expression = item.trim();
    if (expression === '') return { error: `"${text}": an empty name between commas` };
    if (/\s/.test(expression)) return { error: `"${expression}": a host name has no white space` };
    const names = expandOne(expression, limit - hosts.size);
    if (typeof names === 'string') return { error: names };
    for (const name of names) hosts.add(name);
  }
  return { hosts: [...hosts] };
}
