import { describe, expect, it } from 'vitest';
import { NO_DEVICE_FILTER } from '../../src/sources/device-filter.js';
import { readInfinibandClass } from '../../src/sources/infiniband.js';
import { readIpoib } from '../../src/sources/ipoib.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { DGX, ZOO } from '../support/trees.js';

async function read(root: string) {
  const files = new SysfsFiles(root);
  const { devices } = await readInfinibandClass(files, NO_DEVICE_FILTER);
  return readIpoib(files, devices);
}

describe('IPoIB source', () => {
  it('maps every type-32 interface to its HCA port and ignores the others', async () => {
    const reading = await read(ZOO);
    expect(reading.errors).toEqual([]);
    expect(reading.interfaces).toEqual([
      { name: 'ib0', device: 'mlx5_0', port: 1, mode: 'connected', mtu: 65520, carrier: 1, pkey: '0xffff', parent: undefined },
      { name: 'ib0.8001', device: 'mlx5_0', port: 1, mode: 'datagram', mtu: 2044, carrier: 1, pkey: '0x8001', parent: 'ib0' },
      { name: 'ib1', device: 'mlx4_0', port: 2, mode: 'datagram', mtu: 2044, carrier: 1, pkey: '0xffff', parent: undefined },
      { name: 'ib2', device: 'mlx5_2', port: 1, mode: 'datagram', mtu: 4092, carrier: 0, pkey: '0xffff', parent: undefined },
      // Admin-down: the carrier read fails, which is "no carrier".
      { name: 'ib3', device: 'mlx5_5', port: 1, mode: 'datagram', mtu: 2044, carrier: 0, pkey: '0xffff', parent: undefined },
    ]);
  });

  it('maps eight single-port HCAs one to one', async () => {
    const reading = await read(DGX);
    expect(reading.interfaces.map((i) => `${i.name}:${i.device}/${i.port}`)).toEqual(
      Array.from({ length: 8 }, (_, i) => `ib${i}:mlx5_${i}/1`),
    );
  });

  it('leaves device and port empty when no HCA shares the PCI function', async () => {
    const files = new SysfsFiles(ZOO);
    const reading = await readIpoib(files, []);
    expect(reading.interfaces.find((i) => i.name === 'ib0')).toMatchObject({ device: undefined, port: undefined, mode: 'connected' });
  });
});
