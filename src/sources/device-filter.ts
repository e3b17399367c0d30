// --device.include / --device.exclude: regular expressions on device names, applied before a
// device's files are read, so an excluded device costs nothing (and cannot fail the cycle).

export interface DeviceFilter {
  include: RegExp | undefined;
  exclude: RegExp | undefined;
}

export const NO_DEVICE_FILTER: DeviceFilter = { include: undefined, exclude: undefined };

export function deviceSelected(name: string, filter: DeviceFilter): boolean {
  if (filter.include && !filter.include.test(name)) return false;
  if (filter.exclude?.test(name)) return false;
  return true;
}
