// The kernel log fixtures (test/fixtures/kmsg/: dmesg lines as people posted them) as /dev/kmsg records.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { FIXTURES } from './trees.js';

/** A fixture's lines as kmsg records (`3,<seq>,<usec>,-;<message>\n`): dmesg's `[seconds]` (and a pdsh host prefix) dropped. */
export function fixtureRecords(name: string, firstSequence = 1): string[] {
  const lines = readFileSync(path.join(FIXTURES, 'kmsg', name), 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.startsWith('#'));
  return lines.map((line, i) => {
    const match = /^(?:\S+: )?\s*(?:\[\s*(\d+)\.(\d+)\] ?)?\s*(.*)$/.exec(line)!;
    const usec = match[1] === undefined ? 0 : Number(match[1]) * 1e6 + Number(match[2]);
    return `3,${firstSequence + i},${usec},-;${match[3]}\n`;
  });
}
