// Synthetic sysfs trees of N devices (1–2 ports each, full PMA counters, mlx5 hw_counters, one
// IPoIB interface per port), in the kernel's formats, for scale tests and benchmarks.
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { PMA_COUNTERS } from '../src/model/pma-counters.js';

const HW_COUNTERS = [
  'rx_write_requests',
  'rx_read_requests',
  'rx_atomic_requests',
  'rx_dct_connect',
  'out_of_buffer',
  'out_of_sequence',
  'duplicate_request',
  'rnr_nak_retry_err',
  'packet_seq_err',
  'implied_nak_seq_err',
  'local_ack_timeout_err',
  'resp_local_length_error',
  'resp_cqe_error',
  'req_cqe_error',
  'req_remote_invalid_request',
  'req_remote_access_errors',
  'resp_remote_access_errors',
  'resp_cqe_flush_error',
  'req_cqe_flush_error',
];

function guid(n: number): string {
  const hex = (0xa088c20300000000n + BigInt(n)).toString(16).padStart(16, '0');
  return hex.match(/.{4}/g)!.join(':');
}

async function file(root: string, relative: string, content: string): Promise<void> {
  const full = path.join(root, relative);
  await mkdir(path.dirname(full), { recursive: true });
  await writeFile(full, `${content}\n`);
}

export interface TreeOptions {
  /**
   * Also a umad device per port (class/infiniband_mad/umad<N>, as ib_umad makes them), without
   * which the diag collector does not query a port. Off by default: the benchmark's hosts, like a
   * host without ib_umad, have none.
   */
  umad?: boolean;
}

/** Write a tree of `devices` HCAs under `root` (which becomes the sysfs root). */
export async function generateTree(root: string, devices: number, portsPerDevice: 1 | 2 = 2, options: TreeOptions = {}): Promise<void> {
  let netIndex = 0;
  let umadIndex = 0;
  for (let d = 0; d < devices; d++) {
    const name = `mlx5_${d}`;
    const pci = `devices/pci0000:00/0000:${(d + 1).toString(16).padStart(2, '0')}:00.0`;
    const dev = `class/infiniband/${name}`;
    await mkdir(path.join(root, pci), { recursive: true });
    await mkdir(path.join(root, dev), { recursive: true });
    await symlink(path.relative(path.join(root, dev), path.join(root, pci)), path.join(root, dev, 'device'));
    const files: [string, string][] = [
      ['node_type', '1: CA'],
      ['node_guid', guid(d * 16)],
      ['sys_image_guid', guid(d * 16)],
      ['fw_ver', '28.39.1002'],
      ['hca_type', 'MT4129'],
      ['board_id', 'MT_0000000838'],
      ['hw_rev', '0'],
      ['node_desc', `bench ${name}`],
    ];
    for (let p = 1; p <= portsPerDevice; p++) {
      const port = `ports/${p}`;
      files.push(
        [`${port}/state`, '4: ACTIVE'],
        [`${port}/phys_state`, '5: LinkUp'],
        [`${port}/rate`, '400 Gb/sec (4X NDR)'],
        [`${port}/lid`, `0x${(d * 2 + p).toString(16)}`],
        [`${port}/sm_lid`, '0x1'],
        [`${port}/sm_sl`, '0'],
        [`${port}/lid_mask_count`, '0'],
        [`${port}/cap_mask`, '0x2659e848'],
        [`${port}/link_layer`, 'InfiniBand'],
        [`${port}/gids/0`, `fe80:0000:0000:0000:${guid(d * 16 + p)}`],
        [`${port}/pkeys/0`, '0xffff'],
      );
      for (const counter of PMA_COUNTERS) files.push([`${port}/counters/${counter.file}`, String((d + 1) * 1000 + p * 17)]);
      for (const counter of HW_COUNTERS) files.push([`${port}/hw_counters/${counter}`, String(d * 31 + p)]);
      files.push([`${port}/hw_counters/lifespan`, '10']);

      if (options.umad) {
        const umad = `class/infiniband_mad/umad${umadIndex++}`;
        await file(root, `${umad}/ibdev`, name);
        await file(root, `${umad}/port`, String(p));
      }

      const ifname = `ib${netIndex++}`;
      const net = `class/net/${ifname}`;
      await mkdir(path.join(root, net), { recursive: true });
      await symlink(path.relative(path.join(root, net), path.join(root, pci)), path.join(root, net, 'device'));
      for (const [key, value] of [
        ['type', '32'],
        ['mode', 'datagram'],
        ['mtu', '4092'],
        ['carrier', '1'],
        ['pkey', '0xffff'],
        ['dev_port', String(p - 1)],
        ['dev_id', `0x${(p - 1).toString(16)}`],
      ]) {
        await file(root, `${net}/${key}`, value!);
      }
    }
    await Promise.all(files.map(([relative, content]) => file(root, `${dev}/${relative}`, content)));
  }
}
