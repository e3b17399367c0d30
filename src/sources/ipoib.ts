// The IPoIB source: /sys/class/net/<if> with type 32 (ARPHRD_INFINIBAND), mapped to the HCA port
// that carries it: same PCI function as /sys/class/infiniband/<dev>/device, port = dev_port + 1.
// Like a device, an interface is read in two parts: its identity (type, mode, MTU, P_Key, parent,
// HCA port), which changes rarely, and its carrier, read in every full reading.
import type { Device, IpoibInterface } from '../model/host.js';
import type { ItemError } from '../model/snapshot.js';
import { INFINIBAND_CLASS } from './infiniband.js';
import type { SysfsFiles } from './sysfs-files.js';

export const NET_CLASS = 'class/net';
const ARPHRD_INFINIBAND = '32';

export interface IpoibReading {
  interfaces: IpoibInterface[];
  errors: ItemError[];
  failure: string | undefined;
}

/**
 * What rarely changes of a network interface: whether it is IPoIB, and then its settings and the
 * HCA port carrying it (everything of IpoibInterface but the carrier).
 */
export type InterfaceIdentity = { name: string; ipoib: false } | { name: string; ipoib: true; settings: Omit<IpoibInterface, 'carrier'> };

/** Which HCA devices sit on which PCI function, and their ports: how interfaces map to ports. */
export interface HcaPlacement {
  hcaByPciFunction: ReadonlyMap<string, readonly string[]>;
  portsByDevice: ReadonlyMap<string, ReadonlySet<number>>;
}

/** The interfaces of class/net; a missing directory is none. */
export function listInterfaces(files: SysfsFiles): { names: string[]; failure: string | undefined } {
  const listing = files.list(NET_CLASS, { keep: true });
  if (listing.ok) return { names: listing.names, failure: undefined };
  if (listing.failure.kind === 'missing') return { names: [], failure: undefined };
  return { names: [], failure: `cannot list ${files.resolve(NET_CLASS)}: ${listing.failure.message}` };
}

/** `devices` are the InfiniBand devices of the same reading. */
export function placeHcas(files: SysfsFiles, devices: readonly Pick<Device, 'name' | 'ports'>[]): HcaPlacement {
  const hcaByPciFunction = new Map<string, string[]>();
  for (const device of devices) {
    const target = files.target(`${INFINIBAND_CLASS}/${device.name}/device`);
    if (target !== undefined) hcaByPciFunction.set(target, [...(hcaByPciFunction.get(target) ?? []), device.name]);
  }
  const portsByDevice = new Map(devices.map((device) => [device.name, new Set(device.ports.map((port) => port.port))]));
  return { hcaByPciFunction, portsByDevice };
}

/** Read everything of every IPoIB interface at once, without the collection's caching (the readers' tests). */
export function readIpoib(files: SysfsFiles, devices: readonly Device[]): IpoibReading {
  const { names, failure } = listInterfaces(files);
  const placement = placeHcas(files, devices);
  const errors: ItemError[] = [];
  const interfaces: IpoibInterface[] = [];
  for (const name of names) {
    const { identity, errors: identityErrors } = readInterfaceIdentity(files, name, placement);
    errors.push(...identityErrors);
    if (!identity?.ipoib) continue;
    const carrier = readCarrier(files, name);
    if (carrier !== undefined) interfaces.push({ ...identity.settings, carrier });
  }
  return { interfaces, errors, failure };
}

/**
 * The carrier of an interface; undefined when the interface is gone. The kernel refuses to read
 * `carrier` while the interface is administratively down (EINVAL): that is "no carrier", not an
 * error.
 */
export function readCarrier(files: SysfsFiles, name: string): 0 | 1 | undefined {
  // Read at every reading: kept open (an interface that is down fails the read, and is opened again).
  const read = files.read(`${NET_CLASS}/${name}/carrier`, true);
  if (read.ok) return read.text.trim() === '1' ? 1 : 0;
  return read.failure.kind === 'missing' && !files.read(`${NET_CLASS}/${name}/type`).ok ? undefined : 0;
}

