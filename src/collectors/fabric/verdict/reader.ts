// The verdict's reader: after each ports cycle, every link of the last discovery with an end this
// instance read, judged from both ends (model/link-verdict.ts), and the state file written. A
// switch end's module temperature and PHY effective BER come from fabric_module's last in-band
// reading of the port, while it is younger than the long window.
import { DURATION, STRING, flag, type FlagKind, type Settings } from '../../../config/flags.js';
import type { CollectorContext, Reader, Reading } from '../../../collection/collector.js';
import {
  fabricPortKey,
  type DiscoveredPort,
  type FabricPortReading,
  type FabricTopology,
  type PortAddress,
} from '../../../model/fabric.js';
import { BIT_ERROR_RATE_THRESHOLD } from '../../../model/bit-error-rate.js';
import { LANE_RATES } from '../../../model/link-rate.js';
import { LinkVerdict, LONG_WINDOW_MS, linkKey, type LinkEndReading, type LinkReading, type Verdict } from '../../../model/link-verdict.js';
import { inSlices } from '../../../event-loop/time-slices.js';
import { PHYSICAL_STATE_LINK_UP } from '../../../model/port-state.js';
import { SlotMap, sized } from '../../../model/slot-map.js';
import type { Snapshot } from '../../../model/snapshot.js';
import {
  FABRIC_DISCOVERY_PART as FABRIC_DISCOVERY,
  FABRIC_MODULE_PART as FABRIC_MODULE,
  FABRIC_PORTS_PART as FABRIC_PORTS,
  type FabricPhyReading,
} from '../../parts.js';
import { VerdictStateFile } from './state-file.js';

/** A bit error rate: a number above 0 and below 1 (1e-14 on the command line, a number in the config file). */
const BER: FlagKind<number> = {
  placeholder: 'ber',
  schema: { type: 'number', exclusiveMinimum: 0, exclusiveMaximum: 1 },
  check(value) {
    const number = typeof value === 'string' && /^\s*[0-9.eE+-]+\s*$/.test(value) ? Number(value) : value;
    return typeof number === 'number' && number > 0 && number < 1
      ? { ok: true, value: number }
      : { ok: false, expected: 'a bit error rate above 0 and below 1, such as 1e-14' };
  },
};

export const VERDICT_BER = flag(BER, {
  name: 'fabric.verdict.ber',
  key: 'fabric.verdict_ber',
  default: '1e-14',
  help: "The bad-links verdict's bit error rate budget: a link whose symbol errors exceed it at its data rate over 12 or 125 minutes is listed (1e-14: 2.88 errors per 12 min at 400 Gb/s).",
  check: true,
});
export const VERDICT_CLEAN_PERIOD = flag(DURATION, {
  name: 'fabric.verdict.clean-period',
  key: 'fabric.verdict_clean_period',
  default: '126m',
  help: "A listed bad link leaves the list once none of its reasons' counters rose for this long.",
  check: true,
});
export const STATE_DIR = flag(STRING, {
  name: 'fabric.state-dir',
  key: 'fabric.state_dir',
  default: '/var/lib/infiniband-exporter',
  help: "Where the exporter keeps what must survive a restart (the bad-links list and each link's clean-since time); unset, $STATE_DIRECTORY where systemd sets it (StateDirectory=), else the default. Not writable: kept in memory only, with one log line.",
  check: true,
});

/**
 * --fabric.state-dir as set; else the directory systemd made for the unit (`StateDirectory=` sets
 * $STATE_DIRECTORY, a colon-separated list), else the default.
 */
export function stateDirOf(settings: Settings): string {
  const fromSystemd = process.env.STATE_DIRECTORY?.split(':')[0];
  return settings.isSet(STATE_DIR) || !fromSystemd ? settings.get(STATE_DIR) : fromSystemd;
}

/**
 * A link's end as the verdict reads it; undefined when this instance did not read that port. Its
 * module and effective BER from `phy`, fabric_module's in-band reading, when it is recent: the
 * effective BER against the classic 10^-12 (as the module collector's finding and
 * InfiniBandLinkBitErrorRateHigh judge it).
 */
