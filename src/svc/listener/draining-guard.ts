/**
 * The draining guard of svc's main listener: from SIGTERM on, every write (POST /inject, /resume,
 * /abort, a guardrail reset) is refused 503 with `Retry-After` and a JSON `{error}` instead of
 * queuing behind the turns still finishing; reads (`/metrics`, `/healthz`) are still served. Runs
 * after the shared guards (an unauthenticated caller learns nothing) and before routing.
 */
import { Elysia } from "elysia";

/** Reads pass while the daemon drains. */
const READS = new Set(["GET", "HEAD", "OPTIONS"]);

/** `refuseWhileDraining` throws the 503 (SparError `shutting_down`) while the daemon drains. */
export function drainingGuard(refuseWhileDraining: () => void) {
  return new Elysia({ name: "svc.draining-guard" }).onRequest(({ request }) => {
    if (!READS.has(request.method)) refuseWhileDraining();
  });
}
