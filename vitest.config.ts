import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Each test file's exporters keep their state in a directory of its own, never /var/lib; a
    // topology's port table compares as the map of ports it stands for.
    setupFiles: ['test/support/state-directory.ts', 'test/support/columns-equality.ts'],
    // The system-dependent suites start real processes (Prometheus, opensm, ibsim); two cores.
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: 'forks',
    // Two test files at a time on two cores (vitest's own default leaves one core free): most of
    // the suite's time is spent waiting on the processes it starts (Prometheus, Slurm, opensm,
    // ibsim, the release's build). dist/ is built once for the run (test/support/built.ts).
    maxWorkers: Math.max(2, availableParallelism() - 1),
    globalSetup: ['test/support/test-run.ts'],
    reporters: process.env.CI ? ['default', 'junit'] : ['default'],
    outputFile: { junit: 'test-results/junit.xml' },
  },
});
