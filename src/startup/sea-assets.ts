// What the single executable holds besides its main script (sea-main.ts), as Node.js's
// single-executable assets: the bundle, its V8 code caches, and the demo host. The release build
// (scripts/release/binary.mjs) packs them; the binary unpacks the demo host when --demo asks for it.
import { lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';

export const ASSETS = { bundle: 'exporter.cjs', demoHost: 'demo-host' } as const;

/**
 * The asset of the bundle's code cache made under the V8 flags `v8Flags` (the exporter's own,
 * v8-flags.ts: a host's, or fabric mode's): V8 takes a cache only under the flags it was made with.
 */
export const codeCacheAsset = (v8Flags: readonly string[]): string => `code-cache ${v8Flags.join(' ')}`;

/**
 * One file or symbolic link of a packed tree (the demo host asset is a JSON array of them), its path
 * relative to the tree's root with `/` between names. sysfs needs no more: no empty directories,
 * modes or times (its files are read, never stat'ed for a mode).
 */
export interface PackedEntry {
  path: string;
  /** A file's bytes, base64. */
  data?: string;
  /** A link's target. */
  link?: string;
}

/** The files and links under `root` at the relative paths `paths` (directories walked, in name order). */
export function packTree(root: string, paths: readonly string[]): PackedEntry[] {
  const entries: PackedEntry[] = [];
  const visit = (relative: string): void => {
    const full = path.join(root, relative);
    const stat = lstatSync(full);
    if (stat.isSymbolicLink()) entries.push({ path: relative, link: readlinkSync(full) });
    else if (stat.isDirectory()) for (const name of readdirSync(full).sort()) visit(`${relative}/${name}`);
    else entries.push({ path: relative, data: readFileSync(full).toString('base64') });
  };
  for (const relative of paths) visit(relative);
  return entries;
}

/** Writes packed entries under `root`. */
export function unpackTree(entries: readonly PackedEntry[], root: string): void {
  for (const entry of entries) {
    const target = path.join(root, entry.path);
    mkdirSync(path.dirname(target), { recursive: true });
    if (entry.link !== undefined) symlinkSync(entry.link, target);
    else writeFileSync(target, Buffer.from(entry.data ?? '', 'base64'));
  }
}
