// The topology built from a discovery, and the pure facts derived from it.
import { describe, expect, it } from 'vitest';
import { inShard } from '../../src/model/fabric.js';
import { parseDiscoveryCache } from '../../src/sources/fabric/discovery-cache.js';
import { buildTopology, nodesByPortGuid } from '../../src/sources/fabric/discovery.js';
import { parseIbnetdiscover } from '../../src/sources/fabric/ibnetdiscover.js';
import { HOST11, LEAF1, LEAF3, SPINE1, recordedCache, stdout } from '../support/fabric-recordings.js';

const text = stdout('healthy', 'ibnetdiscover');

describe('topology', () => {
  const topology = buildTopology(parseIbnetdiscover(text), parseDiscoveryCache(recordedCache()), new Map([[SPINE1, 'spine-1']]), 1000);

  it('holds every node with its name, and every switch port, cabled or not, with what it enables', () => {
    expect(topology.nodes.size).toBe(14);
    expect(topology.nodes.get(SPINE1)).toMatchObject({ name: 'spine-1', lid: 2, portCount: 4 });
    expect(topology.nodes.get(HOST11)).toMatchObject({ name: undefined, lid: 1 });
    expect(topology.ports.get(`${LEAF3}/8`)).toEqual({
      nodeGuid: LEAF3,
      port: 8,
      portGuid: LEAF3,
      lid: undefined,
      peer: undefined,
      enabled: { widthEnabled: [1, 4], speedEnabled: ['SDR', 'DDR', 'QDR'] },
    });
    expect(topology.ports.get(`${LEAF1}/1`)).toMatchObject({ portGuid: LEAF1, peer: { nodeGuid: HOST11, port: 1 } });
    expect(topology.ports.get(`${HOST11}/1`)).toMatchObject({ portGuid: '0x0002c90300a10011', lid: 1, peer: { nodeGuid: LEAF1, port: 1 } });
    expect(topology).toMatchObject({ duplicateGuids: 0, duplicateLids: 0, discoveredAt: 1000 });
    expect(nodesByPortGuid(topology).get('0x0002c90300a10011')).toBe(HOST11);
  });

  it('without a usable cache: the cabled ports only, enabled rates unknown', () => {
    const bare = buildTopology(parseIbnetdiscover(text), undefined, new Map(), 1000);
    expect(bare.nodes.size).toBe(14);
    expect(bare.ports.get(`${LEAF3}/8`)).toBeUndefined();
    expect(bare.ports.get(`${LEAF1}/1`)?.enabled).toBeUndefined();
  });

  it('counts a LID held by two ports, and two ports claiming the same far end', () => {
    // host 13 answering at host 11's LID
    const lids = buildTopology(parseIbnetdiscover(text.replace(/lid 12 lmc 0/, 'lid 1 lmc 0')), undefined, new Map(), 0);
    expect(lids.duplicateLids).toBe(1);
    // leaf-1 port 3 reaching host 11 (a second device with its GUID) as port 1 does
    const claims = buildTopology(
      parseIbnetdiscover(text.replace('[3]\t"H-0002c90300a10030"[1](2c90300a10031)', '[3]\t"H-0002c90300a10010"[1](2c90300a10011)')),
      undefined,
      new Map(),
      0,
    );
    expect(claims.duplicateGuids).toBe(1);
  });
});

describe('shards', () => {
  const guids = Array.from({ length: 600 }, (_, i) => `0x${(0x0002c90200100000 + i * 0x10000).toString(16).padStart(16, '0')}`);

  it('put every node in exactly one shard, spread evenly, the same way on every run', () => {
    for (const count of [1, 2, 3, 7]) {
      const sizes = Array.from({ length: count }, (_, i) => guids.filter((guid) => inShard(guid, { index: i + 1, count })).length);
      expect(sizes.reduce((a, b) => a + b)).toBe(guids.length);
      for (const size of sizes) expect(size).toBeGreaterThan((guids.length / count) * 0.8);
    }
    // FNV-1a (32-bit) of the GUID text, checked against an independent computation: 0xa5c7dedb,
    // 0xe1cbc741, 0x8212d86e, 0xd4b09191. Fixed values, so shards never move between versions.
    expect([LEAF1, LEAF3, SPINE1, HOST11].map((guid) => [1, 2].find((index) => inShard(guid, { index, count: 2 })))).toEqual([2, 2, 1, 2]);
  });
});
