// PCIe link of the adapters: the kernel's formats, line coding, degradation, the PCIe limit of a
// port, and the source on the fixture host test/fixtures/sys/pcie (written by writeHost from
// PCIE_DEVICES, which this test also keeps true).
import { mkdtemp, readFile, readdir, readlink, rm, symlink, writeFile, mkdir, lstat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  describePcieRate,
  parseAerTotal,
  parsePcieSpeed,
  parsePcieWidth,
  pcieBandwidthBytesPerSecond,
  pcieDegradation,
  pcieLimits,
  type PcieReading,
} from '../../src/model/pcie.js';
import { readPcieLink } from '../../src/sources/pcie.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { PCIE_DEVICES, aerFiles, writeHost } from '../support/host-tree.js';
import { FIXTURES, copyTree } from '../support/trees.js';

const PCIE_HOST = path.join(FIXTURES, 'sys/pcie');

describe('PCIe link files', () => {
  it.each([
    // since 5.2 (pci_speed_string)
    ['2.5 GT/s PCIe', 2.5],
    ['5.0 GT/s PCIe', 5],
    ['8.0 GT/s PCIe', 8],
    ['16.0 GT/s PCIe', 16],
    ['32.0 GT/s PCIe', 32],
    ['64.0 GT/s PCIe', 64],
    ['Unknown', 'unknown'],
    // 4.13-5.1 (own switch, then PCIE_SPEED2STR)
    ['2.5 GT/s', 2.5],
    ['5 GT/s', 5],
    ['8 GT/s', 8],
    ['16 GT/s', 16],
    ['32 GT/s', 32],
    ['Unknown speed', 'unknown'],
    // without the suffix, with the decimal
    ['8.0 GT/s', 8],
    ['16.0 GT/s', 16],
    // with the trailing newline stripped or not, and stray spaces
    ['  16.0 GT/s PCIe  ', 16],
    // not speeds
    ['3 GT/s', undefined],
    ['33 MHz PCI', undefined],
    ['', undefined],
    ['16.0 GT/s PCIe x16', undefined],
  ] as const)('speed %j → %j', (text, expected) => {
    expect(parsePcieSpeed(text)).toBe(expected);
  });

  it.each([
    ['16', 16],
    ['8', 8],
    ['1', 1],
    ['32', 32],
    ['0', 'unknown'],
    [' 4 ', 4],
    ['x16', undefined],
    ['3', undefined],
    ['', undefined],
    ['-1', undefined],
  ] as const)('width %j → %j', (text, expected) => {
    expect(parsePcieWidth(text)).toBe(expected);
  });

  it("takes the usable bandwidth after each generation's line coding", () => {
    const gbps = (gtps: number, lanes: number) => (pcieBandwidthBytesPerSecond({ gtps, lanes })! * 8) / 1e9;
    expect(gbps(2.5, 1)).toBeCloseTo(2, 9); // 8b/10b
    expect(gbps(5, 16)).toBeCloseTo(64, 9);
    expect(gbps(8, 16)).toBeCloseTo((128 * 128) / 130, 9); // 128b/130b: 126.03 Gb/s
    expect(gbps(16, 16)).toBeCloseTo(252.06, 2);
    expect(gbps(32, 16)).toBeCloseTo(504.12, 2); // Gen5 x16: 63.0 GB/s
    expect(gbps(32, 8) / 8).toBeCloseTo(31.51, 2); // Gen5 x8: 31.5 GB/s, the "~31 GB/s"
    expect(gbps(64, 16)).toBeCloseTo((64 * 16 * 242) / 256, 9); // Gen6 FLIT: 968 Gb/s
    expect(pcieBandwidthBytesPerSecond({ gtps: 32, lanes: undefined })).toBeUndefined();
    expect(pcieBandwidthBytesPerSecond({ gtps: undefined, lanes: 16 })).toBeUndefined();
  });

  it("judges width and speed against the adapter's own maximum, only where both are known", () => {
    expect(pcieDegradation({ current: { gtps: 32, lanes: 8 }, max: { gtps: 32, lanes: 16 } })).toEqual({ width: true, speed: false });
    expect(pcieDegradation({ current: { gtps: 8, lanes: 16 }, max: { gtps: 16, lanes: 16 } })).toEqual({ width: false, speed: true });
    expect(pcieDegradation({ current: { gtps: 32, lanes: 16 }, max: { gtps: 32, lanes: 16 } })).toEqual({ width: false, speed: false });
    expect(pcieDegradation({ current: { gtps: undefined, lanes: undefined }, max: { gtps: 32, lanes: 16 } })).toEqual({});
    expect(describePcieRate({ gtps: 32, lanes: 8 })).toBe('Gen5 x8');
    expect(describePcieRate({ gtps: 8, lanes: undefined })).toBe('Gen3 x?');
  });
});

