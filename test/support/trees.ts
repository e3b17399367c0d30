// Fixture trees copied to a temporary directory, for tests that make them hostile.
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
export const ZOO = path.join(FIXTURES, 'sys/zoo');
export const DGX = path.join(FIXTURES, 'sys/dgx');
/** A sysfs root without class/infiniband: a host whose InfiniBand stack is not loaded (or a fabric-mode host in tests). */
export const NO_INFINIBAND = path.join(FIXTURES, 'sys/no-infiniband');
export const ZOO_CONFIG = path.join(FIXTURES, 'config/zoo.yml');

export interface TempTree {
  root: string;
  remove(): Promise<void>;
}

/** A private copy of a fixture tree (symlinks kept as symlinks). */
export async function copyTree(source: string): Promise<TempTree> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-tree-'));
  const root = path.join(dir, 'sys');
  await cp(source, root, { recursive: true, verbatimSymlinks: true });
  return { root, remove: () => rm(dir, { recursive: true, force: true }) };
}

export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The simulated fabric's HCA as umad2sim shows it in sysfs; its port also runs a standby SM (IsSM). */
export const SIMULATED_HOST: Record<string, string> = {
  'class/infiniband/ibsim0/node_type': '1: CA\n',
  'class/infiniband/ibsim0/node_guid': '0002:c903:00a1:b3d0\n',
  'class/infiniband/ibsim0/ports/1/state': '4: ACTIVE\n',
  'class/infiniband/ibsim0/ports/1/phys_state': '5: LinkUp\n',
  'class/infiniband/ibsim0/ports/1/rate': '10 Gb/sec (1X QDR)\n',
  'class/infiniband/ibsim0/ports/1/link_layer': 'InfiniBand\n',
  'class/infiniband/ibsim0/ports/1/lid': '0x4\n',
  'class/infiniband/ibsim0/ports/1/sm_lid': '0x1\n',
  'class/infiniband/ibsim0/ports/1/cap_mask': '0x0050c04a\n',
  'class/infiniband/ibsim0/ports/1/gids/0': 'fe80:0000:0000:0000:0002:c903:00a1:b3d1\n',
  // umad2sim shows the port's umad device too: the diag collector queries only such ports.
  'class/infiniband_mad/umad0/ibdev': 'ibsim0\n',
  'class/infiniband_mad/umad0/port': '1\n',
};

/** Write `files` (path relative to `root` → content) as a sysfs tree. */
export async function writeTree(root: string, files: Record<string, string>): Promise<void> {
  for (const [relative, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
    await writeFile(path.join(root, relative), content);
  }
}