/** Whether `name` is IPoIB and, if so, its settings; undefined when it vanished while read. */
export function readInterfaceIdentity(
  files: SysfsFiles,
  name: string,
  placement: HcaPlacement,
): { identity: InterfaceIdentity | undefined; errors: ItemError[] } {
  const base = `${NET_CLASS}/${name}`;
  const type = files.read(`${base}/type`);
  if (!type.ok) return { identity: undefined, errors: [] };
  if (type.text.trim() !== ARPHRD_INFINIBAND) return { identity: { name, ipoib: false }, errors: [] };
  const errors: ItemError[] = [];
  const fail = (file: string, message: string): undefined => {
    errors.push({ item: `${base}/${file}`, message });
    return undefined;
  };
  const text = (file: string): string | undefined => {
    const result = files.read(`${base}/${file}`);
    if (result.ok) return result.text.trim();
    return result.failure.kind === 'missing' ? undefined : fail(file, result.failure.message);
  };
  const modeText = text('mode');
  const mtuText = text('mtu');
  const pkeyText = text('pkey');
  const parent = text('parent');
  const devPortText = text('dev_port');
  const devIdText = text('dev_id');
  const target = files.target(`${base}/device`);
  // Removed while it was read (its HCA unplugged): a partial reading is no interface at all.
  if (!files.read(`${base}/type`).ok) return { identity: undefined, errors: [] };

  let mode: IpoibInterface['mode'];
  if (modeText === 'datagram' || modeText === 'connected') mode = modeText;
  else if (modeText !== undefined)
    fail('mode', `unexpected content ${JSON.stringify(modeText.slice(0, 40))}, expected datagram or connected`);
  let mtu: number | undefined;
  if (mtuText !== undefined) {
    if (/^\d{1,6}$/.test(mtuText)) mtu = Number(mtuText);
    else fail('mtu', `unexpected content ${JSON.stringify(mtuText.slice(0, 40))}, expected a decimal`);
  }
  let pkey: string | undefined;
  if (pkeyText !== undefined) {
    if (/^0x[0-9a-f]{1,4}$/i.test(pkeyText)) pkey = `0x${pkeyText.slice(2).toLowerCase().padStart(4, '0')}`;
    else fail('pkey', `unexpected content ${JSON.stringify(pkeyText.slice(0, 40))}, expected hex like 0xffff`);
  }

  const { device, port } = mapToPort(target, devPortText, devIdText, placement.hcaByPciFunction, placement.portsByDevice);
  return { identity: { name, ipoib: true, settings: { name, device, port, mode, mtu, pkey, parent: parent || undefined } }, errors };
}

function mapToPort(
  pciFunction: string | undefined,
  devPortText: string | undefined,
  devIdText: string | undefined,
  hcaByPciFunction: ReadonlyMap<string, readonly string[]>,
  portsByDevice: ReadonlyMap<string, ReadonlySet<number>>,
): { device: string | undefined; port: number | undefined } {
  const candidates = pciFunction === undefined ? [] : (hcaByPciFunction.get(pciFunction) ?? []);
  // dev_port is the port index (port − 1); very old kernels left it 0 and used dev_id ("0x1").
  const devPort = devPortText !== undefined && /^\d+$/.test(devPortText) ? Number(devPortText) : undefined;
  const devId = devIdText !== undefined && /^0x[0-9a-f]+$/i.test(devIdText) ? Number.parseInt(devIdText, 16) : undefined;
  const index = devPort !== undefined && devPort > 0 ? devPort : (devId ?? devPort ?? 0);
  const port = index + 1;
  const device = candidates.find((name) => portsByDevice.get(name)?.has(port)) ?? candidates[0];
  return { device, port: device === undefined ? undefined : port };
}
