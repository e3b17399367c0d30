// What the release steps share: the project's root, the tools it needs and running one, file digests.
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { accessSync, constants, existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
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
    child.on('error', (error) =>
      reject(
        error.code === 'ENOENT'
          ? new UserError(`${command} is not on PATH${TOOLS[command] ? ` — install it with: apt-get install ${TOOLS[command]}` : ''}`)
          : error,
      ),
    );
    child.on('close', (code, signal) => {
      if (code === 0) resolve(stdout);
      else reject(new Error(`${command} ${args.join(' ')} ended with ${signal ?? `exit code ${code}`}:\n${stderr}`));
    });
    child.stdin.end(input);
  });
}

export const sha256 = (file) => createHash('sha256').update(readFileSync(file)).digest('hex');

/** A mistake of the person running the release (a missing tool, a wrong flag): one line, exit 2. */
export class UserError extends Error {}

// Every program the release runs, and the Debian package that brings it.
export const TOOLS = {
  npm: 'npm',
  tar: 'tar',
  md5sum: 'coreutils',
  'dpkg-deb': 'dpkg',
  'dpkg-shlibdeps': 'dpkg-dev',
  readelf: 'binutils',
  rpmbuild: 'rpm',
  mmdebstrap: 'mmdebstrap',
  help2man: 'help2man',
};

/** Whether `command` is an executable file in a directory of PATH. */
export function onPath(command, searchPath = process.env.PATH ?? '') {
  return searchPath.split(path.delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(path.join(dir, command), constants.X_OK);
      return statSync(path.join(dir, command)).isFile();
    } catch {
      return false;
    }
  });
}

/** Before anything is built: every tool missing from PATH, named in one error with the apt-get line that brings them. */
export function preflight() {
  const missing = Object.keys(TOOLS).filter((command) => !onPath(command));
  if (missing.length === 0) {
    for (const name of ['postject', 'esbuild', 'typescript']) {
      if (!existsSync(path.join(PROJECT, 'node_modules', name, 'package.json')))
        throw new UserError(`node_modules/${name} is missing: run npm ci first`);
    }
    return;
  }
  const packages = [...new Set(missing.map((command) => TOOLS[command]))];
  throw new UserError(`missing tools: ${missing.join(', ')} — install them with: apt-get install ${packages.join(' ')}`);
}
