/**
 * The typed attach client for tests: Eden's treaty on the attach app's own type, so a route or
 * schema change breaks the test's types before it breaks the wire. Paths follow the route
 * parameters: `client.sessions({ p1: "default" }).inject.post({ message })`.
 */
import { treaty } from "@elysiajs/eden";
import type { AttachApp } from "../../src/surfaces/attach/attach-server.ts";

export function attachClient(baseUrl: string, headers: Record<string, string> = {}) {
  return treaty<AttachApp>(baseUrl, { headers });
}
