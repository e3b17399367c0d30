// The ipoib collector: /sys/class/net/<if>/… for IPoIB interfaces (type 32): mode, MTU, carrier,
// P_Key, parent, and which HCA port carries each. Carriers are read every host reading;
// identities when new, due, read with errors, after their carrier changed, or when the host's
// devices changed (the HCA ports they map to).
import { collectorSwitch } from '../../config/flags.js';
import type { ExpositionBuffer } from '../../exposition/buffer.js';
import { gauge } from '../../exposition/metric-spec.js';
import { STABLE, Samples } from '../../exposition/samples.js';
import { portName, type Device, type IpoibInterface } from '../../model/host.js';
import type { Finding } from '../../model/finding.js';
import type { ItemError, Snapshot } from '../../model/snapshot.js';
import {
  NET_CLASS,
  listInterfaces,
  placeHcas,
  readCarrier,
  readInterfaceIdentity,
  type HcaPlacement,
  type InterfaceIdentity,
} from '../../sources/ipoib.js';
import type { SysfsFiles } from '../../sources/sysfs-files.js';
import { defineCollector, type Collector, type CollectorContext, type Reader, type Reading } from '../../collection/collector.js';
import { HOST_READING, SYSFS_PATH, readUnder, sysfsFiles } from './host-reading.js';
import { IPOIB_PART } from '../parts.js';

/** Interface identities are read again at least this often (a changed mode or MTU). */
const IDENTITY_MAX_AGE_MS = 300_000;

export const IPOIB_SWITCH = collectorSwitch(
  IPOIB_PART.name,
  IPOIB_PART.name,
  true,
  'Read the IPoIB interfaces (mode, MTU, carrier, P_Key) from sysfs.',
);

interface KnownInterface {
  identity: InterfaceIdentity;
  readAt: number;
  stale: boolean;
  carrier: 0 | 1 | undefined;
}

class IpoibReader implements Reader<readonly IpoibInterface[]> {
  private readonly files: SysfsFiles;
  private readonly interfaces = new Map<string, KnownInterface>();
  private devices: readonly Device[] = [];

  constructor(private readonly context: CollectorContext) {
    this.files = sysfsFiles(context);
  }

  async read(snapshot: Snapshot): Promise<Reading<readonly IpoibInterface[]>> {
    const { files } = this;
    const devices = snapshot.devices;
    const listing = listInterfaces(files);
    const errors: ItemError[] = [];
    const interfaces: IpoibInterface[] = [];
    const names = new Set(listing.names);
    for (const name of [...this.interfaces.keys()]) if (!names.has(name)) this.forget(name);
    const devicesChanged =
      devices.length !== this.devices.length ||
      devices.some((device, i) => device.name !== this.devices[i]?.name || device.ports.length !== this.devices[i]?.ports.length);
    this.devices = devices;
    let placement: HcaPlacement | undefined;
    for (const name of listing.names) {
      let known = this.interfaces.get(name);
      if (!known || known.stale || devicesChanged || this.context.now() - known.readAt >= IDENTITY_MAX_AGE_MS) {
        placement ??= placeHcas(files, devices);
        const reading = readInterfaceIdentity(files, name, placement);
        errors.push(...reading.errors);
        if (!reading.identity) {
          this.forget(name);
          continue;
        }
        known = { identity: reading.identity, readAt: this.context.now(), stale: reading.errors.length > 0, carrier: known?.carrier };
        this.interfaces.set(name, known);
      }
      if (!known.identity.ipoib) continue;
      const carrier = readCarrier(files, name);
      if (carrier === undefined) {
        this.forget(name);
        continue;
      }
      // Up or down again: it may have come back with other settings (mode, MTU).
      if (known.carrier !== undefined && carrier !== known.carrier) known.stale = true;
      known.carrier = carrier;
      interfaces.push({ ...known.identity.settings, carrier });
    }
    return {
      part: interfaces,
      errors,
      // An interface that went away is neither failing nor back.
      read: readUnder(NET_CLASS, new Set(this.interfaces.keys())),
      ...(listing.failure !== undefined && { failure: listing.failure }),
    };
  }

  /** An interface that went away: what is known of it, and its carrier file kept open. */
  private forget(name: string): void {
    this.interfaces.delete(name);
    this.files.release(`${NET_CLASS}/${name}`);
  }
}

