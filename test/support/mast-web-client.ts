/**
 * The mast-web dashboard's own protocol layer (test/clients/mast-web, unmodified): its four
 * attach-core scripts evaluated in order against a `window` that is this process's global, as the
 * dashboard's index.html loads them. Tests call `AttachClient` exactly as its panels do.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT } from "./daemon.ts";

const CORE = join(REPO_ROOT, "test/clients/mast-web/web/attach-core");

/** What the tests use of the dashboard's AttachClient. */
export interface MastWebClient {
  listConfiguredSubagents(): Promise<Array<Record<string, unknown>>>;
  listAgents(): Promise<Array<Record<string, unknown>>>;
  listSessions(): Promise<unknown>;
  getSubagentEvents(
    app: string,
    name: string,
    options?: { since?: number; limit?: number },
  ): Promise<Record<string, unknown>>;
  interrupt(): Promise<{ ok: boolean; interrupted?: string; unsupported?: boolean }>;
}

export interface MastWebClientClass {
  new (options: { endpoint: string; token?: string; sessionId?: string }): MastWebClient;
  PermanentStreamError: new (...args: never[]) => Error;
}

let loaded: MastWebClientClass | undefined;

/** The dashboard's AttachClient class (loaded once per test process). */
export function mastWebClient(): MastWebClientClass {
  if (loaded) return loaded;
  const window = globalThis as unknown as Record<string, unknown>;
  for (const name of ["errors", "protocol", "replay", "client"])
    new Function("window", readFileSync(join(CORE, `${name}.js`), "utf8"))(window);
  loaded = window.AttachClient as MastWebClientClass;
  return loaded;
}
