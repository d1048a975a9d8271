/**
 * Failpoints: named places where a test can make the daemon die on the spot (SIGKILL to itself),
 * to prove what survives a crash between two durable writes (docs/reliability.md#failpoints, kill -9
 * at each point), or hang there (`hangpoint`). Armed only by `SPAR_FAILPOINTS=name[,name...]` in the daemon's environment, read once
 * at startup; unarmed, a failpoint is one set lookup.
 */
const armed = new Set(
  (process.env.SPAR_FAILPOINTS ?? "")
    .split(",")
    .map((name) => name.trim())
    .filter((name) => name !== ""),
);

export function failpoint(name: string): void {
  if (armed.has(name)) process.kill(process.pid, "SIGKILL");
}

/**
 * A failpoint that hangs instead: resolves at once unless `name` is armed, then never (a test makes
 * a step of the daemon's unwind hang, e.g. to prove the teardown watchdog fires).
 */
export function hangpoint(name: string): Promise<void> {
  return armed.has(name) ? new Promise<void>(() => {}) : Promise.resolve();
}
