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

/** The PCI function behind a device, with the link files of drivers/pci/pci-sysfs.c (each optional). */
export interface PcieSpec {
  /** PCI address of the function, e.g. `0000:3b:00.0`. */
  address: string;
  /** The bridge or switch port above it, with its own maximum; without it the function sits on the root bus. */
  bridge?: { address: string; maxSpeed: string; maxWidth: string };
  currentSpeed?: string;
  currentWidth?: string;
  maxSpeed?: string;
  maxWidth?: string;
  /** `aer_dev_correctable`, `aer_dev_nonfatal`, `aer_dev_fatal` → content. */
  aer?: Record<string, string>;
}

export interface DeviceSpec {
  name: string;
  hcaType?: string;
  hwRev?: string;
  fwVer?: string;
  nodeDesc?: string;
  /** Without it, the device's `device` link points at an empty function directory. */
  pcie?: PcieSpec;
  ports: PortSpec[];
}

/** Where the PCI function of `device` (the `index`th) lives below the sysfs root. */
function pciDirectory(device: DeviceSpec, index: number): string {
  const pcie = device.pcie;
  if (!pcie) return `devices/pci0000:00/0000:${(index + 0x10).toString(16)}:00.0`;
  return pcie.bridge ? `devices/pci0000:00/${pcie.bridge.address}/${pcie.address}` : `devices/pci0000:00/${pcie.address}`;
}

