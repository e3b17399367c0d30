// The sysfs source on the zoo fixture: every quirk of infiniband-facts.md read the right way.
import { describe, expect, it } from 'vitest';
import { NO_DEVICE_FILTER } from '../../src/sources/device-filter.js';
import { readInfinibandClass } from '../../src/sources/infiniband.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import type { Device, Port } from '../../src/model/host.js';
import { ZOO } from '../support/trees.js';

async function readZoo() {
  return readInfinibandClass(new SysfsFiles(ZOO), NO_DEVICE_FILTER);
}

function port(devices: readonly Device[], device: string, number = 1): Port {
  const found = devices.find((d) => d.name === device)?.ports.find((p) => p.port === number);
  if (!found) throw new Error(`no ${device}/${number}`);
  return found;
}

function counter(p: Port, name: string) {
  return p.counters.find((c) => c.name === name);
}

describe('sysfs source on the zoo host', () => {
  it('reads every device, in natural order, with no read errors', async () => {
    const reading = await readZoo();
    expect(reading.failure).toBeUndefined();
    expect(reading.errors).toEqual([]);
    expect(reading.devices.map((d) => d.name)).toEqual([
      'hfi1_0',
      'i40iw0',
      'irdma0',
      'mlx4_0',
      'mlx5_0',
      'mlx5_1',
      'mlx5_2',
      'mlx5_3',
      'mlx5_4',
      'mlx5_5',
      'mlx5_6',
      'mlx5_7',
      'qib0',
    ]);
  });

  it('reads device identity, leaving absent files undefined', async () => {
    const { devices } = await readZoo();
    const mlx4 = devices.find((d) => d.name === 'mlx4_0')!;
    expect(mlx4).toMatchObject({ nodeType: 'CA', hcaType: 'MT4099', firmwareVersion: '2.42.5000' });
    expect(mlx4.nodeGuid).toMatch(/^0x[0-9a-f]{16}$/);
    const hfi = devices.find((d) => d.name === 'hfi1_0')!;
    expect(hfi).toMatchObject({ nodeGuid: undefined, hcaType: undefined, hwRev: undefined, firmwareVersion: '1.27.0' });
    expect(hfi.boardId).toContain('Omni-Path');
    expect(devices.find((d) => d.name === 'irdma0')!.nodeType).toBe('RNIC');
  });

  it('parses states, rate, LIDs and the capability mask', async () => {
    const { devices } = await readZoo();
    expect(port(devices, 'mlx5_2')).toMatchObject({
      state: { id: 2, name: 'INIT' },
      physicalState: { id: 5, name: 'LinkUp' },
      width: 4,
      speed: 'NDR',
      rateGbps: 400,
      lid: 0,
      smLid: 0,
    });
    expect(port(devices, 'mlx5_0')).toMatchObject({
      lid: 0x1a,
      smLid: 1,
      smSl: 0,
      lmc: 0,
      capabilityMask: 0x2659e848,
      linkLayer: 'InfiniBand',
    });
    expect(port(devices, 'mlx5_1').linkLayer).toBe('Ethernet');
    expect(port(devices, 'mlx4_0').capabilityMask! & 0x2).toBe(2);
    expect(port(devices, 'qib0')).toMatchObject({ rateGbps: 2.5, width: 1, speed: 'SDR' });
    expect(port(devices, 'i40iw0')).toMatchObject({ rateGbps: 10, width: 4, speed: 'SDR' });
    expect(port(devices, 'mlx5_5')).toMatchObject({ state: { id: 1, name: 'DOWN' }, physicalState: { id: 2, name: 'Polling' } });
  });

  it('takes the port GUID from GID 0', async () => {
    const { devices } = await readZoo();
    const mlx4 = devices.find((d) => d.name === 'mlx4_0')!;
    const guid = BigInt(mlx4.nodeGuid!);
    expect(port(devices, 'mlx4_0', 1).portGuid).toBe(`0x${(guid + 1n).toString(16).padStart(16, '0')}`);
    expect(port(devices, 'mlx4_0', 2).portGuid).toBe(`0x${(guid + 2n).toString(16).padStart(16, '0')}`);
  });

  it('multiplies data words by 4 and keeps 64-bit magnitudes', async () => {
    const { devices } = await readZoo();
    expect(counter(port(devices, 'mlx5_4'), 'transmit_data_bytes')).toEqual({
      name: 'transmit_data_bytes',
      value: 4294967295 * 4,
      saturated: true,
    });
    expect(counter(port(devices, 'mlx5_0'), 'transmit_data_bytes')!.value).toBe(Number(126879741729912844n));
    const xdr = port(devices, 'mlx5_6');
    expect(counter(xdr, 'transmit_data_bytes')).toEqual({
      name: 'transmit_data_bytes',
      value: Number(18446744073709551615n) * 4,
      saturated: true,
    });
    expect(counter(xdr, 'receive_data_bytes')).toEqual({ name: 'receive_data_bytes', value: Number(36028797018963972n), saturated: false });
  });

  it('flags saturation by counter width on the basic table', async () => {
    const { devices } = await readZoo();
    const sdr = port(devices, 'mlx5_4');
    const saturated = sdr.counters
      .filter((c) => c.saturated)
      .map((c) => c.name)
      .sort();
    expect(saturated).toEqual(['link_downed', 'local_link_integrity_errors', 'symbol_errors', 'transmit_data_bytes']);
    expect(sdr.counters.some((c) => c.name.startsWith('unicast'))).toBe(false);
    // Nothing at a 4/8/16-bit max on the healthy port; its data counters are 64-bit.
    expect(port(devices, 'mlx5_0').counters.filter((c) => c.saturated)).toEqual([]);
    expect(port(devices, 'mlx5_0').counters).toHaveLength(21);
  });

  it('prefers the legacy counters_ext/ 64-bit values', async () => {
    const { devices } = await readZoo();
    const p2 = port(devices, 'mlx4_0', 2);
    expect(counter(p2, 'unicast_transmit_packets')!.value).toBe(50550850);
    expect(counter(p2, 'multicast_receive_packets')!.value).toBe(84412);
    expect(counter(p2, 'transmit_data_bytes')!.value).toBe(106161427560);
  });

  it('exports nothing for N/A (no PMA), nothing without counters/, and keeps hw_counters', async () => {
    const { devices } = await readZoo();
    expect(port(devices, 'i40iw0').counters).toEqual([]);
    const irdma = port(devices, 'irdma0');
    expect(irdma.counters).toEqual([]);
    expect(irdma.hwCounters.get('tcpRetransSegs')).toBe(1877);
    expect(irdma.hwCounters.has('lifespan')).toBe(false);
    expect(port(devices, 'mlx5_1').hwCounters.get('np_cnp_sent')).toBe(51907);
  });

  it('applies include and exclude before reading a device', async () => {
    const files = new SysfsFiles(ZOO);
    const reads: string[] = [];
    const read = files.read.bind(files);
    files.read = (relative) => {
      reads.push(relative);
      return read(relative);
    };
    const readDecimals = files.readDecimals.bind(files);
    files.readDecimals = (directory, names, keep, values, others) => {
      reads.push(...names.map((name) => `${directory}/${name}`));
      readDecimals(directory, names, keep, values, others);
    };
    const reading = await readInfinibandClass(files, { include: /^mlx5_/, exclude: /^mlx5_[1-7]$/ });
    expect(reading.devices.map((d) => d.name)).toEqual(['mlx5_0']);
    expect(reads.every((file) => file.startsWith('class/infiniband/mlx5_0/'))).toBe(true);
    expect(reads.filter((file) => file.includes('/counters/'))).not.toEqual([]);
  });

  it('treats a host without /sys/class/infiniband as no devices, not a failure', async () => {
    const reading = await readInfinibandClass(new SysfsFiles('/nonexistent-sysfs-root'), NO_DEVICE_FILTER);
    expect(reading).toEqual({ devices: [], errors: [], failure: undefined });
  });
});
