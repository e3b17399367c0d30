// The global setup of `vitest run` (vitest.config.ts): one id for the run, given to every test
// file (`inject('testRun')`). buildOnce (built.ts) keys dist/'s build on it, so that the test
// files that two workers run side by side build the project once between them, and none rebuilds
// dist/ while another runs it.
import { randomUUID } from 'node:crypto';
import type { TestProject } from 'vitest/node';

declare module 'vitest' {
  export interface ProvidedContext {
    testRun: string;
  }
}

export default function setup(project: TestProject): void {
  project.provide('testRun', randomUUID());
}
