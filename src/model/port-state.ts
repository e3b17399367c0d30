// Logical and physical port states as the kernel numbers them (drivers/infiniband/core/sysfs.c).

/** Logical port states, in kernel order: the index is the id printed in `ports/<n>/state`. */
export const PORT_STATES = ['NOP', 'DOWN', 'INIT', 'ARMED', 'ACTIVE', 'ACTIVE_DEFER'] as const;
export type PortStateName = (typeof PORT_STATES)[number];

/** Physical states, ids 1–7; the kernel prints `7: Phy Test` with a space, exported as `PhyTest`. */
export const PHYSICAL_STATES = [
  'Sleep',
  'Polling',
  'Disabled',
  'PortConfigurationTraining',
  'LinkUp',
  'LinkErrorRecovery',
  'PhyTest',
] as const;
export type PhysicalStateName = (typeof PHYSICAL_STATES)[number];

export const PHYSICAL_STATE_LINK_UP = 5;
export const PORT_STATE_INIT = 2;
export const PORT_STATE_ACTIVE = 4;

export interface StateReading<Name extends string> {
  id: number;
  /** Undefined when the kernel printed an id it has no name for (`N: UNKNOWN`, `N: <unknown>`). */
  name: Name | undefined;
}

// "4: ACTIVE", "5: LinkUp", "7: Phy Test", "9: <unknown>"; tolerant of missing name and spacing.
const STATE_LINE = /^\s*(\d{1,3})\s*(?::\s*(.*?))?\s*$/;

function parseStateLine<Name extends string>(
  text: string,
  names: readonly Name[],
  idOf: (name: Name) => number,
): StateReading<Name> | undefined {
  const match = STATE_LINE.exec(text);
  if (!match) return undefined;
  const id = Number(match[1]);
  const name = names.find((candidate) => idOf(candidate) === id);
  return { id, name };
}

/** Parse `ports/<n>/state`, e.g. `4: ACTIVE`. Returns undefined for text that is not a state line. */
export function parsePortState(text: string): StateReading<PortStateName> | undefined {
  return parseStateLine(text, PORT_STATES, (name) => PORT_STATES.indexOf(name));
}

/** Parse `ports/<n>/phys_state`, e.g. `5: LinkUp`. Ids 0 and >7 read `<unknown>` and have no name. */
export function parsePhysicalState(text: string): StateReading<PhysicalStateName> | undefined {
  return parseStateLine(text, PHYSICAL_STATES, (name) => PHYSICAL_STATES.indexOf(name) + 1);
}

/** The physical link carries signal: width and speed are meaningful only then (IBA C14-24.2.1). */
export function physicalLinkIsUp(physicalStateId: number | undefined): boolean {
  return physicalStateId === PHYSICAL_STATE_LINK_UP || physicalStateId === 6;
}

// libibmad's names (infiniband-diags: iblinkinfo, smpquery), indexed by the same numbers; an
// unnamed number prints as `?(N)`.
const MAD_PORT_STATES = ['NoChange', 'Down', 'Initialize', 'Armed', 'Active'];
const MAD_PHYSICAL_STATES = [
  'NoChange',
  'Sleep',
  'Polling',
  'Disabled',
  'PortConfigurationTraining',
  'LinkUp',
  'LinkErrorRecovery',
  'PhyTest',
];

function madStateId(text: string, names: readonly string[]): number | undefined {
  const index = names.indexOf(text.trim());
  if (index >= 0) return index;
  const unnamed = /^\?\((\d{1,2})\)$/.exec(text.trim());
  return unnamed ? Number(unnamed[1]) : undefined;
}

/** A PortState as libibmad prints it (`Active`, `Initialize`, `?(5)`), in kernel numbering. */
export function portStateFromMadText(text: string): StateReading<PortStateName> | undefined {
  const id = madStateId(text, MAD_PORT_STATES);
  return id === undefined ? undefined : { id, name: PORT_STATES[id] };
}

/** A PortPhysicalState as libibmad prints it (`LinkUp`, `Polling`), in kernel numbering. */
export function physicalStateFromMadText(text: string): StateReading<PhysicalStateName> | undefined {
  const id = madStateId(text, MAD_PHYSICAL_STATES);
  return id === undefined ? undefined : { id, name: id >= 1 ? PHYSICAL_STATES[id - 1] : undefined };
}
