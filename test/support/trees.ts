// Fixture trees copied to a temporary directory, for tests that make them hostile.
import { cp, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
export const ZOO = path.join(FIXTURES, 'sys/zoo');
export const DGX = path.join(FIXTURES, 'sys/dgx');
export const ZOO_CONFIG = path.join(FIXTURES, 'config/zoo.yml');

export interface TempTree {
  root: string;
  remove(): Promise<void>;
}

/** A private copy of a fixture tree (symlinks kept as symlinks). */
export async function copyTree(source: string): Promise<TempTree> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-tree-'));
  const root = path.join(dir, 'sys');
  await cp(source, root, { recursive: true, verbatimSymlinks: true });
  return { root, remove: () => rm(dir, { recursive: true, force: true }) };
}

export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));
