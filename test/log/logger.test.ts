// The exporter's log lines are written as they are logged: a crash's line is the last one out,
// and no line logged before it is lost (pino's default destination writes in the background and
// flushes at exit, so a line under way could follow the crash's or vanish).
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../support/trees.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ibx-logger-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the JSON log on standard error', () => {
  it('has each line in the file when the call returns, in order, the ones before a crash included', () => {
    // A process whose standard error is a file: two lines in the same turn (in the background the
    // second would wait behind the first's write), the file read at once, then a crash's line (pino
    // writes a fatal line and what waits at once, but not before a write under way) and an exit
    // without any flush.
    const script = path.join(dir, 'log-then-crash.mts');
    writeFileSync(
      script,
      [
        "import { readFileSync } from 'node:fs';",
        `import { createLogger } from ${JSON.stringify(path.join(PROJECT_ROOT, 'src/log/logger.ts'))};`,
        "const logger = createLogger('info', 'json');",
        "logger.info('first');",
        "logger.info('second');",
        "process.stdout.write(readFileSync('/proc/self/fd/2', 'utf8'));",
        "logger.fatal('third');",
        'process.reallyExit(1);',
      ].join('\n'),
    );
    const stderr = path.join(dir, 'stderr.log');
    const fd = openSync(stderr, 'w');
    const run = spawnSync(process.execPath, ['--import', 'tsx', script], { cwd: PROJECT_ROOT, stdio: ['ignore', 'pipe', fd] });
    closeSync(fd);
    expect(run.status).toBe(1);
    const seen = run.stdout.toString();
    const messages = (text: string) =>
      text
        .split('\n')
        .filter(Boolean)
        .map((line) => (JSON.parse(line) as { msg: string }).msg);
    expect(messages(seen)).toEqual(['first', 'second']);
    expect(messages(readFileSync(stderr, 'utf8'))).toEqual(['first', 'second', 'third']);
  });
});
