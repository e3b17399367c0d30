// The one reader of the files a person names: regular files of a bounded size, or an error that
// names the file and the reason, never a wait for a FIFO's writer.
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileRefused, readBoundedFile, readBoundedText, type FileKind } from '../../src/files/bounded-file.js';

const SMALL: FileKind = { name: 'test file', maxBytes: 100 };
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-bounded-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const refusal = (file: string, kind = SMALL): string => {
  try {
    readBoundedFile(file, kind);
  } catch (error) {
    expect(error).toBeInstanceOf(FileRefused);
    return (error as Error).message;
  }
  throw new Error(`${file} was read`);
};

describe('readBoundedFile', () => {
  it('reads a regular file up to its limit, the empty file included', () => {
    const file = path.join(dir, 'ok');
    writeFileSync(file, 'é'.repeat(50));
    expect(readBoundedText(file, SMALL)).toBe('é'.repeat(50));
    writeFileSync(file, '');
    expect(readBoundedText(file, SMALL)).toBe('');
  });

  it('refuses a file one byte over its limit', () => {
    const file = path.join(dir, 'big');
    writeFileSync(file, 'x'.repeat(101));
    expect(refusal(file)).toBe(`test file ${file}: is 101 bytes, more than the 100 bytes a test file may have`);
  });

  it('refuses a FIFO at once, without a writer', () => {
    const fifo = path.join(dir, 'fifo');
    execFileSync('mkfifo', [fifo]);
    expect(refusal(fifo)).toBe(`test file ${fifo}: is a FIFO, not a regular file`);
  });

  it('refuses a directory and a character device', () => {
    const folder = path.join(dir, 'folder');
    mkdirSync(folder);
    expect(refusal(folder)).toBe(`test file ${folder}: is a directory, not a regular file`);
    // /dev/zero never ends: read, it would fill all memory.
    expect(refusal('/dev/zero')).toBe('test file /dev/zero: is a character device, not a regular file');
  });

  it('names what failed when the file cannot be opened', () => {
    expect(refusal(path.join(dir, 'absent'))).toMatch(/^test file .*absent: cannot be read: ENOENT/);
  });

  it('stops a file that grows past the limit while it is read (/proc files report size 0)', () => {
    // /proc/self/maps has size 0 in fstat and holds more than a few bytes: read on, up to the limit.
    expect(refusal('/proc/self/maps', { name: 'tiny', maxBytes: 10 })).toBe(
      'tiny /proc/self/maps: is more than the 10 bytes a tiny may have',
    );
    expect(readBoundedText('/proc/self/maps', { name: 'maps', maxBytes: 1024 * 1024 })).toMatch(/\n$/);
  });
});
