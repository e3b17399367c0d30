// A tree full of things that are not sysfs attributes: every one is a read error for that file
// only, nothing blocks, and the rest of the host is still read.
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseServeCommandLine as parseCommandLine } from '../../src/commands/serve/command-line.js';
import { Exporter } from '../../src/commands/serve/exporter.js';
import { NO_DEVICE_FILTER } from '../../src/sources/device-filter.js';
import { readInfinibandClass } from '../../src/sources/infiniband.js';
import { readIpoib } from '../../src/sources/ipoib.js';
import { SysfsFiles } from '../../src/sources/sysfs-files.js';
import { copyTree, ZOO, type TempTree } from '../support/trees.js';

let tree: TempTree;
let servers: net.Server[] = [];

beforeEach(async () => {
  tree = await copyTree(ZOO);
});
afterEach(async () => {
  for (const server of servers) server.close();
  servers = [];
  await tree.remove();
});

const ib = (relative: string) => path.join(tree.root, 'class/infiniband', relative);

async function replaceWithFifo(file: string): Promise<void> {
  await rm(file);
  execFileSync('mkfifo', [file]);
}

async function replaceWithSocket(file: string): Promise<void> {
  await rm(file);
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(file, resolve));
  servers.push(server);
}

describe('hostile sysfs trees', () => {
  it('skips a FIFO, directory, socket, empty file, garbage and a 2 MB file, each as one read error', async () => {
    await replaceWithFifo(ib('mlx5_0/ports/1/state'));
    await rm(ib('mlx5_0/ports/1/rate'));
    await mkdir(ib('mlx5_0/ports/1/rate'));
    await replaceWithSocket(ib('mlx5_0/ports/1/counters/symbol_error'));
    await writeFile(ib('mlx5_3/ports/1/phys_state'), '');
    await writeFile(ib('mlx5_3/ports/1/lid'), 'garbage\n');
    await writeFile(ib('mlx5_3/ports/1/counters/port_rcv_errors'), '12 apples\n');
    await writeFile(ib('mlx5_4/ports/1/rate'), Buffer.alloc(2 * 1024 * 1024, 0x41));
    // Invalid UTF-8 in a label value must come out as valid text, not break the exposition.
    await writeFile(ib('mlx5_4/node_desc'), Buffer.from([0x68, 0x6f, 0x73, 0x74, 0xff, 0xfe, 0x0a]));

    const reading = await readInfinibandClass(new SysfsFiles(tree.root), NO_DEVICE_FILTER);
    const errors = Object.fromEntries(reading.errors.map((e) => [e.item.replace('class/infiniband/', ''), e.message]));
    expect(Object.keys(errors).sort()).toEqual([
      'mlx5_0/ports/1/counters/symbol_error',
      'mlx5_0/ports/1/rate',
      'mlx5_0/ports/1/state',
      'mlx5_3/ports/1/counters/port_rcv_errors',
      'mlx5_3/ports/1/lid',
      'mlx5_3/ports/1/phys_state',
      'mlx5_4/ports/1/rate',
    ]);
    expect(errors['mlx5_0/ports/1/state']).toMatch(/FIFO/);
    expect(errors['mlx5_0/ports/1/rate']).toMatch(/directory/);
    expect(errors['mlx5_0/ports/1/counters/symbol_error']).toMatch(/socket/);
    expect(errors['mlx5_3/ports/1/lid']).toMatch(/"garbage"/);
    expect(errors['mlx5_4/ports/1/rate']).toMatch(/larger than/);

    // Everything else on the same ports is still there.
    const mlx50 = reading.devices.find((d) => d.name === 'mlx5_0')!.ports[0]!;
    expect(mlx50.state).toBeUndefined();
    expect(mlx50.physicalState).toEqual({ id: 5, name: 'LinkUp' });
    expect(mlx50.counters.find((c) => c.name === 'symbol_errors')).toBeUndefined();
    expect(mlx50.counters.find((c) => c.name === 'link_error_recoveries')?.value).toBe(1);
    expect(reading.devices).toHaveLength(13);
    expect(reading.devices.find((d) => d.name === 'mlx5_4')!.nodeDesc).toBe('host\ufffd\ufffd');
  });

  it('treats a FIFO or directory where an IPoIB file should be as an error of that interface only', async () => {
    const net0 = path.join(tree.root, 'class/net/ib0');
    await replaceWithFifo(path.join(net0, 'mode'));
    await rm(path.join(net0, 'mtu'));
    await mkdir(path.join(net0, 'mtu'));
    const files = new SysfsFiles(tree.root);
    const { devices } = await readInfinibandClass(files, NO_DEVICE_FILTER);
    const reading = await readIpoib(files, devices);
    expect(reading.errors.map((e) => e.item).sort()).toEqual(['class/net/ib0/mode', 'class/net/ib0/mtu']);
    expect(reading.interfaces.find((i) => i.name === 'ib0')).toMatchObject({
      mode: undefined,
      mtu: undefined,
      device: 'mlx5_0',
      carrier: 1,
    });
    expect(reading.interfaces).toHaveLength(5);
  });

  it('drops a device that vanishes between listing and reading, without an error', async () => {
    const files = new SysfsFiles(tree.root);
    const list = files.list.bind(files);
    files.list = (relative, options) => {
      const result = list(relative, options);
      // Hot-unplug mlx5_3 right after the class directory was listed.
      if (relative === 'class/infiniband') rmSync(ib('mlx5_3'), { recursive: true, force: true });
      return result;
    };
    const reading = await readInfinibandClass(files, NO_DEVICE_FILTER);
    expect(reading.devices.map((d) => d.name)).not.toContain('mlx5_3');
    expect(reading.devices).toHaveLength(12);
    expect(reading.errors).toEqual([]);
  });

  it('never reads an excluded device, however broken it is', async () => {
    await replaceWithFifo(ib('mlx5_5/ports/1/state'));
    await writeFile(ib('mlx5_5/ports/1/rate'), 'garbage');
    const reading = await readInfinibandClass(new SysfsFiles(tree.root), { include: undefined, exclude: /^mlx5_5$/ });
    expect(reading.errors).toEqual([]);
    expect(reading.devices.map((d) => d.name)).not.toContain('mlx5_5');
  });

  it('serves a complete scrape quickly with a FIFO in the tree', async () => {
    await replaceWithFifo(ib('mlx5_2/ports/1/counters/port_xmit_wait'));
    await replaceWithFifo(path.join(tree.root, 'class/net/ib2/carrier'));
    const command = parseCommandLine(['--path.sysfs', tree.root, '--no-collector.diag', '--web.disable-exporter-metrics']);
    if (command.action !== 'run') throw new Error('unexpected');
    const exporter = new Exporter({ settings: command.settings, logger: pino({ level: 'silent' }), runners: { module: 'not-installed' } });
    try {
      await exporter.collectOnce();
      const response = await exporter.app.inject({ url: '/metrics' });
      expect(response.statusCode).toBe(200);
      expect(response.body).toContain('infiniband_exporter_read_errors_total{collector="sysfs"} 1');
      expect(response.body).toContain('infiniband_port_state_id{device="mlx5_2",port="1"} 2');
      expect(response.body).toContain('infiniband_ipoib_carrier{interface="ib2"} 0');
      expect(response.body).not.toContain('infiniband_port_transmit_wait_total{device="mlx5_2"');
    } finally {
      await exporter.stop();
    }
  });
});
