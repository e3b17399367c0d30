// A real exporter process: started, read once its /metrics holds what the test waits for, stopped.
import { spawn } from 'node:child_process';
import { get } from 'node:http';

function text(url: string): Promise<string> {
  return new Promise((resolve, reject) =>
    get(url, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => resolve(body));
    }).on('error', reject),
  );
}

/**
 * Runs `node <args> --web.listen-address=127.0.0.1:0` in `cwd` (or `command` in place of node, with
 * `env` in place of this process's environment), waits for its "listening" log line, and returns
 * its /metrics once `ready` says so (or after 5 s); the process is stopped (SIGTERM) in any case.
 */
export async function servedMetrics(
  args: string[],
  cwd: string,
  ready: (body: string) => boolean,
  { command = process.execPath, env = process.env }: { command?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<string> {
  const child = spawn(command, [...args, '--web.listen-address=127.0.0.1:0'], { cwd, env, stdio: ['ignore', 'ignore', 'pipe'] });
  try {
    const address = await new Promise<string>((resolve, reject) => {
      let log = '';
      const timer = setTimeout(() => reject(new Error(`no "listening" line: ${log}`)), 15_000);
      child.stderr.setEncoding('utf8');
      child.stderr.on('data', (chunk: string) => {
        log += chunk;
        const found = /"address":"(http:\/\/[^"]+)","telemetryPath"/.exec(log);
        if (found) {
          clearTimeout(timer);
          resolve(found[1]!);
        }
      });
      child.on('exit', (code) => reject(new Error(`exited with ${code}: ${log}`)));
    });
    let body = '';
    for (let attempt = 0; attempt < 50 && !ready(body); attempt++) {
      body = await text(`${address}/metrics`);
      if (!ready(body)) await new Promise((r) => setTimeout(r, 100));
    }
    return body;
  } finally {
    child.kill('SIGTERM');
  }
}

/** The /metrics of `node <args> --demo` once the demo host's ports are in. */
export function demoMetrics(args: string[], cwd: string): Promise<string> {
  return servedMetrics([...args, '--demo'], cwd, (body) => body.includes('infiniband_port_state_id'));
}
