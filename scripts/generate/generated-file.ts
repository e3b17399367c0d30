// What a generator writes: a file of the repository and its content. `npm run generate`
// (scripts/generate/index.ts) writes them; the integrity tests compare them with the committed files.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPOSITORY = fileURLToPath(new URL('../../', import.meta.url));

export interface GeneratedFile {
  /** Relative to the repository's root. */
  path: string;
  content: string | Buffer;
}

/** The committed file's content, or '' when it is missing. */
export function committed(file: string): string {
  try {
    return readFileSync(path.join(REPOSITORY, file), 'utf8');
  } catch {
    return '';
  }
}

/** The message of an integrity test's failure. */
export const stale = (file: string): string => `${file} differs from what its generator writes: run \`npm run generate\``;