describe('AER statistics', () => {
  // Linux 4.19's names (Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats), with spaces
  const OLD_CORRECTABLE =
    'Receiver Error 2\nBad TLP 0\nBad DLLP 0\nRELAY_NUM Rollover 0\nReplay Timer Timeout 0\nAdvisory Non-Fatal 0\nCorrected Internal Error 0\nHeader Log Overflow 0\nTOTAL_ERR_COR 2\n';
  const OLD_FATAL =
    'Undefined 0\nData Link Protocol 0\nSurprise Down Error 0\nPoisoned TLP 0\nFlow Control Protocol 0\nCompletion Timeout 0\nCompleter Abort 0\nUnexpected Completion 0\nReceiver Overflow 0\nMalformed TLP 0\nECRC 0\nUnsupported Request 0\nACS Violation 0\nUncorrectable Internal Error 0\nMC Blocked TLP 0\nAtomicOp Egress Blocked 0\nTLP Prefix Blocked Error 0\nTOTAL_ERR_FATAL 0\n';

  it.each([
    ['4.19 names with spaces', OLD_CORRECTABLE, 'correctable', 2],
    ['4.19 fatal', OLD_FATAL, 'fatal', 0],
    ['5.x short names', aerFiles(17, 0, 0, 12).aer_dev_correctable!, 'correctable', 17],
    ['5.x non-fatal', aerFiles(0, 3, 0).aer_dev_nonfatal!, 'nonfatal', 3],
    ["the total of another severity is not this one's", 'RxErr 1\nTOTAL_ERR_COR 1\n', 'fatal', undefined],
    ['a line that is not "<name> <count>"', 'RxErr one\nTOTAL_ERR_COR 1\n', 'correctable', undefined],
    ['empty', '', 'correctable', undefined],
  ] as const)('%s', (_name, text, severity, expected) => {
    expect(parseAerTotal(text, severity)).toBe(expected);
  });
});

const reading = (device: string, address: string | undefined, gtps: number | undefined, lanes: number | undefined): PcieReading => ({
  device,
  address,
  current: { gtps, lanes },
  max: { gtps, lanes },
  upstream: undefined,
  aer: {},
});
const NDR = 50e9; // 4X NDR data rate, bytes/s
const HDR = 25e9;

