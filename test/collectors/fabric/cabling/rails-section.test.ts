// fabric.rails in the config file: checked against the section's JSON Schema, each mistake one line
// naming the file and line.
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../../src/config/config-file.js';
import { FABRIC_RAILS_SECTION } from '../../../../src/collectors/fabric/cabling/rails-section.js';
import type { RailRule } from '../../../../src/model/cabling.js';

function rails(text: string): readonly RailRule[] {
  return (
    (parseConfigText(text, 'exporter.yml', [], [FABRIC_RAILS_SECTION]).sections.get(FABRIC_RAILS_SECTION) as
      | readonly RailRule[]
      | undefined) ?? []
  );
}

const CONFIG = `fabric:
  rails:
    - name: rail0
      leaves: ["rail0-*"]
      adapter: mlx5_0
    - name: rail1
      leaves: rail1-*
      adapter: "* mlx5_1"
    - leaves: ["MF0;rail2-*"]
      adapter: mlx5_2
`;

describe('fabric.rails in the config file', () => {
  it('reads names, one glob or a list of them, and adapters', () => {
    expect(rails(CONFIG)).toEqual([
      { name: 'rail0', leaves: ['rail0-*'], adapter: 'mlx5_0' },
      { name: 'rail1', leaves: ['rail1-*'], adapter: '* mlx5_1' },
      { name: 'rail 3', leaves: ['MF0;rail2-*'], adapter: 'mlx5_2' },
    ]);
    expect(rails('fabric:\n  rails:\n')).toEqual([]);
  });

  it.each([
    ['fabric:\n  rails: mlx5_0\n', 'config file exporter.yml:2: "fabric.rails" must be a list of {name, leaves, adapter}, got "mlx5_0"'],
    ['fabric:\n  rails:\n    - mlx5_0\n', 'config file exporter.yml:3: each rail must be a mapping with leaves and adapter, got "mlx5_0"'],
    [
      'fabric:\n  rails:\n    - leaves: [a]\n      adapter: mlx5_0\n      port: 1\n',
      'config file exporter.yml:5: unknown key "port" in a rail, expected one of: name, leaves, adapter',
    ],
    [
      'fabric:\n  rails:\n    - name: r\n      adapter: mlx5_0\n',
      'config file exporter.yml:3: rail "r" needs "leaves" (globs on its switches\' names)',
    ],
    [
      'fabric:\n  rails:\n    - name: r\n      leaves: []\n      adapter: mlx5_0\n',
      'config file exporter.yml:4: "leaves" must be a glob or a list of globs on switch names such as ["rail0-leaf*"], got a list',
    ],
    [
      'fabric:\n  rails:\n    - leaves: [a]\n',
      'config file exporter.yml:3: rail "rail 1" needs "adapter" (the device name of its host adapter, such as mlx5_0)',
    ],
    [
      'fabric:\n  rails:\n    - leaves: [a]\n      adapter: 3\n',
      'config file exporter.yml:4: "adapter" must be a device name such as mlx5_0, or a glob on the adapter\'s NodeDescription such as "* HCA-1", got 3',
    ],
    [
      'fabric:\n  rails:\n    - {name: r, leaves: [a], adapter: x}\n    - {name: r, leaves: [b], adapter: y}\n',
      'config file exporter.yml:4: rail "r" is named twice: expected one entry per rail',
    ],
  ])('refuses %j', (text, message) => {
    expect(() => rails(text)).toThrow(message);
  });
});
