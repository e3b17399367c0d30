// The simulator's harness where a tool is not installed: Lab.start rejects with what could not be
// started, instead of an unhandled 'error' event ending the whole process (the scale bench's check
// of the real tools' formats relies on that to say "not checked").
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Lab } from '../../synthetic/ibsim-lab.js';

describe('the ibsim harness without ibsim', () => {
  let dir: string;
  let savedPath: string | undefined;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'ibx-no-ibsim-'));
    savedPath = process.env.PATH;
  });
  afterEach(async () => {
    process.env.PATH = savedPath;
    await rm(dir, { recursive: true, force: true });
  });

  it('rejects Lab.start, naming ibsim, when it is not on PATH', async () => {
    // mkfifo, which the harness runs before ibsim, is the only tool on PATH.
    const mkfifo = execFileSync('sh', ['-c', 'command -v mkfifo'], { encoding: 'utf8' }).trim();
    await mkdir(path.join(dir, 'bin'));
    await symlink(mkfifo, path.join(dir, 'bin', 'mkfifo'));
    process.env.PATH = path.join(dir, 'bin');
    await expect(Lab.start('two-hosts.net')).rejects.toThrow(/ibsim could not be started: spawn ibsim ENOENT/);
  });
});