describe('infiniband_port_pcie_limited', () => {
  it('is 1 on an NDR port behind Gen5 x8 (31.5 of 50 GB/s), 0 behind Gen5 x16', () => {
    const limits = pcieLimits(
      [reading('mlx5_0', '0000:17:00.0', 32, 16), reading('mlx5_1', '0000:3b:00.0', 32, 8)],
      [
        { device: 'mlx5_0', port: 1, active: true, dataRateBytesPerSecond: NDR },
        { device: 'mlx5_1', port: 1, active: true, dataRateBytesPerSecond: NDR },
      ],
    );
    expect(limits.map(({ device, limited }) => [device, limited])).toEqual([
      ['mlx5_0', false],
      ['mlx5_1', true],
    ]);
    expect(limits[1]!.bandwidthBytesPerSecond / 1e9).toBeCloseTo(31.5, 1);
  });

  it('adds up the active ports of the functions of one card, which share its link', () => {
    // a dual-port ConnectX-6 HDR on Gen4 x16 (31.5 GB/s): one port at 25 GB/s fits, two do not
    const pcie = [reading('mlx5_0', '0000:81:00.0', 16, 16), reading('mlx5_1', '0000:81:00.1', 16, 16)];
    const both = pcieLimits(pcie, [
      { device: 'mlx5_0', port: 1, active: true, dataRateBytesPerSecond: HDR },
      { device: 'mlx5_1', port: 1, active: true, dataRateBytesPerSecond: HDR },
    ]);
    expect(both.map((limit) => limit.limited)).toEqual([true, true]);
    expect(both[0]!.demandBytesPerSecond).toBe(2 * HDR);
    const one = pcieLimits(pcie, [
      { device: 'mlx5_0', port: 1, active: true, dataRateBytesPerSecond: HDR },
      { device: 'mlx5_1', port: 1, active: false, dataRateBytesPerSecond: HDR },
    ]);
    expect(one).toEqual([
      { device: 'mlx5_0', port: 1, limited: false, bandwidthBytesPerSecond: expect.any(Number), demandBytesPerSecond: HDR },
    ]);
  });

  it('says nothing of a port whose adapter has no known PCIe bandwidth or whose rate is unknown', () => {
    expect(
      pcieLimits(
        [reading('mlx5_0', '0000:17:00.0', undefined, undefined)],
        [{ device: 'mlx5_0', port: 1, active: true, dataRateBytesPerSecond: NDR }],
      ),
    ).toEqual([]);
    expect(
      pcieLimits(
        [reading('mlx5_0', '0000:17:00.0', 32, 16)],
        [{ device: 'mlx5_0', port: 1, active: true, dataRateBytesPerSecond: undefined }],
      ),
    ).toEqual([]);
    expect(pcieLimits([], [{ device: 'mlx5_0', port: 1, active: true, dataRateBytesPerSecond: NDR }])).toEqual([]);
  });
});

