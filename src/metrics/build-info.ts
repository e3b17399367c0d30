// Version from package.json; revision from INFINIBAND_EXPORTER_REVISION (set by container builds)
// or the checkout's .git, read directly so that start-up never runs a subprocess. The single
// executable has neither beside it: the release build writes both into its bundle (below).
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export interface BuildInfo {
  version: string;
  revision: string;
  nodejsVersion: string;
}

// Replaced by {version, revision} in the release build's bundle (esbuild's define, scripts/bundle.mjs).
declare const INFINIBAND_EXPORTER_RELEASE: { version: string; revision: string } | undefined;

const root = fileURLToPath(new URL('../..', import.meta.url));

function readText(relative: string): string | undefined {
  try {
    return readFileSync(root + relative, 'utf8').trim();
  } catch {
    return undefined;
  }
}

function gitRevision(): string | undefined {
  const head = readText('.git/HEAD');
  if (!head) return undefined;
  if (!head.startsWith('ref: ')) return /^[0-9a-f]{40}$/.test(head) ? head : undefined;
  const ref = head.slice(5);
  const loose = readText(`.git/${ref}`);
  if (loose) return loose;
  const packed = readText('.git/packed-refs');
  return packed
    ?.split('\n')
    .find((line) => line.endsWith(` ${ref}`))
    ?.split(' ')[0];
}

export function buildInfo(): BuildInfo {
  if (typeof INFINIBAND_EXPORTER_RELEASE !== 'undefined') return { ...INFINIBAND_EXPORTER_RELEASE, nodejsVersion: process.version };
  const pkg = JSON.parse(readText('package.json') ?? '{}') as { version?: string };
  return {
    version: pkg.version ?? 'unknown',
    revision: process.env.INFINIBAND_EXPORTER_REVISION || gitRevision()?.slice(0, 12) || 'unknown',
    nodejsVersion: process.version,
  };
}