function endReading(reading: FabricPortReading | undefined, phy: FabricPhyReading | undefined, now: number): LinkEndReading | undefined {
  if (!reading) return undefined;
  const recent = phy !== undefined && now - phy.readAt <= LONG_WINDOW_MS ? phy : undefined;
  // A counter stuck at its maximum counts nothing more: not a rise, not a reset.
  const value = (name: string) => {
    const at = reading.counters.indexOf(name);
    return at >= 0 && !reading.counters.saturated(at) ? reading.counters.value(at) : undefined;
  };
  return {
    symbolErrors: value('symbol_errors'),
    linkDowned: value('link_downed'),
    up: reading.physicalState?.id === PHYSICAL_STATE_LINK_UP,
    ...(recent?.temperature && { module: recent.temperature }),
    ...(recent?.effectiveBer !== undefined && { effectiveBer: { value: recent.effectiveBer, threshold: BIT_ERROR_RATE_THRESHOLD } }),
  };
}

function dataBitsPerSecond(...readings: (FabricPortReading | undefined)[]): number | undefined {
  for (const reading of readings) {
    if (reading?.width !== undefined && reading.speed !== undefined) return reading.width * LANE_RATES[reading.speed].dataGbps * 1e9;
  }
  return undefined;
}

/** Every cable of the discovery, once: labelled by its switch end where the other is a CA, else by its lower end. */
export function* fabricLinks(topology: FabricTopology): Generator<[PortAddress, PortAddress]> {
  for (const [key, port] of topology.ports) {
    const peer = port.peer;
    if (!peer) continue;
    const peerKey = fabricPortKey(peer.nodeGuid, peer.port);
    const other: DiscoveredPort | undefined = topology.ports.get(peerKey);
    if (other?.peer && key > peerKey) continue;
    const caFirst = topology.nodes.get(port.nodeGuid)?.type !== 'switch' && topology.nodes.get(peer.nodeGuid)?.type === 'switch';
    const end = { nodeGuid: port.nodeGuid, port: port.port };
    yield caFirst ? [peer, end] : [end, peer];
  }
}

/**
 * The links of recent discoveries as columns by slot (model/slot-map.ts): each link's two ends
 * and when it was last in a discovery. A link an object with two address objects was some 230
 * bytes, 6.4 MiB in one shard of four of the 122 880-port fabric; here its GUIDs are the
 * topology's shared strings and its key the one the verdict keys on too.
 */
class KnownLinks {
  private readonly slots = new SlotMap();
  private readonly keys: string[] = [];
  private readonly endGuids: string[] = [];
  private readonly endPorts: number[] = [];
  private readonly peerGuids: string[] = [];
  private readonly peerPorts: number[] = [];
  /** Ms: a column of its own, not boxed numbers in an array. */
  private seenAts = new Float64Array(0);

  /** A link in the discovery at `now`: its key, the string kept since the link was first seen. */
  saw(end: PortAddress, peer: PortAddress, now: number): string {
    const key = linkKey(end, peer);
    const slot = this.slots.get(key);
    if (slot !== undefined) {
      this.seenAts[slot] = now;
      return this.keys[slot]!;
    }
    const added = this.slots.add(key);
    this.seenAts = sized(this.seenAts, this.slots.capacity);
    this.keys[added] = key;
    this.endGuids[added] = end.nodeGuid;
    this.endPorts[added] = end.port;
    this.peerGuids[added] = peer.nodeGuid;
    this.peerPorts[added] = peer.port;
    this.seenAts[added] = now;
    return key;
  }

  entries(): IterableIterator<[string, number]> {
    return this.slots.entries();
  }

  seenAt(slot: number): number {
    return this.seenAts[slot]!;
  }

