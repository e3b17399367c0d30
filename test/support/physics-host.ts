// The host of the link physics tests end to end: the PCIe host of issue 24 (PCIE_DEVICES: an
// adapter at Gen5 x16, one trained at x8 of x16, one at Gen3 of Gen4, one without PCIe attributes)
// with a cable in each port, read by a fake mstlink that answers each device with a recorded capture
// (test/fixtures/module/) through the exporter's real command runner. The captures were taken on
// other adapters than these: the exporter takes what the tool prints for a device as that device's.
import { fakeModuleTool, type Answer, type FakeTool } from './fake-module-tool.js';
import { PCIE_DEVICES, hostDir, type DeviceSpec } from './host-tree.js';

/** What the fake mstlink answers for each device of the host. */
export const PHYSICS_CABLES: Readonly<Record<string, Answer>> = {
  // an OSFP optical transceiver: 54 °C against its 75 °C, four lanes of Rx and Tx power with thresholds
  mlx5_0: { stdout: 'mlxlink-osfp-optical-excerpt.txt' },
  // a QSFP28 passive copper cable, as --json prints it: identity and BER, no sensor
  mlx5_1: { stdout: 'mlxlink-4.30-bluefield3-100g-qsfp28-passive-copper.json' },
  // mlx5_2: no answer: the tool fails for it as it does for a device it cannot open (recorded)
  // an empty cage: every module record N/A (its port is down)
  mlx5_3: { stdout: 'derived-empty-cage.txt' },
};

/** PCIE_DEVICES with the symbol errors given per device, and the port of mlx5_3 down: its cage is empty. */
export function physicsDevices(symbolErrors: Readonly<Record<string, number>> = {}): DeviceSpec[] {
  return PCIE_DEVICES.map((device) => ({
    ...device,
    ports: device.ports.map((port) => ({
      ...port,
      ...(device.name === 'mlx5_3' && { state: '1: DOWN', phys: '2: Polling' }),
      counters: { ...port.counters, symbol_error: symbolErrors[device.name] ?? 0 },
    })),
  }));
}

export interface PhysicsHost {
  /** The sysfs root. */
  root: string;
  tool: FakeTool;
  /** Flags for the exporter or `check` on this host: its sysfs root and the fake tool, no diag collector. */
  flags: string[];
  remove(): Promise<void>;
}

/**
 * The host written to a temporary directory; `cables` replaces the answers of PHYSICS_CABLES for
 * some devices; `help` is the fixture the tool prints for --help (without it, --help fails).
 */
export async function physicsHost(
  options: { symbolErrors?: Readonly<Record<string, number>>; cables?: Readonly<Record<string, Answer>>; help?: string } = {},
): Promise<PhysicsHost> {
  const host = await hostDir(physicsDevices(options.symbolErrors), [
    { name: 'ib0', device: 'mlx5_0', port: 1, mode: 'datagram', mtu: 4092, carrier: 1, pkey: '0xffff' },
  ]);
  const tool = await fakeModuleTool({ ...PHYSICS_CABLES, ...options.cables }, 'mstlink', options.help);
  return {
    root: host.root,
    tool,
    flags: ['--path.sysfs', host.root, '--mstlink.path', tool.path, '--no-collector.diag'],
    remove: async () => {
      await tool.remove();
      await host.remove();
    },
  };
}
