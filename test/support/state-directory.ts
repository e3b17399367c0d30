// A setup file of every test file (vitest.config.ts): its own state directory, as systemd's
// StateDirectory= gives one ($STATE_DIRECTORY), so that no exporter a test starts, in the test
// process or as a child, reads or writes the real /var/lib/infiniband-exporter, nor another test's.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';

const dir = mkdtempSync(path.join(tmpdir(), 'ibx-state-'));
process.env.STATE_DIRECTORY = dir;
afterAll(() => rmSync(dir, { recursive: true, force: true }));
