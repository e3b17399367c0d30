// Real servers started by tests and the bench (Prometheus, Alertmanager, ibsim): 127.0.0.1 only,
// temporary storage, and stopped by PID when the test ends; and where a tool is installed.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';

/** A free TCP port on 127.0.0.1 (for servers that cannot be told to pick one themselves). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface Service {
  name: string;
  child: ChildProcess;
  url: string;
  output(): string;
  /** SIGTERM by PID, SIGKILL after 5 s; resolves when the process is gone. */
  stop(): Promise<void>;
}

export async function startService(name: string, command: string, args: string[], url: string, readyPath: string): Promise<Service> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const service: Service = {
    name,
    child,
    url,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      process.kill(child.pid!, 'SIGTERM');
      const timer = setTimeout(() => child.pid && child.exitCode === null && process.kill(child.pid, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
  const deadline = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output}`);
    try {
      if ((await fetch(`${url}${readyPath}`)).ok) return service;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      await service.stop();
      throw new Error(`${name} did not become ready:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Poll `probe` every `everyMs` until it returns a value, or fail naming `what` after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined> | T | undefined,
  timeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}

/** Absolute path of an executable found on PATH (plus the sbin directories Debian uses), or undefined. */
export function findExecutable(name: string): string | undefined {
  const dirs = (process.env.PATH ?? '').split(path.delimiter).concat(['/usr/sbin', '/sbin', '/usr/bin']);
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // not here
    }
  }
  return undefined;
}
