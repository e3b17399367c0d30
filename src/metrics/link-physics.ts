// The metrics of "Link physics" (DESIGN.md): each adapter's PCIe link, and each port's cable and
// optical module. Specs for the catalog, and functions that write a collector's readings into an
// exposition buffer, byte for byte as prom-client would render them (test/physics/metrics.test.ts
// checks it against prom-client). The bit error rate itself is a recording rule
// (rules/infiniband-alerts.yml): it needs rates, which one snapshot cannot give.
import {
  AER_SEVERITIES,
  PCIE_DEGRADATION_REASONS,
  pcieBandwidthBytesPerSecond,
  pcieDegradation,
  type PcieLimit,
  type PcieReading,
} from '../infiniband/pcie.js';
import { PHY_BER_KINDS, THRESHOLD_LEVELS, MODULE_MEASURES, type ModuleReading } from '../infiniband/optical-module.js';
import type { MetricSpec } from './catalog.js';
import type { ExpositionBuffer } from './exposition-buffer.js';
import { Samples } from './render.js';

function gauge(name: string, labels: readonly string[], help: string): MetricSpec {
  return { name, type: 'gauge', labels, help };
}

const DEVICE = ['device'] as const;
const PORT = ['device', 'port'] as const;

/** The PCIe link of each adapter's PCI function (collector `pcie`), and what it means for its ports. */
export const PCIE_METRICS = {
  widthLanes: gauge('infiniband_device_pcie_link_width_lanes', DEVICE,
    'Lanes the adapter\'s PCIe link trained at (sysfs current_link_width). Below infiniband_device_pcie_link_width_max_lanes: a wrong slot, a riser or BIOS bifurcation halves what the adapter can move.'),
  widthMaxLanes: gauge('infiniband_device_pcie_link_width_max_lanes', DEVICE, 'Lanes the adapter\'s PCIe interface can use (sysfs max_link_width).'),
  transferRate: gauge('infiniband_device_pcie_link_transfer_rate', DEVICE,
    'Rate per lane the adapter\'s PCIe link trained at, in GT/s (2.5 Gen1, 5 Gen2, 8 Gen3, 16 Gen4, 32 Gen5, 64 Gen6; sysfs current_link_speed).'),
  maxTransferRate: gauge('infiniband_device_pcie_link_max_transfer_rate', DEVICE, 'Highest rate per lane the adapter\'s PCIe interface can run, in GT/s (sysfs max_link_speed).'),
  bandwidth: gauge('infiniband_device_pcie_bandwidth_bytes_per_second', DEVICE,
    'Usable bandwidth of the adapter\'s PCIe link in each direction, after line coding (8b/10b Gen1-2, 128b/130b Gen3-5, FLIT Gen6): lanes x GT/s x coding / 8. Everything its InfiniBand ports carry crosses it.'),
  degraded: gauge('infiniband_device_pcie_link_degraded', [...DEVICE, 'reason'],
    '1 when the adapter\'s PCIe link trained below what the adapter can do: reason="width" (fewer lanes) or "speed" (a lower generation); 0 when not. Absent where sysfs does not tell.'),
  aerErrors: { name: 'infiniband_device_pcie_aer_errors_total', type: 'counter', labels: [...DEVICE, 'severity'],
    help: 'PCIe errors the adapter reported by Advanced Error Reporting since boot (sysfs aer_dev_*, TOTAL_ERR_* lines): severity="correctable" (the link retried; a steady rise means a marginal slot, riser or card), "nonfatal", "fatal". Absent without AER statistics.' } as MetricSpec,
  portLimited: gauge('infiniband_port_pcie_limited', PORT,
    '1 when this active port\'s adapter has less PCIe bandwidth than the data rates of its active ports add up to: the host cannot feed the link at its rate. 0 when it can. Present for active ports of adapters with a known PCIe link.'),
} as const;

/** The cable and module of each port (collector `module`, mstlink or mlxlink). */
export const MODULE_METRICS = {
  info: gauge('infiniband_port_module_info', [...PORT, 'vendor', 'part_number', 'serial', 'cable_type', 'length_meters'],
    'The cable or transceiver in the port, from its EEPROM (value always 1): vendor, part number, serial number, cable type (passive copper, active copper, optical) and length in metres (empty when unknown). Absent for an empty cage.'),
  temperature: gauge('infiniband_port_module_temperature_celsius', PORT,
    'Temperature the module reports. Compare with infiniband_port_module_threshold{measure="temperature"}: a module at its own high threshold drifts out of spec. Absent for cables without a sensor (passive copper).'),
  voltage: gauge('infiniband_port_module_voltage_volts', PORT, 'Supply voltage the module reports. Absent for cables without a sensor.'),
  rxPower: gauge('infiniband_port_module_rx_power_dbm', [...PORT, 'lane'],
    'Optical power the module receives on each lane, in dBm (0 dBm = 1 mW; -40 means no light). At or below infiniband_port_module_threshold{measure="rx_power",level=~"low_.*"}: a dirty connector or fibre, or a failing transmitter at the other end. Absent for copper.'),
  txPower: gauge('infiniband_port_module_tx_power_dbm', [...PORT, 'lane'], 'Optical power the module transmits on each lane, in dBm. Absent for copper.'),
  txBias: gauge('infiniband_port_module_tx_bias_amperes', [...PORT, 'lane'], 'Laser bias current of each lane of the module: rising bias at steady power is an ageing laser. Absent for copper.'),
  threshold: gauge('infiniband_port_module_threshold', [...PORT, 'measure', 'level'],
    'Thresholds the module stores in its own EEPROM, in the unit of each measure (temperature C, voltage V, rx_power/tx_power dBm, tx_bias A): level high_alarm, high_warning, low_warning, low_alarm as the tool reports them (mstlink -m gives the alarm levels). Absent when the module reports none.'),
  phyBer: gauge('infiniband_port_phy_ber', [...PORT, 'kind'],
    'Bit error rate the adapter\'s PHY computed since its counters were last cleared: kind="raw" before forward error correction (high by design on HDR/NDR), "effective" after it, "symbol" after FEC and the link layer (what the SymbolErrorCounter counts). Absent while the link is down.'),
  linkDownReason: gauge('infiniband_port_link_down_reason_info', [...PORT, 'reason'],
    'Why the firmware says the link is not healthy (value always 1): its troubleshooting recommendation, e.g. a cable that was unplugged or a peer that did not answer. Present only while that status is not "No issue was observed".'),
} as const;

