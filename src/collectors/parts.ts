// Each collector's part of the snapshot that another collector reads, runs after or renders from,
// declared here by its name and type, so that no collector imports another: sysfs writes the diag
// collectors' findings into its port families, tso reads ipoib's interfaces, fabric_ports reads
// through fabric_discovery's topology. A collector whose part no other reads declares none here.
import { partOf } from '../collection/collector.js';
import type { CongestionDirection, TickSource, XmitWaitTick } from '../model/congestion.js';
import type { FabricPortReading, FabricTopology, Shard } from '../model/fabric.js';
import type { IpoibInterface, PortLink, PortPma } from '../model/host.js';
import type { CablingReport } from '../model/cabling.js';
import type { JobsPart } from '../model/job-footprint.js';
import type { LinkExpectation } from '../model/link-rate.js';
import type { LaneFaultKind } from '../model/optical-module.js';
import type { TopologyCache } from '../sources/fabric/discovery.js';

/** What the sysfs collector keeps beside the devices. */
export interface SysfsPart {
  /** Logical state changes seen since start, by `portKey`. */
  stateChanges: ReadonlyMap<string, number>;
  /** What the config file's expectations say each port should run at, by `portKey`. */
  configured: ReadonlyMap<string, LinkExpectation>;
  /** When each port's link came up (ms), where the exporter saw it come up: the bits it carried since. */
  linkUpAt: ReadonlyMap<string, number>;
}

/** The last good discovery. */
export interface DiscoveryPart {
  /** Undefined until a discovery succeeded. */
  topology: FabricTopology | undefined;
  /** The cache file ibnetdiscover wrote, for the counter sweeps; absent when it could not be read. */
  cache: TopologyCache | undefined;
  /** This instance's --fabric.shard: it reports only the nodes of that shard. */
  shard: Shard;
  /**
   * The topology may not be the fabric as it is (it came from an incomplete discovery, or a
   * discovery found far fewer nodes and awaits confirmation): each ports cycle asks for a discovery,
   * as without any topology.
   */
  provisional: boolean;
  /** The node-name-map in use (GUID → name), read again at each discovery. */
  names: ReadonlyMap<string, string>;
  /** Each node's PortXmitWait tick (this shard's nodes whose ports are read), by GUID, read once per node. */
  ticks: ReadonlyMap<string, XmitWaitTick>;
  /** Each switch's tier of the topology (1 = switches with hosts, counting up), by GUID, computed once per topology. */
  tiers: ReadonlyMap<string, number>;
  /** ibnetdiscover's output as printed, outside `serve` only (`topology save --format ibnetdiscover`). */
  text?: string;
}

export interface FabricPortsPart {
  /** The last cycle's readings, by `fabricPortKey` (this instance's shard only). */
  ports: ReadonlyMap<string, FabricPortReading>;
  /** What each read port's link should run at: a config expectation or the best both ends enable. */
  expectations: ReadonlyMap<string, LinkExpectation>;
  /** Since the previous cycle (the fabric map's colours): ports whose error counters rose, and those whose symbol errors over the bits carried exceed the BER threshold. */
  trend: PortTrend;
  /** Since the previous cycle: how long each switch port was stalled, per port and per tier and direction. */
  congestion: FabricCongestion;
}

/** Congestion between the last two ports cycles. */
export interface FabricCongestion {
  /**
   * The stalled fraction (0–1, `stalledFraction` of src/model/congestion.ts) of each linked port read
   * in both cycles whose node's tick is known, by `fabricPortKey`; every such port, not only those
   * from 1 % (the per-port series' floor). Absent: not measured (new, reset or saturated counter).
   */
  ratios: ReadonlyMap<string, number>;
  /** Per tier and direction over the ports with a ratio, tier first, `down` before `up`. */
  tiers: readonly TierCongestion[];
  /** Each node's tick in seconds at the speed and width most of its linked ports run, by GUID. */
  nodeTicks: ReadonlyMap<string, { seconds: number; source: TickSource }>;
}

export interface TierCongestion {
  tier: number;
  direction: CongestionDirection;
  max: number;
  sum: number;
  ports: number;
}

export interface PortTrend {
  risingErrors: ReadonlySet<string>;
  berOverThreshold: ReadonlySet<string>;
}

/** What fabric_module keeps of one switch port's in-band reading: bounded by the module's lanes and the histogram's bins, whatever the tool said. */
export interface FabricPhyReading {
  nodeGuid: string;
  port: number;
  /** When it was read (ms): a port is read again only in a later round. */
  readAt: number;
  laneErrors: readonly (number | undefined)[];
  laneFaults: Partial<Record<LaneFaultKind, readonly (boolean | undefined)[]>>;
  /** FEC blocks per histogram bin, bin 0 first; empty where the tool or the port gives none. */
  fecHistogram: readonly (number | undefined)[];
  /** The module's temperature and its own high alarm threshold, where it reports them (for the verdict). */
  temperature?: { celsius: number; alarmCelsius: number | undefined };
  /** The PHY's effective (post-FEC) BER since its counters were last cleared (for the verdict). */
  effectiveBer?: number;
}

export interface FabricModulePart {
  /** By `fabricPortKey`, the last reading of each port read so far. */
  ports: ReadonlyMap<string, FabricPhyReading>;
}

export const SYSFS_PART = partOf<SysfsPart>('sysfs');
export const IPOIB_PART = partOf<readonly IpoibInterface[]>('ipoib');
export const SMPQUERY_PART = partOf<ReadonlyMap<string, PortLink>>('smpquery');
export const PERFQUERY_PART = partOf<ReadonlyMap<string, PortPma>>('perfquery');
export const FABRIC_DISCOVERY_PART = partOf<DiscoveryPart>('fabric_discovery');
export const FABRIC_PORTS_PART = partOf<FabricPortsPart>('fabric_ports');
export const FABRIC_CABLING_PART = partOf<CablingReport>('fabric_cabling');
export const FABRIC_MODULE_PART = partOf<FabricModulePart>('fabric_module');
export const JOBS_PART = partOf<JobsPart>('jobs');
