// The AI cluster the scale benches generate (synthetic/fabric-generator/): a three-tier fat tree of
// 64-port NDR switches, hosts named as a GPU cluster's Slurm knows them, zero-padded (gpu017-03:
// its hostlists keep the padding), with about 0.1 % of the cables pulled or degraded, 0.2 % of the
// switch ports with errors and 10 % of the hosts' worth of ports congested. One definition, so that
// fabric-scale, fabric-heap and job-placement measure the same fabric.
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/** The generator's spec of the cluster of `hosts` hosts (24 576: 1 920 switches, 122 880 switch ports). */
export function aiClusterSpec(g, hosts = 24_576) {
  return {
    shape: { tiers: 3, hosts, radix: 64 },
    profile: {
      ...g.NDR_PROFILE,
      hostDescription: (leaf, host) => `gpu${String(leaf).padStart(3, '0')}-${String(host).padStart(2, '0')} mlx5_0`,
    },
    faults: {
      seed: 26,
      pulledHostCables: 24,
      pulledSwitchCables: 12,
      narrowLinks: 24,
      slowLinks: 24,
      erroringPorts: 240,
      congestedPorts: Math.round(hosts / 10),
    },
  };
}

/**
 * The exporter's arguments (from its main script on) in fabric mode over the fake tools, as a
 * fabric host without an adapter of its own runs it: a sysfs without InfiniBand devices (made in
 * `work`), the diag collector off, warnings only, one ports cycle every `interval`, the shard if
 * any. Callers add their own flags after these.
 */
export async function fabricExporterArgs(g, { main, work, tools, port, interval, shard }) {
  const sysfs = path.join(work, 'sys');
  await mkdir(path.join(sysfs, 'class'), { recursive: true });
  return [
    main,
    '--collector.fabric',
    '--no-collector.diag',
    '--path.sysfs',
    sysfs,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level',
    'warn',
    '--fabric.interval',
    interval,
    ...(shard ? ['--fabric.shard', shard] : []),
    ...g.fakeToolFlags(tools),
  ];
}

/**
 * The environment the service launchers give the exporter (the systemd unit, the packages' unit,
 * the Dockerfile and the image): glibc's malloc settings (GLIBC_TUNABLES, src/startup/v8-flags.ts),
 * as built in `dist`. The benches run the exporter so unless their command line says
 * `--no-launcher-env`, to measure what the settings change.
 */
export async function launcherEnv(dist, argv = process.argv) {
  if (argv.includes('--no-launcher-env')) return {};
  const { GLIBC_TUNABLES } = await import(pathToFileURL(path.join(dist, 'startup', 'v8-flags.js')).href);
  return { GLIBC_TUNABLES };
}

/**
 * The Node.js flags the launchers pass (NODE_FLAGS of src/startup/v8-flags.ts, as built in `dist`:
 * npm start, the units, the image), for the benches' command lines when theirs says
 * `--launcher-flags`. Not by default: at AI-cluster scale `--v8-pool-size=1` (one V8 worker
 * thread) cost fabric mode memory and event-loop blocks (docs/benchmarks.md, "One shard of four,
 * fourth pass"), and docs/deploy.md tells fabric sites to leave it out.
 */
export async function launcherFlags(dist, argv = process.argv) {
  if (!argv.includes('--launcher-flags')) return [];
  const { NODE_FLAGS } = await import(pathToFileURL(path.join(dist, 'startup', 'v8-flags.js')).href);
  return NODE_FLAGS;
}

/**
 * The niceness of the fake tools (synthetic/fabric-generator/fake-tools.ts, `nice`): 19 unless
 * the command line says `--tools-nice=N`. They stand in for C programs that mostly wait on the
 * fabric; replayed by Node.js they are busy for a fraction of a second each, and the event-loop
 * monitor saw the exporter's main thread runnable but waiting for one of the two cores while they
 * ran (docs/benchmarks.md, "One shard of four, fifth pass"). Each tool runs in a session of its
 * own, so its session's autogroup is niced too (autogroupNice; "Tools niced in their own
 * sessions", eleventh pass). `--tools-nice=0` runs them as before.
 */
export function toolsNice(argv = process.argv) {
  const given = argv.find((arg) => arg.startsWith('--tools-nice='));
  return given === undefined ? 19 : Number(given.slice('--tools-nice='.length));
}
