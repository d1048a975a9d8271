/**
 * The source contract's host (D375) against the fake apiserver: a toy detector is told the first
 * list (initial), each later change, each poll answer and each tick, and what it answers is
 * emitted; a watch left out (its optional grant denied) is never opened; `synced` waits for the
 * first list; stopping ends every watch and timer.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import type { Detector, ObjectChange, SourceSpec } from "../../../src/watcher/core/source-spec.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { DetectorSource } from "../../../src/watcher/sources/detector-source.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { waitFor } from "../../support/daemon.ts";

let api: FakeApiserver;
beforeAll(async () => {
  api = await startFakeApiserver({});
});
afterAll(() => api.stop());

interface Seen {
  watch: string;
  change: ObjectChange;
  name: string;
  initial: boolean;
}

function signal(reason: string, name: string): Signal {
  return {
    kind: "toy.seen",
    reason,
    namespace: "toy",
    kindOfObject: "Pod",
    name,
    uid: name,
    message: reason,
    eventCount: 1,
    firstSeen: 0,
    lastSeen: 0,
    type: "",
    severity: "warning",
  };
}

function toySpec(seen: Seen[], polls: unknown[], ticks: number[]): SourceSpec<{ prefix: string }> {
  return {
    name: "toy",
    reasons: [],
    scope: "cluster",
    required: [],
    watches: [
      { name: "pods", path: "/api/v1/pods" },
      { name: "nodes", path: "/api/v1/nodes" },
    ],
    polls: [{ name: "namespaces", path: "/api/v1/namespaces", everyMs: 50 }],
    tickMs: 50,
    detector: ({ prefix }): Detector => ({
      observe: (watch, change, object, _now, initial) => {
        const name = String((object.metadata as { name?: string }).name);
        seen.push({ watch, change, name, initial });
        return initial ? [] : [signal(`${prefix}${change}`, name)];
      },
      polled: (_poll, body) => {
        polls.push(body);
        return [];
      },
      tick: (now) => {
        ticks.push(now);
        return [];
      },
    }),
  };
}

test("the detector sees the list as initial, then every change; its signals are emitted; a left-out watch never opens", async () => {
  api.scenario.createPod({ namespace: "toy", name: "before", node: "node-a", containers: [] } as never);
  const seen: Seen[] = [];
  const polls: unknown[] = [];
  const ticks: number[] = [];
  const emitted: Signal[] = [];
  const source = new DetectorSource({
    spec: toySpec(seen, polls, ticks),
    settings: { prefix: "pod-" },
    connection: { server: api.url, tls: {}, token: () => undefined },
    emit: (one) => emitted.push(one),
    logger: createLogger("error"),
    onRestart: () => {},
    without: new Set(["nodes"]),
  });
  expect(source.synced).toBe(false);
  await source.start();
  expect(source.synced).toBe(true);
  expect(seen).toEqual([{ watch: "pods", change: "add", name: "before", initial: true }]);
  expect(emitted).toEqual([]);
  api.scenario.createPod({ namespace: "toy", name: "after", node: "node-a", containers: [] } as never);
  await waitFor(() => (emitted.length > 0 ? true : undefined), 5000, "the signal of a later pod");
  expect(emitted.map((one) => [one.reason, one.name])).toEqual([["pod-add", "after"]]);
  await waitFor(() => (polls.length > 0 && ticks.length > 0 ? true : undefined), 5000, "a poll and a tick");
  expect((polls[0] as { kind?: string }).kind).toBe("NamespaceList");
  expect(api.requests().some((request) => request.path.startsWith("/api/v1/nodes"))).toBe(false);
  await source.stop();
  const after = { polls: polls.length, ticks: ticks.length };
  api.scenario.createPod({ namespace: "toy", name: "stopped", node: "node-a", containers: [] } as never);
  // A barrier: a request answered after the stop proves the fake served it; the stopped source saw nothing.
  await fetch(`${api.url}/api/v1/namespaces`);
  expect(seen.some((one) => one.name === "stopped")).toBe(false);
  expect(polls.length).toBe(after.polls);
  expect(ticks.length).toBe(after.ticks);
});
