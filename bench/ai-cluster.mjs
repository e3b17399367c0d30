// The AI cluster the scale benches generate (synthetic/fabric-generator/): a three-tier fat tree of
// 64-port NDR switches, hosts named as a GPU cluster's Slurm knows them, zero-padded (gpu017-03:
// its hostlists keep the padding), with about 0.1 % of the cables pulled or degraded, 0.2 % of the
// switch ports with errors and 10 % of the hosts' worth of ports congested. One definition, so that
// fabric-scale, fabric-heap and job-placement measure the same fabric.

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
