// How often the event loop turned while some work ran: a setImmediate callback that schedules
// itself again runs once per turn, and not at all while the loop is held.

/** Starts counting turns now; `stop()` ends the count and returns it. */
export function countTurns(): { stop: () => number } {
  let turns = 0;
  let counting = true;
  const count = (): void => {
    if (!counting) return;
    turns += 1;
    setImmediate(count);
  };
  setImmediate(count);
  return {
    stop: () => {
      counting = false;
      return turns;
    },
  };
}
