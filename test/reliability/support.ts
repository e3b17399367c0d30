// What the reliability tests share: a strict reader of the text exposition format, tool stand-ins
// as small shell scripts, and /proc views of a process's children.
import { chmod, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';

const SAMPLE =
  /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\.)*",?)*\})? (-?(?:\d+(?:\.\d+)?(?:e[+-]?\d+)?|Inf|NaN)|\+Inf)$/;

/**
 * Parse a whole exposition: it must end with a newline, every line must be a comment or a sample,
 * and no series may appear twice. Returns series (name + labels) → value. Throws on anything else.
 */
export function parseExposition(text: string): Map<string, number> {
  if (text.length > 0 && !text.endsWith('\n'))
    throw new Error(`exposition does not end with a newline: …${JSON.stringify(text.slice(-80))}`);
  const series = new Map<string, number>();
  for (const line of text.split('\n').slice(0, -1)) {
    // The format ignores empty lines; prom-client puts one between metric families.
    if (line === '' || line.startsWith('# HELP ') || line.startsWith('# TYPE ')) continue;
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    const key = `${match[1]}${match[2] ?? ''}`;
    if (series.has(key)) throw new Error(`series twice: ${key}`);
    series.set(key, Number(match[3]));
  }
  return series;
}

/** Write an executable /bin/sh script. */
export async function script(dir: string, name: string, body: string): Promise<string> {
  const file = path.join(dir, name);
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
  return file;
}

/** Fields of /proc/<pid>/stat after the command name: state, ppid, pgrp… (undefined when gone). */
async function statFields(pid: number): Promise<string[] | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/** Running, not gone and not a zombie waiting to be reaped. */
export async function alive(pid: number): Promise<boolean> {
  const fields = await statFields(pid);
  return fields !== undefined && fields[0] !== 'Z';
}

/** PIDs of the live (non-zombie) children of `parent`, from /proc. */
export async function childrenOf(parent: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = await statFields(Number(entry));
    if (fields && fields[0] !== 'Z' && Number(fields[1]) === parent) children.push(Number(entry));
  }
  return children;
}

/** Live processes whose command line mentions `marker` (e.g. a temporary directory). */
export async function processesMentioning(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry) || Number(entry) === process.pid) continue;
    try {
      const cmdline = await readFile(`/proc/${entry}/cmdline`, 'utf8');
      if (cmdline.includes(marker) && (await alive(Number(entry)))) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}
