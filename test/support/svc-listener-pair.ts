/**
 * Two svc daemons for the attack suites of svc's main listener: `open` (no SVC_INJECT_TOKEN,
 * loopback, the DNS-rebinding guard on) and `gated` (token `s3cret`), started once per file; and
 * the check every refusal shares (its status and a JSON body naming the error).
 */
import { beforeAll, expect } from "bun:test";
import type { Daemon } from "./daemon.ts";
import { daemonScope } from "./daemon-scope.ts";

export const SVC_LISTENER_TOKEN = "s3cret";

export interface SvcListenerPair {
  readonly open: Daemon;
  readonly gated: Daemon;
}

/** Register the file's two daemons; read them from the returned object inside tests. */
export function svcListenerPair(): SvcListenerPair {
  const scope = daemonScope({ per: "file" });
  const pair: { open?: Daemon; gated?: Daemon } = {};
  beforeAll(async () => {
    pair.open = await scope.start({ role: "svc" });
    pair.gated = await scope.start({ role: "svc", env: { SVC_INJECT_TOKEN: SVC_LISTENER_TOKEN } });
  });
  return {
    get open() {
      if (pair.open === undefined) throw new Error("the open svc daemon is not started yet");
      return pair.open;
    },
    get gated() {
      if (pair.gated === undefined) throw new Error("the gated svc daemon is not started yet");
      return pair.gated;
    },
  };
}

/** The answer is `status` with a JSON body; resolves with its `error`. */
export async function jsonRefusal(response: Response, status: number): Promise<string> {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toContain("application/json");
  return ((await response.json()) as { error: string }).error;
}
