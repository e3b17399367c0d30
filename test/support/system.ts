// System-dependent tests (promtool, Prometheus, Alertmanager, opensm, ibsim, infiniband-diags)
// skip with a printed reason when a package is missing, unless REQUIRE_SYSTEM_TESTS=1 (set by
// .ci/run), in which case a missing tool fails the suite instead of hiding it.
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

export const systemTestsRequired = process.env.REQUIRE_SYSTEM_TESTS === '1';

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
