// A real exporter process on the demo host: started, read once its ports are in, stopped.
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
 * Runs `node <args> --demo --web.listen-address=127.0.0.1:0` in `cwd`, waits for its "listening"
 * log line, and returns its /metrics once the ports are in; the process is stopped (SIGTERM) in
 * any case.
 */
export async function demoMetrics(args: string[], cwd: string): Promise<string> {
  const child = spawn(process.execPath, [...args, '--demo', '--web.listen-address=127.0.0.1:0'], { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
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
    for (let attempt = 0; attempt < 50 && !body.includes('infiniband_port_state_id'); attempt++) {
      body = await text(`${address}/metrics`);
      if (!body.includes('infiniband_port_state_id')) await new Promise((r) => setTimeout(r, 100));
    }
    return body;
  } finally {
    child.kill('SIGTERM');
  }
}