describe('PCIe source on the fixture host', () => {
  const files = new SysfsFiles(PCIE_HOST);

  it('reads a healthy Gen5 x16 adapter with its AER statistics', () => {
    expect(readPcieLink(files, 'mlx5_0')).toEqual({
      pcie: {
        device: 'mlx5_0',
        address: '0000:17:00.0',
        current: { gtps: 32, lanes: 16 },
        max: { gtps: 32, lanes: 16 },
        upstream: { gtps: 32, lanes: 16 },
        aer: { correctable: 0, nonfatal: 0, fatal: 0 },
      },
      errors: [],
    });
  });

  it('reads x8 of x16 below a x16 port, and Gen3 of Gen4 below a Gen3 port without AER statistics', () => {
    const narrow = readPcieLink(files, 'mlx5_1').pcie!;
    expect(narrow).toMatchObject({
      current: { gtps: 32, lanes: 8 },
      max: { gtps: 32, lanes: 16 },
      upstream: { gtps: 32, lanes: 16 },
      aer: { correctable: 17, nonfatal: 0, fatal: 0 },
    });
    expect(pcieDegradation(narrow)).toEqual({ width: true, speed: false });
    const slow = readPcieLink(files, 'mlx5_2').pcie!;
    expect(slow).toMatchObject({
      address: '0000:5e:00.0',
      current: { gtps: 8, lanes: 16 },
      max: { gtps: 16, lanes: 16 },
      upstream: { gtps: 8, lanes: 16 },
      aer: {},
    });
    expect(pcieDegradation(slow)).toEqual({ width: false, speed: true });
  });

  it('gives no reading and no error for a function without PCIe attributes, a device without a PCI function, or no device', () => {
    expect(readPcieLink(files, 'mlx5_3')).toEqual({ pcie: undefined, errors: [] });
    expect(readPcieLink(files, 'rxe0')).toEqual({ pcie: undefined, errors: [] });
    expect(readPcieLink(new SysfsFiles('/nonexistent'), 'mlx5_0')).toEqual({ pcie: undefined, errors: [] });
  });

  it('is the tree writeHost writes from PCIE_DEVICES', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-pcie-'));
    try {
      await writeHost(dir, PCIE_DEVICES, [
        { name: 'ib0', device: 'mlx5_0', port: 1, mode: 'datagram', mtu: 4092, carrier: 1, pkey: '0xffff' },
      ]);
      expect(await snapshotOfTree(PCIE_HOST)).toEqual({ ...(await snapshotOfTree(dir)), 'devices/pci0000:00/0000:86:00.0/.gitkeep': '' });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

/** Every file (content) and symlink (target) below `root`. */
async function snapshotOfTree(root: string, relative = ''): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const name of await readdir(path.join(root, relative))) {
    const entry = path.join(relative, name);
    const stats = await lstat(path.join(root, entry));
    if (stats.isSymbolicLink()) out[entry] = `-> ${await readlink(path.join(root, entry))}`;
    else if (stats.isDirectory()) Object.assign(out, await snapshotOfTree(root, entry));
    else out[entry] = await readFile(path.join(root, entry), 'utf8');
  }
  return out;
}

describe('PCIe source on hostile files', () => {
  it('counts a file it cannot parse, a directory in place of a file, and keeps what it could read', async () => {
    const tree = await copyTree(PCIE_HOST);
    try {
      const pci = path.join(tree.root, 'devices/pci0000:00/0000:3a:01.0/0000:3b:00.0');
      await writeFile(path.join(pci, 'current_link_width'), 'sixteen\n');
      await rm(path.join(pci, 'aer_dev_fatal'));
      await mkdir(path.join(pci, 'aer_dev_fatal'));
      const { pcie, errors } = readPcieLink(new SysfsFiles(tree.root), 'mlx5_1');
      expect(pcie).toMatchObject({
        current: { gtps: 32, lanes: undefined },
        max: { gtps: 32, lanes: 16 },
        aer: { correctable: 17, nonfatal: 0 },
      });
      expect(pcie!.aer.fatal).toBeUndefined();
      expect(errors.map((error) => error.item)).toEqual([
        'class/infiniband/mlx5_1/device/current_link_width',
        'class/infiniband/mlx5_1/device/aer_dev_fatal',
      ]);
      expect(errors[0]!.message).toContain('"sixteen"');
    } finally {
      await tree.remove();
    }
  });

  it('reads a VF whose link registers read 0 as no link data at all', async () => {
    const tree = await copyTree(PCIE_HOST);
    try {
      const vf = path.join(tree.root, 'devices/pci0000:00/0000:86:00.0');
      for (const [name, content] of [
        ['current_link_speed', 'Unknown'],
        ['current_link_width', '0'],
        ['max_link_speed', 'Unknown'],
        ['max_link_width', '0'],
      ])
        await writeFile(path.join(vf, name!), `${content}\n`);
      expect(readPcieLink(new SysfsFiles(tree.root), 'mlx5_3')).toEqual({ pcie: undefined, errors: [] });
      // an old kernel's "Unknown speed" with a known width still tells the width
      await writeFile(path.join(vf, 'max_link_speed'), 'Unknown speed\n');
      await writeFile(path.join(vf, 'max_link_width'), '16\n');
      expect(readPcieLink(new SysfsFiles(tree.root), 'mlx5_3').pcie).toMatchObject({
        address: '0000:86:00.0',
        current: { gtps: undefined, lanes: undefined },
        max: { gtps: undefined, lanes: 16 },
        upstream: undefined,
      });
    } finally {
      await tree.remove();
    }
  });

  it('gives no address when the device link does not name a PCI function', async () => {
    const dir = await mkdtemp(path.join(tmpdir(), 'ibx-pcie-'));
    try {
      await mkdir(path.join(dir, 'devices/platform/soc-ib'), { recursive: true });
      await writeFile(path.join(dir, 'devices/platform/soc-ib/current_link_speed'), '8.0 GT/s PCIe\n');
      await mkdir(path.join(dir, 'class/infiniband/hns_0'), { recursive: true });
      await symlink('../../../devices/platform/soc-ib', path.join(dir, 'class/infiniband/hns_0/device'));
      expect(readPcieLink(new SysfsFiles(dir), 'hns_0').pcie).toMatchObject({ address: undefined, current: { gtps: 8 } });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
