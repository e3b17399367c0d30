// What the release steps share: the project's root, running a tool, and file digests.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const PROJECT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Runs a tool to its end; resolves with its stdout, rejects naming it with the end of its stderr.
 * `input` is written to its stdin.
 */
export function run(command, args, { cwd, env, input } = {}) {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env: { ...process.env, ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr = (stderr + chunk).slice(-8000)));
    child.on('error', reject);
    child.on('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} ended with ${signal ?? `exit code ${code}`}:\n${stderr}`));
    });
    child.stdin.end(input);
  });
}

export const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');
