/**
 * SessionRelay's takeover sweep (D534) with an in-process host and cluster: while the database
 * is down every sweep fails, and the log says so once (not once a second for the whole outage),
 * then once more when a sweep works again. A holder that is stopping leaves the commands relayed to
 * it for the next holder (D530).
 */
import { expect, test } from "bun:test";
import type { SessionCluster } from "../../../src/core/session-cluster.ts";
import type { SessionKey } from "../../../src/core/session-key.ts";
import type { Logger, SessionHost } from "../../../src/runtime/session-host.ts";
import { SessionRelay } from "../../../src/runtime/session-relay.ts";

test("a sweep failing through an outage is logged once, and its recovery once", async () => {
  let failing = true;
  const host = {
    takeOverLapsed: async (): Promise<SessionKey[]> => {
      if (failing) throw new Error("session store unavailable: Failed to connect");
      return [];
    },
  } as unknown as SessionHost;
  const lines: string[] = [];
  const logger: Logger = {
    info: (message) => lines.push(`INFO ${message}`),
    warn: (message) => lines.push(`WARN ${message}`),
    error: (message) => lines.push(`ERROR ${message}`),
  };
  const relay = new SessionRelay(host, {} as SessionCluster, logger);
  for (let sweep = 0; sweep < 5; sweep++) await relay.sweep();
  failing = false;
  await relay.sweep();
  await relay.sweep();
  expect(lines).toEqual([
    "WARN takeover sweep: Error: session store unavailable: Failed to connect (logged once until a sweep works again)",
    "INFO takeover sweep: works again after 5 failed sweep(s)",
  ]);
});

test("a holder that is stopping leaves relayed commands to the next holder instead of answering them 'shutting down'", async () => {
  const completed: number[] = [];
  const ran: string[] = [];
  const host = {
    shuttingDown: true,
    holds: () => true,
    tryActor: async () => ({
      inject: async (message: string) => {
        ran.push(message);
        return { promptId: "p", woke: true };
      },
    }),
  } as unknown as SessionHost;
  const cluster = {
    pendingCommands: async () => [{ id: 7, op: "inject", args: JSON.stringify({ message: "m", wake: true }) }],
    completeCommand: async (id: number) => {
      completed.push(id);
    },
  } as unknown as SessionCluster;
  const relay = new SessionRelay(host, cluster, { info() {}, warn() {}, error() {} });
  await relay.drain({ app: "a", id: "s1" });
  expect(ran).toEqual([]);
  expect(completed).toEqual([]);
});
