// A fake `mstlink` for the module source's tests: a shell script that answers each `-d <device>`
// with a recorded output (test/fixtures/module/), its stderr and exit status, so the recordings
// go through the project's real command runner (ExecaRunner: spawn, pipes, exit codes, limits).
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const MODULE_FIXTURES = fileURLToPath(new URL('../fixtures/module/', import.meta.url));

/** What the tool answers for one device or port: fixture files (relative to test/fixtures/module, or absolute) and an exit status. */
export interface Answer {
  stdout?: string;
  stderr?: string;
  exitCode?: number;
  /** Sleep this long first (a hung tool, for the time limit). */
  sleepSeconds?: number;
}

export interface FakeTool {
  path: string;
  /** Every command line the tool was run with, one per line. */
  calls(): Promise<string[]>;
  remove(): Promise<void>;
}

const quote = (text: string): string => `'${text.replace(/'/g, `'\\''`)}'`;

/**
 * Write the fake tool, answering `answers[device]`; any other device fails as the real tool does.
 * `--help` prints the fixture `help` (after `helpSleepSeconds`), or without one fails as a run
 * without a device does.
 */
export async function fakeModuleTool(
  answers: Record<string, Answer>,
  name = 'mstlink',
  help?: string,
  helpSleepSeconds?: number,
): Promise<FakeTool> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-module-tool-'));
  const log = path.join(dir, 'calls');
  const file = path.join(dir, name);
  // A key "<device>/<port>" answers that port only, "<device>" every port of the device; a port's
  // key first. A fixture path may be absolute (a file the test rewrites between cycles).
  const keys = Object.keys(answers).sort((a, b) => Number(b.includes('/')) - Number(a.includes('/')));
  const cases = keys
    .map((key) => [key, answers[key]!] as const)
    .map(([key, answer]) =>
      [
        `  ${key.includes('/') ? quote(key) : `${quote(key)}/*`})`,
        answer.sleepSeconds ? `    sleep ${answer.sleepSeconds}` : '',
        answer.stdout ? `    cat ${quote(path.resolve(MODULE_FIXTURES, answer.stdout))}` : '',
        answer.stderr ? `    cat ${quote(path.resolve(MODULE_FIXTURES, answer.stderr))} >&2` : '',
        `    exit ${answer.exitCode ?? 0} ;;`,
      ]
        .filter(Boolean)
        .join('\n'),
    );
  await writeFile(
    file,
    [
      '#!/bin/sh',
      `echo "$*" >> ${quote(log)}`,
      ...(help
        ? [
            `if [ "$1" = "--help" ]; then ${helpSleepSeconds ? `sleep ${helpSleepSeconds}; ` : ''}cat ${quote(path.join(MODULE_FIXTURES, help))}; exit 0; fi`,
          ]
        : []),
      'device=""',
      'port=""',
      'while [ $# -gt 0 ]; do case "$1" in -d) device="$2"; shift 2 ;; -p) port="$2"; shift 2 ;; *) shift ;; esac; done',
      'case "$device/$port" in',
      ...cases,
      `  *) cat ${quote(path.join(MODULE_FIXTURES, 'mstlink-4.21-no-device.stdout'))}; cat ${quote(path.join(MODULE_FIXTURES, 'mstlink-4.21-no-device.stderr'))} >&2; exit 1 ;;`,
      'esac',
      '',
    ].join('\n'),
  );
  await chmod(file, 0o755);
  return {
    path: file,
    calls: async () => (await readFile(log, 'utf8').catch(() => '')).split('\n').filter(Boolean),
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}
