/**
 * Failpoints: named places where a test can make the daemon die on the spot (SIGKILL to itself),
 * to prove what survives a crash between two durable writes (RELIABILITY.md, kill -9 at each
 * point). Armed only by `SPAR_FAILPOINTS=name[,name...]` in the daemon's environment, read once
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
