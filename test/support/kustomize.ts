// A kustomize to build deploy/kubernetes with: the standalone `kustomize` when installed, else the
// one built into `kubectl` (`kubectl kustomize`). .ci/run installs Debian's kubectl
// (kubernetes-client 1.20, kustomize v2.0.3 inside) when neither is on PATH, so the kustomization
// must stay readable by that old kustomize as well as by current ones.
import { findExecutable, systemTestsRequired } from './system.js';

export interface Kustomize {
  /** The executable and the arguments that print the built objects of a kustomization directory. */
  command(dir: string): { file: string; args: string[] };
  skipReason: undefined;
}

export function findKustomize(suite: string): Kustomize | { skipReason: string } {
  const kustomize = findExecutable('kustomize');
  if (kustomize) return { command: (dir) => ({ file: kustomize, args: ['build', dir] }), skipReason: undefined };
  const kubectl = findExecutable('kubectl');
  if (kubectl) return { command: (dir) => ({ file: kubectl, args: ['kustomize', dir] }), skipReason: undefined };
  const reason = `${suite}: skipped, not installed: kustomize or kubectl (Debian package kubernetes-client)`;
  if (systemTestsRequired) throw new Error(`${reason} — REQUIRE_SYSTEM_TESTS=1 makes this a failure`);
  process.stderr.write(`${reason}\n`);
  return { skipReason: reason };
}
