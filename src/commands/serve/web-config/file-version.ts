// What identifies one version of a watched file (the web config file, its certificate files).
import { statSync } from 'node:fs';

/** What identifies one version of a file, its size first: a changed, replaced or re-linked file differs. */
export function fileVersion(file: string): string {
  try {
    const stat = statSync(file);
    return `${stat.size}:${stat.dev}:${stat.ino}:${stat.mtimeMs}:${stat.ctimeMs}`;
  } catch (error) {
    return `missing:${(error as NodeJS.ErrnoException).code ?? ''}`;
  }
}
