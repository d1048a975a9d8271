/**
 * The enricher against the fake kube-apiserver: `--enrich-lists` selects what is read (pods for
 * spec, events for delta, logs for the tails; `all,-x` subtracts), a read the cluster denies (403)
 * is a `skipped=` note on the head line rather than an error trailer, and with
 * `--enrich-lists-preflight` a denied resource is access-reviewed away before any read of it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { podEnricher, selectedResources } from "../../../src/watcher/enricher.ts";
import { reviewAccess } from "../../../src/watcher/kube/access-review.ts";
import type { KubeConnection } from "../../../src/watcher/kube/kube-connection.ts";
import { enrichSignal } from "../../support/enrich-signal.ts";

let api: FakeApiserver;
let connection: KubeConnection;
let signal: Signal;

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { t: "watcher" } });
  connection = { server: api.url, tls: {}, token: () => "t" };
  const pod = api.scenario.createPod({
    namespace: "shop",
    name: "web-1",
    node: "n1",
    containers: [{ name: "app", image: "shop/web:v2", waitingReason: "CrashLoopBackOff", restartCount: 2 }],
  } as never);
  api.scenario.setPodLogs("shop", "web-1", "app", { current: "starting\n", previous: "panic: config missing\n" });
  api.scenario.recordEvent({
    involvedObject: pod,
    reason: "BackOff",
    message: "Back-off restarting failed container app",
    type: "Warning",
    source: { host: "n1" },
  });
  const uid = String((pod.metadata as { uid: string }).uid);
  signal = enrichSignal("Pod", "shop", "web-1", uid);
});

afterAll(async () => {
  await api.stop();
});

const base = { capBytes: 4096, logLines: 50, timeoutMs: 5000 };
const sectionsOf = (bundle: string) => /sections=(\S+)/.exec(bundle.split("\n")[0] ?? "")?.[1] ?? "";

describe("--enrich-lists", () => {
  test("the selection: all, an allow-list, subtractions", () => {
    expect(selectedResources({ all: true, include: [], exclude: [] })).toEqual([
      "pods",
      "events",
      "logs",
      "replicasets",
      "deployments",
      "statefulsets",
      "daemonsets",
      "jobs",
      "nodes",
    ]);
    expect(selectedResources({ all: true, include: [], exclude: ["secrets", "logs", "nodes"] })).toEqual([
      "pods",
      "events",
      "replicasets",
      "deployments",
      "statefulsets",
      "daemonsets",
      "jobs",
    ]);
    expect(selectedResources({ all: false, include: ["events"], exclude: [] })).toEqual(["events"]);
  });

  test("all reads every section; all,-events leaves out the delta and never lists events; events alone reads only them", async () => {
    const full = String(await podEnricher(connection, base)(signal));
    expect(sectionsOf(full)).toBe("spec,delta,logs");
    expect(full).toContain('line="panic: config missing"');
    api.clearRequests();
    const noEvents = String(
      await podEnricher(connection, { ...base, lists: { all: true, include: [], exclude: ["events", "secrets"] } })(
        signal,
      ),
    );
    expect(sectionsOf(noEvents)).toBe("spec,logs");
    expect(api.requests().some((request) => request.path.endsWith("/events"))).toBe(false);
    const onlyEvents = String(
      await podEnricher(connection, { ...base, lists: { all: false, include: ["events"], exclude: [] } })(signal),
    );
    expect(sectionsOf(onlyEvents)).toBe("delta");
    expect(onlyEvents).not.toContain("enrichment_error");
  });

  test("a denied read is skipped= on the head line, not an error; preflight reviews it away before reading", async () => {
    api.scenario.setGrants([
      { verbs: ["get", "list", "watch", "create"], resources: ["pods", "events", "selfsubjectaccessreviews"] },
    ]);
    try {
      api.clearRequests();
      const denied = String(await podEnricher(connection, base)(signal));
      expect(denied.split("\n")[0]).toContain("skipped=logs sections=spec,delta");
      expect(denied).not.toContain("enrichment_error");
      expect(
        api
          .requests()
          .filter((request) => request.path.endsWith("/log"))
          .map((request) => request.status),
      ).toEqual([403]);
      api.clearRequests();
      const preflighted = String(
        await podEnricher(connection, { ...base, preflight: (check) => reviewAccess(connection, check) })(signal),
      );
      expect(preflighted.split("\n")[0]).toContain("skipped=logs sections=spec,delta");
      expect(api.requests().some((request) => request.path.endsWith("/log"))).toBe(false);
      expect(api.requests().filter((request) => request.path.endsWith("selfsubjectaccessreviews"))).toHaveLength(3);
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});
