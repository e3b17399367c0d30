// System-dependent tests (promtool, Prometheus, Alertmanager, opensm, ibsim, infiniband-diags)
// skip with a printed reason when a package is missing, unless REQUIRE_SYSTEM_TESTS=1 (set by
// .ci/run), in which case a missing tool fails the suite instead of hiding it.

import { findExecutable } from '../../synthetic/processes.js';

export { findExecutable };

export const systemTestsRequired = process.env.REQUIRE_SYSTEM_TESTS === '1';

export interface SystemTools {
  /** Paths of every tool asked for, when all were found. */
  paths: Record<string, string>;
  /** Why the suite must skip, or undefined when every tool is present. */
  skipReason: string | undefined;
}

/**
 * Look up the tools a suite needs. Missing tools give a skip reason (printed once); when system
 * tests are required this throws, so CI fails loudly rather than skipping.
 */
export function requireSystemTools(suite: string, tools: Record<string, string>): SystemTools {
  const paths: Record<string, string> = {};
  const missing: string[] = [];
  for (const [tool, debianPackage] of Object.entries(tools)) {
    const found = findExecutable(tool);
    if (found) paths[tool] = found;
    else missing.push(`${tool} (Debian package ${debianPackage})`);
  }
  if (missing.length === 0) return { paths, skipReason: undefined };
  const reason = `${suite}: skipped, not installed: ${missing.join(', ')}`;
  if (systemTestsRequired) throw new Error(`${reason} — REQUIRE_SYSTEM_TESTS=1 makes this a failure`);
  process.stderr.write(`${reason}\n`);
  return { paths, skipReason: reason };
}