  ends(slot: number): [PortAddress, PortAddress] {
    return [
      { nodeGuid: this.endGuids[slot]!, port: this.endPorts[slot]! },
      { nodeGuid: this.peerGuids[slot]!, port: this.peerPorts[slot]! },
    ];
  }

  delete(key: string): void {
    const slot = this.slots.delete(key);
    // Its key string let go of (the GUIDs are the topology's, shared).
    if (slot !== undefined) this.keys[slot] = '';
  }
}

export class VerdictReader implements Reader<Verdict> {
  private readonly verdict: LinkVerdict;
  private readonly state: VerdictStateFile;

  constructor(private readonly context: CollectorContext) {
    const { settings, logger } = context;
    this.state = new VerdictStateFile(stateDirOf(settings), logger);
    this.verdict = new LinkVerdict(
      { ber: settings.get(VERDICT_BER), cleanPeriodMs: settings.get(VERDICT_CLEAN_PERIOD) },
      this.state.load(),
    );
  }

  /**
   * The links of recent discoveries, by linkKey, and when each was last in one: a cable pulled is
   * gone from the next discovery (its host with it), yet its switch end's readings (down, then
   * LinkDownedCounter) still belong to that link for the long window.
   */
  private readonly known = new KnownLinks();

  /** Each link with an end this instance read, as the verdict reads it; `counted.links` counts the discovery's links. */
  private *linkReadings(
    topology: FabricTopology,
    readings: ReadonlyMap<string, FabricPortReading>,
    phys: ReadonlyMap<string, FabricPhyReading>,
    now: number,
    counted: { links: number },
  ): Generator<LinkReading> {
    const reading = (end: PortAddress, peer: PortAddress, key?: string): LinkReading | undefined => {
      const endKey = fabricPortKey(end.nodeGuid, end.port);
      const peerKey = fabricPortKey(peer.nodeGuid, peer.port);
      const a = readings.get(endKey);
      const b = readings.get(peerKey);
      return a || b
        ? {
            end,
            peer,
            ends: [endReading(a, phys.get(endKey), now), endReading(b, phys.get(peerKey), now)],
            dataBitsPerSecond: dataBitsPerSecond(a, b),
            key,
          }
        : undefined;
    };
    for (const [end, peer] of fabricLinks(topology)) {
      counted.links += 1;
      const link = reading(end, peer);
      if (!link) continue;
      // The same key string for the verdict's map as for this one.
      link.key = this.known.saw(end, peer, now);
      yield link;
    }
    for (const [key, slot] of this.known.entries()) {
      const seenAt = this.known.seenAt(slot);
      if (seenAt === now) continue;
      if (now - seenAt > LONG_WINDOW_MS) {
        this.known.delete(key);
        continue;
      }
      const [end, peer] = this.known.ends(slot);
      // A port cabled elsewhere now belongs to its new link only.
      if (
        topology.ports.get(fabricPortKey(end.nodeGuid, end.port))?.peer ||
        topology.ports.get(fabricPortKey(peer.nodeGuid, peer.port))?.peer
      )
        continue;
      const link = reading(end, peer, key);
      if (link) yield link;
    }
  }

  async read(snapshot: Snapshot): Promise<Reading<Verdict>> {
    const discovery = FABRIC_DISCOVERY.of(snapshot);
    const topology = discovery?.topology;
    const readings = FABRIC_PORTS.of(snapshot)?.ports;
    if (!topology || !discovery || !readings) return {};
    // The links are built and judged in time slices: at 120 000 ports, tens of milliseconds.
    const counted = { links: 0 };
    const now = this.context.now();
    const phys = FABRIC_MODULE.of(snapshot)?.ports ?? new Map<string, FabricPhyReading>();
    const verdict = await inSlices(
      this.verdict.judgeSteps(now, this.linkReadings(topology, readings, phys, now, counted), () => counted.links, discovery.shard.count),
    );
    // `check` reads the list a running exporter keeps, and never writes it.
    if (this.context.mode === 'serve') this.state.save(this.verdict.state());
    return { part: verdict };
  }
}
