// Small sysfs trees written port by port in the kernel's formats, for the scenarios of the
// findings and check tests (a port stuck INIT, a 1X link, a pulled cable, RoCE, P_Key children).
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PMA_COUNTERS } from '../../src/model/pma-counters.js';

export interface PortSpec {
  state: string;
  phys: string;
  rate: string;
  linkLayer?: 'InfiniBand' | 'Ethernet';
  lid?: number;
  smLid?: number;
  /** Counter file name → value; the other PMA counters read 0. */
  counters?: Record<string, number>;
}

export interface DeviceSpec {
  name: string;
  hcaType?: string;
  hwRev?: string;
  fwVer?: string;
  nodeDesc?: string;
  ports: PortSpec[];
}

export interface InterfaceSpec {
  name: string;
  /** The device (PCI function) and port carrying it. */
  device: string;
  port: number;
  mode: 'datagram' | 'connected';
  mtu: number;
  carrier: 0 | 1;
  pkey: string;
  parent?: string;
}

async function file(root: string, relative: string, content: string): Promise<void> {
  await mkdir(path.dirname(path.join(root, relative)), { recursive: true });
  await writeFile(path.join(root, relative), `${content}\n`);
}

/** Write `devices` and `interfaces` under `root` (the sysfs root); `umad` adds class/infiniband_mad. */
export async function writeHost(root: string, devices: readonly DeviceSpec[], interfaces: readonly InterfaceSpec[] = [], umad = false): Promise<void> {
  const pciOf = new Map(devices.map((device, index) => [device.name, `devices/pci0000:00/0000:${(index + 0x10).toString(16)}:00.0`]));
  for (const [index, device] of devices.entries()) {
    const base = `class/infiniband/${device.name}`;
    const pci = pciOf.get(device.name)!;
    await mkdir(path.join(root, pci), { recursive: true });
    await mkdir(path.join(root, base), { recursive: true });
    await symlink(path.relative(path.join(root, base), path.join(root, pci)), path.join(root, base, 'device'));
    const guid = `a088:c203:00${(0x40 + index).toString(16)}:0000`;
    await file(root, `${base}/node_type`, '1: CA');
    await file(root, `${base}/node_guid`, guid);
    await file(root, `${base}/fw_ver`, device.fwVer ?? '20.39.1002');
    await file(root, `${base}/hca_type`, device.hcaType ?? 'MT4123');
    await file(root, `${base}/hw_rev`, device.hwRev ?? '0');
    await file(root, `${base}/node_desc`, device.nodeDesc ?? `test01 ${device.name}`);
    for (const [p, port] of device.ports.entries()) {
      const dir = `${base}/ports/${p + 1}`;
      await file(root, `${dir}/state`, port.state);
      await file(root, `${dir}/phys_state`, port.phys);
      await file(root, `${dir}/rate`, port.rate);
      await file(root, `${dir}/link_layer`, port.linkLayer ?? 'InfiniBand');
      await file(root, `${dir}/lid`, `0x${(port.lid ?? 0).toString(16)}`);
      await file(root, `${dir}/sm_lid`, `0x${(port.smLid ?? 0).toString(16)}`);
      await file(root, `${dir}/cap_mask`, port.linkLayer === 'Ethernet' ? '0x04010000' : '0x2659e848');
      for (const counter of PMA_COUNTERS) await file(root, `${dir}/counters/${counter.file}`, String(port.counters?.[counter.file] ?? 0));
    }
  }
  for (const iface of interfaces) {
    const base = `class/net/${iface.name}`;
    await mkdir(path.join(root, base), { recursive: true });
    await symlink(path.relative(path.join(root, base), path.join(root, pciOf.get(iface.device)!)), path.join(root, base, 'device'));
    await file(root, `${base}/type`, '32');
    await file(root, `${base}/mode`, iface.mode);
    await file(root, `${base}/mtu`, String(iface.mtu));
    await file(root, `${base}/carrier`, String(iface.carrier));
    await file(root, `${base}/pkey`, iface.pkey);
    await file(root, `${base}/dev_port`, String(iface.port - 1));
    if (iface.parent) await file(root, `${base}/parent`, iface.parent);
  }
  if (umad) await file(root, 'class/infiniband_mad/abi_version', '5');
}

/** The hostile host of issue 14's check: stuck INIT without SM, 1X against a configured 4X, a pulled cable, RoCE, IPoIB datagram/2044 on a P_Key child. */
export const HOSTILE_DEVICES: DeviceSpec[] = [
  { name: 'mlx5_0', ports: [{ state: '2: INIT', phys: '5: LinkUp', rate: '200 Gb/sec (4X HDR)' }] },
  { name: 'mlx5_1', ports: [{ state: '4: ACTIVE', phys: '5: LinkUp', rate: '50 Gb/sec (1X HDR)', lid: 5, smLid: 1, counters: { symbol_error: 41 } }] },
  { name: 'mlx5_2', ports: [{ state: '1: DOWN', phys: '2: Polling', rate: '40 Gb/sec (4X QDR)', counters: { link_downed: 1 } }] },
  { name: 'mlx5_3', ports: [{ state: '4: ACTIVE', phys: '5: LinkUp', rate: '100 Gb/sec (4X EDR)', linkLayer: 'Ethernet' }] },
];
export const HOSTILE_INTERFACES: InterfaceSpec[] = [
  { name: 'ib0', device: 'mlx5_1', port: 1, mode: 'connected', mtu: 65520, carrier: 1, pkey: '0xffff' },
  { name: 'ib0.8001', device: 'mlx5_1', port: 1, mode: 'datagram', mtu: 2044, carrier: 1, pkey: '0x8001', parent: 'ib0' },
];
export const HOSTILE_CONFIG = 'diag: {enabled: false}\nexpectations:\n  - {device: mlx5_1, port: 1, width: 4, speed: HDR}\n';

export interface HostDir {
  /** The sysfs root. */
  root: string;
  /** A config file next to it, when one was given. */
  config: string;
  remove(): Promise<void>;
}

export async function hostDir(devices: readonly DeviceSpec[], interfaces: readonly InterfaceSpec[] = [], config = '', umad = false): Promise<HostDir> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-host-'));
  const root = path.join(dir, 'sys');
  await writeHost(root, devices, interfaces, umad);
  const configFile = path.join(dir, 'config.yml');
  await writeFile(configFile, config);
  return { root, config: configFile, remove: () => rm(dir, { recursive: true, force: true }) };
}