export const IPOIB_METRICS = {
  info: gauge(
    'infiniband_ipoib_info',
    ['interface', 'device', 'port', 'mode', 'pkey', 'parent'],
    'IPoIB interface (value always 1): HCA device and port carrying it, mode (datagram or connected), P_Key, parent of a P_Key child.',
  ),
  mtu: gauge(
    'infiniband_ipoib_mtu_bytes',
    ['interface'],
    'IPoIB interface MTU (2044 or 4092 in datagram mode, up to 65520 in connected mode).',
  ),
  connectedMode: gauge(
    'infiniband_ipoib_connected_mode',
    ['interface'],
    '1 when the IPoIB interface runs in connected mode, 0 in datagram mode.',
  ),
  carrier: gauge(
    'infiniband_ipoib_carrier',
    ['interface'],
    '1 when the IPoIB interface has carrier (port ACTIVE and broadcast group joined), 0 otherwise or when it is administratively down.',
  ),
} as const;

const FAMILIES = Object.values(IPOIB_METRICS);

function writeMetrics(snapshot: Snapshot, out: ExpositionBuffer): void {
  const samples = new Samples();
  for (const iface of IPOIB.of(snapshot) ?? []) {
    samples.add(
      IPOIB_METRICS.info,
      {
        interface: iface.name,
        device: iface.device ?? '',
        port: iface.port === undefined ? '' : String(iface.port),
        mode: iface.mode ?? '',
        pkey: iface.pkey ?? '',
        parent: iface.parent ?? '',
      },
      1,
    );
    const labels = STABLE.one('interface', iface.name);
    samples.add(IPOIB_METRICS.mtu, labels, iface.mtu);
    samples.add(IPOIB_METRICS.connectedMode, labels, iface.mode === undefined ? undefined : iface.mode === 'connected' ? 1 : 0);
    samples.add(IPOIB_METRICS.carrier, labels, iface.carrier);
  }
  samples.writeTo(FAMILIES, out);
}

function ipoibFinding(iface: IpoibInterface): Finding | undefined {
  const small = iface.mtu !== undefined && iface.mtu <= 2044;
  if (iface.mode !== 'datagram' && !small) return undefined;
  const details = [
    iface.device === undefined ? undefined : portName(iface.device, iface.port ?? 0),
    iface.pkey && `P_Key ${iface.pkey}`,
    iface.carrier === 0 ? 'no carrier' : undefined,
  ].filter((part): part is string => Boolean(part));
  const which = `IPoIB ${iface.name}${details.length > 0 ? ` (${details.join(', ')})` : ''}`;
  const connected = `echo connected > /sys/class/net/${iface.name}/mode; ip link set ${iface.name} mtu 65520, made permanent in the network configuration`;
  const common = {
    condition: 'ipoib-suboptimal',
    severity: 'info',
    subject: { kind: 'interface', interface: iface.name, device: iface.device, port: iface.port },
    cause:
      "The distribution's default (datagram), a network configuration without the IPoIB settings, a partition created with a 2K MTU (opensm's default), or an adapter that has only datagram mode (mlx5 enhanced IPoIB, ConnectX-4 and later).",
    runbook: 'infinibandipoibsuboptimalmode',
    alert: 'InfiniBandIPoIBSuboptimalMode',
  } as const;
  if (small) {
    return {
      ...common,
      summary: `${which} runs in ${iface.mode ?? 'unknown'} mode with MTU ${iface.mtu}: a 2K IB MTU or less, TCP/IP over it is several times slower than it could be`,
      meaning: 'IPoIB works, but every IP packet carries at most 2044 bytes: more packets, more CPU per byte moved.',
      remedy: `where the adapter has connected mode: ${connected}; otherwise give the partition a 4K MTU (mtu=5 in opensm's partitions.conf) for MTU 4092`,
    };
  }
  return {
    ...common,
    summary: `${which} runs in datagram mode with MTU ${iface.mtu ?? 'unknown'}: connected mode with MTU 65520 moves TCP/IP several times faster where the adapter has it`,
    meaning: 'IPoIB works; datagram mode limits IP packets to the IB MTU (at most 4092 bytes).',
    remedy: `where the adapter has connected mode (mlx4, or mlx5 without enhanced IPoIB): ${connected}; on mlx5 with enhanced IPoIB this is already the best: nothing to do`,
  };
}

export const IPOIB: Collector<readonly IpoibInterface[]> = defineCollector({
  name: IPOIB_PART.name,
  checks: 'IPoIB settings',
  enabledBy: IPOIB_SWITCH,
  flags: [IPOIB_SWITCH, SYSFS_PATH],
  scope: 'host',
  schedule: { cycle: HOST_READING },
  onOverrun: 'keep',
  setUp: (context) => new IpoibReader(context),
  metrics: { families: FAMILIES, write: writeMetrics },
  findings: (snapshot) => (IPOIB.of(snapshot) ?? []).flatMap((iface) => ipoibFinding(iface) ?? []),
  failure: {
    consequence: 'what it reads is missing',
    meaning: 'The IPoIB checks could not run: a datagram-mode or small-MTU interface would not show.',
    cause: 'A wrong --path.sysfs, or a driver returning errors.',
  },
});