export const PCIE_ORDER: readonly MetricSpec[] = Object.values(PCIE_METRICS);
export const MODULE_ORDER: readonly MetricSpec[] = Object.values(MODULE_METRICS);
/** Every metric of link physics, for the catalog and the README's metric table. */
export const LINK_PHYSICS_METRICS: readonly MetricSpec[] = [...PCIE_ORDER, ...MODULE_ORDER];

const bit = (flag: boolean): number => (flag ? 1 : 0);

/** The samples of the `pcie` collector: one reading per device that has a PCIe link, the ports' limits. */
export function pcieSamples(readings: readonly PcieReading[], limits: readonly PcieLimit[]): Samples {
  const samples = new Samples();
  const M = PCIE_METRICS;
  // Family by family: a family's samples are contiguous in the text.
  for (const r of readings) samples.add(M.widthLanes, { device: r.device }, r.current.lanes);
  for (const r of readings) samples.add(M.widthMaxLanes, { device: r.device }, r.max.lanes);
  for (const r of readings) samples.add(M.transferRate, { device: r.device }, r.current.gtps);
  for (const r of readings) samples.add(M.maxTransferRate, { device: r.device }, r.max.gtps);
  for (const r of readings) samples.add(M.bandwidth, { device: r.device }, pcieBandwidthBytesPerSecond(r.current));
  for (const r of readings) {
    const degradation = pcieDegradation(r);
    for (const reason of PCIE_DEGRADATION_REASONS) {
      const degraded = degradation[reason];
      if (degraded !== undefined) samples.add(M.degraded, { device: r.device, reason }, bit(degraded));
    }
  }
  for (const r of readings) for (const severity of AER_SEVERITIES) samples.add(M.aerErrors, { device: r.device, severity }, r.aer[severity]);
  for (const limit of limits) samples.add(M.portLimited, { device: limit.device, port: String(limit.port) }, bit(limit.limited));
  return samples;
}

/** The samples of the `module` collector: one reading per port the tool answered for. */
export function moduleSamples(readings: readonly ModuleReading[]): Samples {
  const samples = new Samples();
  const M = MODULE_METRICS;
  const id = (r: ModuleReading) => ({ device: r.device, port: String(r.port) });
  for (const r of readings) {
    const identity = r.identity;
    if (!identity) continue;
    samples.add(M.info, {
      ...id(r),
      vendor: identity.vendor ?? '',
      part_number: identity.partNumber ?? '',
      serial: identity.serial ?? '',
      cable_type: identity.cableType ?? '',
      length_meters: identity.lengthMeters === undefined ? '' : String(identity.lengthMeters),
    }, 1);
  }
  for (const r of readings) samples.add(M.temperature, id(r), r.temperatureCelsius);
  for (const r of readings) samples.add(M.voltage, id(r), r.voltageVolts);
  const lanes = (spec: MetricSpec, values: (r: ModuleReading) => readonly number[]) => {
    for (const r of readings) values(r).forEach((value, i) => samples.add(spec, { ...id(r), lane: String(i + 1) }, value));
  };
  lanes(M.rxPower, (r) => r.rxPowerDbm);
  lanes(M.txPower, (r) => r.txPowerDbm);
  lanes(M.txBias, (r) => r.txBiasAmperes);
  for (const r of readings) {
    for (const measure of MODULE_MEASURES) {
      for (const level of THRESHOLD_LEVELS) samples.add(M.threshold, { ...id(r), measure, level }, r.thresholds[measure]?.[level]);
    }
  }
  for (const r of readings) for (const kind of PHY_BER_KINDS) samples.add(M.phyBer, { ...id(r), kind }, r.ber[kind]);
  for (const r of readings) if (r.linkDownReason) samples.add(M.linkDownReason, { ...id(r), reason: r.linkDownReason.reason }, 1);
  return samples;
}

/** Write the `pcie` collector's families into `out` (the collector's part of /metrics). */
export function writePcieMetrics(readings: readonly PcieReading[], limits: readonly PcieLimit[], out: ExpositionBuffer): void {
  pcieSamples(readings, limits).writeTo(PCIE_ORDER, out);
}

/** Write the `module` collector's families into `out`. */
export function writeModuleMetrics(readings: readonly ModuleReading[], out: ExpositionBuffer): void {
  moduleSamples(readings).writeTo(MODULE_ORDER, out);
}
