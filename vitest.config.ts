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
    reporters: process.env.CI ? ['default', 'junit'] : ['default'],
    outputFile: { junit: 'test-results/junit.xml' },
  },
});