async function writePcie(root: string, pci: string, pcie: PcieSpec): Promise<void> {
  const files: [string, string | undefined][] = [
    ['current_link_speed', pcie.currentSpeed],
    ['current_link_width', pcie.currentWidth],
    ['max_link_speed', pcie.maxSpeed],
    ['max_link_width', pcie.maxWidth],
  ];
  for (const [name, content] of files) if (content !== undefined) await file(root, `${pci}/${name}`, content);
  for (const [name, content] of Object.entries(pcie.aer ?? {})) await file(root, `${pci}/${name}`, content);
  if (pcie.bridge) {
    const bridge = path.dirname(pci);
    await file(root, `${bridge}/max_link_speed`, pcie.bridge.maxSpeed);
    await file(root, `${bridge}/max_link_width`, pcie.bridge.maxWidth);
  }
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
export async function writeHost(
  root: string,
  devices: readonly DeviceSpec[],
  interfaces: readonly InterfaceSpec[] = [],
  umad = false,
): Promise<void> {
  const pciOf = new Map(devices.map((device, index) => [device.name, pciDirectory(device, index)]));
  for (const [index, device] of devices.entries()) {
    const base = `class/infiniband/${device.name}`;
    const pci = pciOf.get(device.name)!;
    await mkdir(path.join(root, pci), { recursive: true });
    if (device.pcie) await writePcie(root, pci, device.pcie);
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
  {
    name: 'mlx5_1',
    ports: [{ state: '4: ACTIVE', phys: '5: LinkUp', rate: '50 Gb/sec (1X HDR)', lid: 5, smLid: 1, counters: { symbol_error: 41 } }],
  },
  { name: 'mlx5_2', ports: [{ state: '1: DOWN', phys: '2: Polling', rate: '40 Gb/sec (4X QDR)', counters: { link_downed: 1 } }] },
  { name: 'mlx5_3', ports: [{ state: '4: ACTIVE', phys: '5: LinkUp', rate: '100 Gb/sec (4X EDR)', linkLayer: 'Ethernet' }] },
];
export const HOSTILE_INTERFACES: InterfaceSpec[] = [
  { name: 'ib0', device: 'mlx5_1', port: 1, mode: 'connected', mtu: 65520, carrier: 1, pkey: '0xffff' },
  { name: 'ib0.8001', device: 'mlx5_1', port: 1, mode: 'datagram', mtu: 2044, carrier: 1, pkey: '0x8001', parent: 'ib0' },
];
export const HOSTILE_CONFIG = 'diag: {enabled: false}\nexpectations:\n  - {device: mlx5_1, port: 1, width: 4, speed: HDR}\n';

/** AER statistics as Linux 5.x+ prints them (aer.c's short names), with the given totals. */
export function aerFiles(correctable: number, nonfatal: number, fatal: number, rxErr = correctable): Record<string, string> {
  const uncorrectable = [
    'Undefined',
    'DLP',
    'SDES',
    'TLP',
    'FCP',
    'CmpltTO',
    'CmpltAbrt',
    'UnxCmplt',
    'RxOF',
    'MalfTLP',
    'ECRC',
    'UnsupReq',
    'ACSViol',
    'UncorrIntErr',
    'BlockedTLP',
    'AtomicOpBlocked',
    'TLPBlockedErr',
    'PoisonTLPBlocked',
  ];
  return {
    aer_dev_correctable: [
      `RxErr ${rxErr}`,
      `BadTLP ${correctable - rxErr}`,
      'BadDLLP 0',
      'Rollover 0',
      'Timeout 0',
      'NonFatalErr 0',
      'CorrIntErr 0',
      'HeaderOF 0',
      `TOTAL_ERR_COR ${correctable}`,
    ].join('\n'),
    aer_dev_nonfatal: [...uncorrectable.map((name) => `${name} ${name === 'DLP' ? nonfatal : 0}`), `TOTAL_ERR_NONFATAL ${nonfatal}`].join(
      '\n',
    ),
    aer_dev_fatal: [...uncorrectable.map((name) => `${name} ${name === 'DLP' ? fatal : 0}`), `TOTAL_ERR_FATAL ${fatal}`].join('\n'),
  };
}

const NDR_PORT: PortSpec = { state: '4: ACTIVE', phys: '5: LinkUp', rate: '400 Gb/sec (4X NDR)', lid: 0, smLid: 1 };

/**
 * The PCIe host of issue 24 (test/fixtures/sys/pcie is this, written by writeHost): ConnectX-7 NDR
 * at Gen5 x16 (healthy, AER statistics all 0), ConnectX-7 NDR at Gen5 x8 of x16 below a x16 root
 * port (trained narrow: 31.5 of its port's 50 GB/s), ConnectX-6 HDR at Gen3 of Gen4 below a Gen3
 * root port (the slot is the limit: 15.8 of 25 GB/s), and a ConnectX-7 whose function has no
 * PCIe attributes (an old kernel, a VF).
 */
export const PCIE_DEVICES: DeviceSpec[] = [
  {
    name: 'mlx5_0',
    hcaType: 'MT4129',
    fwVer: '28.39.1002',
    pcie: {
      address: '0000:17:00.0',
      bridge: { address: '0000:16:01.0', maxSpeed: '32.0 GT/s PCIe', maxWidth: '16' },
      currentSpeed: '32.0 GT/s PCIe',
      currentWidth: '16',
      maxSpeed: '32.0 GT/s PCIe',
      maxWidth: '16',
      aer: aerFiles(0, 0, 0),
    },
    ports: [{ ...NDR_PORT, lid: 0x11 }],
  },
  {
    name: 'mlx5_1',
    hcaType: 'MT4129',
    fwVer: '28.39.1002',
    pcie: {
      address: '0000:3b:00.0',
      bridge: { address: '0000:3a:01.0', maxSpeed: '32.0 GT/s PCIe', maxWidth: '16' },
      currentSpeed: '32.0 GT/s PCIe',
      currentWidth: '8',
      maxSpeed: '32.0 GT/s PCIe',
      maxWidth: '16',
      aer: aerFiles(17, 0, 0, 12),
    },
    ports: [{ ...NDR_PORT, lid: 0x12 }],
  },
  {
    name: 'mlx5_2',
    hcaType: 'MT4123',
    fwVer: '20.39.1002',
    pcie: {
      address: '0000:5e:00.0',
      bridge: { address: '0000:5d:02.0', maxSpeed: '8.0 GT/s PCIe', maxWidth: '16' },
      currentSpeed: '8.0 GT/s PCIe',
      currentWidth: '16',
      maxSpeed: '16.0 GT/s PCIe',
      maxWidth: '16',
    },
    ports: [{ state: '4: ACTIVE', phys: '5: LinkUp', rate: '200 Gb/sec (4X HDR)', lid: 0x13, smLid: 1 }],
  },
  {
    name: 'mlx5_3',
    hcaType: 'MT4129',
    fwVer: '28.39.1002',
    pcie: { address: '0000:86:00.0' },
    ports: [{ ...NDR_PORT, lid: 0x14 }],
  },
];

export interface HostDir {
  /** The sysfs root. */
  root: string;
  /** A config file next to it, when one was given. */
  config: string;
  remove(): Promise<void>;
}

export async function hostDir(
  devices: readonly DeviceSpec[],
  interfaces: readonly InterfaceSpec[] = [],
  config = '',
  umad = false,
): Promise<HostDir> {
  const dir = await mkdtemp(path.join(tmpdir(), 'ibx-host-'));
  const root = path.join(dir, 'sys');
  await writeHost(root, devices, interfaces, umad);
  const configFile = path.join(dir, 'config.yml');
  await writeFile(configFile, config);
  return { root, config: configFile, remove: () => rm(dir, { recursive: true, force: true }) };
}
