// `perfquery -c` (PortSamplesControl): the Tick of a device that answers, the failure of one that does not.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parsePortSamplesControl } from '../../src/sources/diag/port-samples-control.js';

const fixture = (name: string): string => readFileSync(new URL(`../fixtures/port-samples-control/${name}`, import.meta.url), 'utf8');

describe('parsePortSamplesControl', () => {
  it.each([
    ['quantum-tick-7.txt', { tick: 7 }],
    ['switch-ib-tick-31.txt', { tick: 31 }],
    // ibsim does not implement the attribute: perfquery's own error.
    ['sampctlquery-failed.txt', { failure: 'sampctlquery' }],
  ])('%s', (name, expected) => {
    expect(parsePortSamplesControl(fixture(name))).toEqual(expected);
  });

  it.each([
    ['', 'no PortSamplesControl in the output'],
    ['# Port counters: Lid 1 port 1 (CapMask: 0x1400)\nPortSelect:......................1\n', 'no PortSamplesControl in the output'],
    ['# PortSamplesControl: Lid 1 port 1\nTick:............................0x100\n', 'no Tick field of 0-255 in PortSamplesControl'],
    ['# PortSamplesControl: Lid 1 port 1\nTick:............................seven\n', 'no Tick field of 0-255 in PortSamplesControl'],
    ['# PortSamplesControl: Lid 1 port 1\nOpCode:..........................0xff\n', 'no Tick field of 0-255 in PortSamplesControl'],
  ])('no tick in %j', (text, failure) => {
    expect(parsePortSamplesControl(text)).toEqual({ failure });
  });

  it('reads a decimal Tick too', () => {
    expect(parsePortSamplesControl('# PortSamplesControl: Lid 1 port 1\nTick:............................12\n')).toEqual({ tick: 12 });
  });
});
