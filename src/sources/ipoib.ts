// The IPoIB source: /sys/class/net/<if> with type 32 (ARPHRD_INFINIBAND), mapped to the HCA port
// that carries it: same PCI function as /sys/class/infiniband/<dev>/device, port = dev_port + 1.
import type { Device, IpoibInterface, ReadError } from '../snapshot/types.js';
import { INFINIBAND_CLASS } from './infiniband.js';
import { mapLimited } from './concurrency.js';
import type { SysfsFiles } from './sysfs-files.js';

export const NET_CLASS = 'class/net';
const ARPHRD_INFINIBAND = '32';

export interface IpoibReading {
  interfaces: IpoibInterface[];
  errors: ReadError[];
  failure: string | undefined;
}

/** `devices` are the InfiniBand devices of the same cycle, used to map interfaces to ports. */
export async function readIpoib(files: SysfsFiles, devices: readonly Device[]): Promise<IpoibReading> {
  const listing = await files.list(NET_CLASS);
  if (!listing.ok) {
    if (listing.failure.kind === 'missing') return { interfaces: [], errors: [], failure: undefined };
    return { interfaces: [], errors: [], failure: `cannot list ${files.resolve(NET_CLASS)}: ${listing.failure.message}` };
  }
  const errors: ReadError[] = [];
  const hcaByPciFunction = new Map<string, string[]>();
  for (const device of devices) {
    const target = await files.target(`${INFINIBAND_CLASS}/${device.name}/device`);
    if (target !== undefined) hcaByPciFunction.set(target, [...(hcaByPciFunction.get(target) ?? []), device.name]);
  }
  const portsByDevice = new Map(devices.map((device) => [device.name, new Set(device.ports.map((port) => port.port))]));

  const interfaces = await mapLimited(listing.names, 8, async (name) => {
    const base = `${NET_CLASS}/${name}`;
    const type = await files.read(`${base}/type`);
    if (!type.ok || type.text.trim() !== ARPHRD_INFINIBAND) return undefined;
    const fail = (file: string, message: string): undefined => {
      errors.push({ collector: 'ipoib', item: `${base}/${file}`, message });
      return undefined;
    };
    const text = async (file: string): Promise<string | undefined> => {
      const result = await files.read(`${base}/${file}`);
      if (result.ok) return result.text.trim();
      return result.failure.kind === 'missing' ? undefined : fail(file, result.failure.message);
    };
    const [modeText, mtuText, pkeyText, parent, devPortText, devIdText, target] = await Promise.all([
      text('mode'),
      text('mtu'),
      text('pkey'),
      text('parent'),
      text('dev_port'),
      text('dev_id'),
      files.target(`${base}/device`),
    ]);
    // The kernel refuses to read `carrier` while the interface is administratively down (EINVAL):
    // that is "no carrier", not an error.
    const carrierRead = await files.read(`${base}/carrier`);
    const carrier: 0 | 1 = carrierRead.ok && carrierRead.text.trim() === '1' ? 1 : 0;
    // Removed while it was read (its HCA unplugged): a partial reading is no interface at all.
    if (!(await files.read(`${base}/type`)).ok) return undefined;

    let mode: IpoibInterface['mode'];
    if (modeText === 'datagram' || modeText === 'connected') mode = modeText;
    else if (modeText !== undefined) fail('mode', `unexpected content ${JSON.stringify(modeText.slice(0, 40))}, expected datagram or connected`);
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

    const { device, port } = mapToPort(target, devPortText, devIdText, hcaByPciFunction, portsByDevice);
    const reading: IpoibInterface = { name, device, port, mode, mtu, carrier, pkey, parent: parent || undefined };
    return reading;
  });
  return { interfaces: interfaces.filter((value): value is IpoibInterface => value !== undefined), errors, failure: undefined };
}

function mapToPort(
  pciFunction: string | undefined,
  devPortText: string | undefined,
  devIdText: string | undefined,
  hcaByPciFunction: ReadonlyMap<string, string[]>,
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
