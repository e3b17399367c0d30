// A recorded run of a real tool: <base>.stdout, <base>.stderr and <base>.exit (its exit code),
// stored as plain files next to the tests that replay them.
import { readFileSync } from 'node:fs';

export interface Recording {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export function readRecording(base: string): Recording {
  return {
    stdout: readFileSync(`${base}.stdout`, 'utf8'),
    stderr: readFileSync(`${base}.stderr`, 'utf8'),
    exitCode: Number(readFileSync(`${base}.exit`, 'utf8').trim()),
  };
}
