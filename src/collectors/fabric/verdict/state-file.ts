// The verdict's state file under --fabric.state-dir: read once at start through the bounded file
// reader, written after each cycle that changed it (a temporary file, fsync, rename: a crash leaves
// the old file or the new one, never half of one). Nothing here is fatal: a missing file is a
// first start; an unreadable, corrupt or foreign-version file is one log line and a fresh start;
// a directory that cannot be written is one log line, and the list is kept in memory only.
import { closeSync, fsyncSync, mkdirSync, openSync, renameSync, writeSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { FileRefused, VERDICT_STATE_FILE, readBoundedText } from '../../../files/bounded-file.js';
import type { BadLink } from '../../../model/link-verdict.js';
import { parseVerdictState, verdictStateText } from '../../../model/verdict-state.js';

export const STATE_FILE_NAME = 'fabric-verdict.json';

export class VerdictStateFile {
  readonly file: string;
  private written: string | undefined;
  /** Writing failed, and the log said so: said again only after a write worked. */
  private failing = false;

  constructor(
    stateDir: string,
    private readonly logger: Logger,
  ) {
    this.file = path.join(stateDir, STATE_FILE_NAME);
  }

  /** The links the file holds; none on a first start or when it cannot be used. */
  load(): BadLink[] {
    let text: string;
    try {
      text = readBoundedText(this.file, VERDICT_STATE_FILE);
    } catch (error) {
      // A first start: an empty list needs no file (nor the directory made for it).
      if (error instanceof FileRefused && /ENOENT/.test(error.reason)) {
        this.written = verdictStateText([]);
        return [];
      }
      this.logger.warn(
        { file: this.file, reason: error instanceof FileRefused ? error.reason : (error as Error).message },
        'the bad-links state file cannot be read: starting with an empty list',
      );
      return [];
    }
    const parsed = parseVerdictState(text);
    if ('error' in parsed) {
      this.logger.warn({ file: this.file, reason: parsed.error }, 'the bad-links state file is not usable: starting with an empty list');
      return [];
    }
    this.written = text;
    return parsed.links;
  }

  /** Write `links` when they changed since the last write. */
  save(links: readonly BadLink[]): void {
    const text = verdictStateText(links);
    if (text === this.written) return;
    const temporary = `${this.file}.${process.pid}.tmp`;
    try {
      mkdirSync(path.dirname(this.file), { recursive: true });
      const fd = openSync(temporary, 'w', 0o644);
      try {
        writeSync(fd, text);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temporary, this.file);
      this.written = text;
      if (this.failing) this.logger.info({ file: this.file }, 'the bad-links state file is written again');
      this.failing = false;
    } catch (error) {
      if (!this.failing)
        this.logger.error(
          { file: this.file, err: (error as Error).message },
          'the bad-links state file cannot be written (--fabric.state-dir): the list is kept in memory only, and a restart forgets it',
        );
      this.failing = true;
    }
  }
}
