// First-generation ConnectX adapters of PCI revision A0 cannot do TCP segmentation offload (TSO)
// although older kernels advertised it: with TSO on, large TCP sends over IPoIB leave the adapter
// as corrupt IP fragments. Evidence, and how sure it is:
// - The oVirt InfiniBand write-up ("Mellanox TSO bug") reports the corrupt fragments and the fix
//   (`ethtool -K ib0 tso off`, made permanent) on a "MT25418 [ConnectX VPI … IB DDR] (rev a0)".
// - The mainline mlx4_ib driver defines MLX4_IB_CARD_REV_A0 = 0xA0 and since about 2014 advertises
//   UD TSO (which IPoIB needs before it offers TSO) only when the PCI revision is not 0xA0; the
//   2008–2013 driver had no such test. So the bug bites on kernels of that era (RHEL 6 and other
//   long-lived enterprise kernels unless patched) and any mlx4 device of revision A0 (certain: it
//   is the driver's own test); the A0 parts seen in the field are first-generation ConnectX
//   (MT25408/25418/26418/26428…; the ConnectX-2 of the same IDs is revision b0).
// - mlx4 prints `hw_rev` as the PCI revision in hex ("%x"): `a0`, which `ibstat` shows as
//   "Hardware version: a0". mthca (InfiniHost) prints its revision the same way but is not mlx4
//   and has no UD TSO at all, hence the driver test below.

/**
 * PCI device ids of the mlx4 driver's table, as `hca_type` prints them (mlx4 writes "MT%d" of the
 * PCI device id in decimal, so 0x673c is MT26428): ConnectX and ConnectX-2 (0x6340–0x6778),
 * ConnectX-3/-3 Pro and their virtual functions (0x1002–0x1010).
 */
const MLX4_HCA_TYPES: ReadonlySet<string> = new Set(
  [
    ...[0x6340, 0x634a, 0x6354, 0x6732, 0x673c, 0x6368, 0x6750, 0x6372, 0x675a, 0x6764, 0x6746, 0x676e, 0x6778],
    ...Array.from({ length: 0x1010 - 0x1002 + 1 }, (_, i) => 0x1002 + i),
  ].map((id) => `MT${id}`),
);

/** What sysfs says about an adapter: its kernel name and the `hca_type` and `hw_rev` files. */
export interface AdapterIdentity {
  name: string;
  hcaType: string | undefined;
  hwRev: string | undefined;
}

/** Whether the adapter is driven by mlx4: by its hca_type, or by its kernel name when hca_type is absent. */
function isMlx4(device: AdapterIdentity): boolean {
  if (device.hcaType !== undefined && device.hcaType !== '') return MLX4_HCA_TYPES.has(device.hcaType.toUpperCase());
  return /^mlx4_\d+$/.test(device.name);
}

/** The adapter is an mlx4 ConnectX of revision A0: its IPoIB interfaces must run with TSO off. */
export function hasTsoErratum(device: AdapterIdentity): boolean {
  return device.hwRev?.trim().toLowerCase() === 'a0' && isMlx4(device);
}
