// What the server loads at start: fastify's schema compilers (ajv, fast-json-stringify's compiler)
// are left out, since no route declares a schema (src/commands/serve/app.ts). fastify's precompiled error
// serializer still loads fast-json-stringify's small runtime, which is not the compiler. bcrypt
// (hash-wasm, bcryptjs) waits for the first password check of a web config with users.
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { buildOnce, PROJECT } from '../../support/built.js';

describe('server start-up', () => {
  it('serves a scrape without loading ajv, fast-json-stringify or bcrypt', () => {
    buildOnce();
    const script = `
      import { createRequire } from 'node:module';
      import pino from 'pino';
      import { buildApp } from './dist/commands/serve/app.js';
      const app = buildApp({
        source: { parts: async () => [], takenAt: () => Date.now() },
        telemetryPath: '/metrics', maxSnapshotAgeMs: 30000, version: 'test', logger: pino({ level: 'silent' }),
        currentSnapshot: () => undefined,
      });
      await app.ready();
      const response = await app.inject({ url: '/metrics' });
      const loaded = Object.keys(createRequire(import.meta.url).cache);
      console.log(JSON.stringify({ status: response.statusCode, fastify: loaded.some((file) => file.includes('/node_modules/fastify/')), compilers: loaded.filter((file) => /\\/node_modules\\/(ajv\\/|@fastify\\/(ajv-compiler|fast-json-stringify-compiler)\\/|fast-json-stringify\\/index\\.js|hash-wasm\\/|bcryptjs\\/)/.test(file)) }));
    `;
    const output = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: PROJECT, encoding: 'utf8' });
    expect(JSON.parse(output)).toEqual({ status: 200, fastify: true, compilers: [] });
  });
});
