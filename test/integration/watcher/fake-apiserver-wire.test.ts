/**
 * The fake kube-apiserver's wire protocol, checked with plain fetch: discovery, lists with
 * resourceVersion and limit/continue, watches (headers at once, replay, synthetic ADDED,
 * selector enter/leave, bookmarks, timeoutSeconds), 410 in both forms, field selectors for both
 * event APIs, pod logs, create/patch/delete through the API, and Status bodies on bad requests.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { WatchReader } from "../../support/kube.ts";
import { waitFor } from "../../support/daemon.ts";

let api: FakeApiserver;

beforeAll(async () => {
  api = await startFakeApiserver({ bookmarkIntervalMs: 200 });
});
afterAll(async () => {
  await api.stop();
});

const get = (path: string, init?: RequestInit) => fetch(`${api.url}${path}`, init);
const json = async (path: string) => (await (await get(path)).json()) as Record<string, any>;

async function openWatch(
  path: string,
): Promise<{ reader: WatchReader; controller: AbortController; response: Response }> {
  const controller = new AbortController();
  const response = await get(path, { signal: controller.signal });
  return { reader: new WatchReader(response), controller, response };
}

describe("discovery", () => {
  test("serves /api, /apis, group versions and /version in the apiserver's shapes", async () => {
    expect((await json("/api")).versions).toEqual(["v1"]);
    const groups = (await json("/apis")).groups.map((group: { name: string }) => group.name);
    expect(groups).toEqual(expect.arrayContaining(["apps", "events.k8s.io", "authorization.k8s.io"]));
    const core = await json("/api/v1");
    const names = core.resources.map((resource: { name: string }) => resource.name);
    expect(names).toEqual(expect.arrayContaining(["pods", "pods/log", "nodes", "events", "namespaces"]));
    expect(core.resources.find((resource: { name: string }) => resource.name === "nodes").namespaced).toBe(false);
    expect((await json("/apis/apps/v1")).resources.map((resource: { name: string }) => resource.name)).toEqual(
      expect.arrayContaining(["deployments", "replicasets"]),
    );
    expect((await json("/apis/events.k8s.io/v1")).groupVersion).toBe("events.k8s.io/v1");
    expect((await json("/version")).major).toBe("1");
    const missing = await get("/apis/nope/v1");
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { kind: string }).kind).toBe("Status");
  });
});

describe("lists", () => {
  test("namespaced and all-namespaces lists carry the List's resourceVersion; items have no kind", async () => {
    api.scenario.createPod({ namespace: "list-a", name: "p1", node: "n1" });
    api.scenario.createPod({ namespace: "list-b", name: "p2", node: "n1" });
    const all = await json("/api/v1/pods");
    expect(all.kind).toBe("PodList");
    expect(Number(all.metadata.resourceVersion)).toBe(api.scenario.resourceVersion);
    const mine = all.items.filter((item: any) => item.metadata.namespace.startsWith("list-"));
    expect(mine.map((item: any) => item.metadata.name)).toEqual(["p1", "p2"]);
    expect(mine[0].kind).toBeUndefined();
    const one = await json("/api/v1/namespaces/list-a/pods");
    expect(one.items.map((item: any) => item.metadata.name)).toEqual(["p1"]);
    const single = await json("/api/v1/namespaces/list-a/pods/p1");
    expect(single.kind).toBe("Pod");
    expect(single.apiVersion).toBe("v1");
  });

  test("limit/continue pages one consistent snapshot; a compacted token is 410 Expired", async () => {
    for (let index = 0; index < 5; index++) api.scenario.createPod({ namespace: "paged", name: `p${index}` });
    const first = await json("/api/v1/namespaces/paged/pods?limit=2");
    expect(first.items.map((item: any) => item.metadata.name)).toEqual(["p0", "p1"]);
    expect(first.metadata.remainingItemCount).toBe(3);
    api.scenario.createPod({ namespace: "paged", name: "p10" });
    const second = await json(`/api/v1/namespaces/paged/pods?limit=2&continue=${first.metadata.continue}`);
    expect(second.items.map((item: any) => item.metadata.name)).toEqual(["p2", "p3"]);
    expect(second.metadata.resourceVersion).toBe(first.metadata.resourceVersion);
    const third = await json(`/api/v1/namespaces/paged/pods?limit=2&continue=${second.metadata.continue}`);
    expect(third.items.map((item: any) => item.metadata.name)).toEqual(["p4"]);
    expect(third.metadata.continue).toBeUndefined();
    api.faults.expireResourceVersions();
    const expired = await get(`/api/v1/namespaces/paged/pods?limit=2&continue=${first.metadata.continue}`);
    expect(expired.status).toBe(410);
    expect(((await expired.json()) as { reason: string }).reason).toBe("Expired");
  });

  test("resourceVersionMatch=Exact reads the past; a future version is 504; garbage is 400", async () => {
    const before = api.scenario.resourceVersion;
    api.scenario.createPod({ namespace: "exact", name: "later" });
    const past = await json(`/api/v1/namespaces/exact/pods?resourceVersion=${before}&resourceVersionMatch=Exact`);
    expect(past.items).toEqual([]);
    expect(past.metadata.resourceVersion).toBe(String(before));
    expect((await get(`/api/v1/pods?resourceVersion=${before + 1000}`)).status).toBe(504);
    const bad = await get("/api/v1/pods?resourceVersion=abc");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { reason: string }).reason).toBe("BadRequest");
  });
});

describe("field selectors", () => {
  test("events filter on involvedObject.*, type, reason and metadata.namespace, with != forms, in both event APIs", async () => {
    const target = api.scenario.createPod({ namespace: "sel", name: "crashy" });
    api.scenario.recordEvent({ involvedObject: target, reason: "BackOff", message: "back-off", type: "Warning" });
    api.scenario.recordEvent({ involvedObject: target, reason: "Pulled", message: "pulled", type: "Normal" });
    api.scenario.createEventV1({
      involvedObject: { kind: "Node", name: "n9", uid: "node-uid" },
      reason: "NodeNotReady",
      message: "not ready",
      namespace: "sel",
    });
    const reasons = async (path: string) => ((await json(path)).items as any[]).map((item) => item.reason).sort();
    const uid = String((target.metadata as Record<string, unknown>).uid);
    expect(await reasons(`/api/v1/events?fieldSelector=involvedObject.uid=${uid}`)).toEqual(["BackOff", "Pulled"]);
    expect(await reasons("/api/v1/namespaces/sel/events?fieldSelector=type=Warning")).toEqual([
      "BackOff",
      "NodeNotReady",
    ]);
    expect(await reasons("/api/v1/events?fieldSelector=metadata.namespace=sel,reason!=Pulled")).toEqual([
      "BackOff",
      "NodeNotReady",
    ]);
    expect(await reasons("/api/v1/events?fieldSelector=involvedObject.kind==Node,metadata.namespace=sel")).toEqual([
      "NodeNotReady",
    ]);
    expect(
      await reasons("/apis/events.k8s.io/v1/namespaces/sel/events?fieldSelector=regarding.name=crashy,reason=BackOff"),
    ).toEqual(["BackOff"]);
    const v1 = await json("/apis/events.k8s.io/v1/namespaces/sel/events?fieldSelector=reason=BackOff");
    expect(v1.kind).toBe("EventList");
    expect(v1.apiVersion).toBe("events.k8s.io/v1");
    expect(v1.items[0].note).toBe("back-off");
    expect(v1.items[0].regarding.name).toBe("crashy");
    expect(v1.items[0].deprecatedCount).toBe(1);
    const unknown = await get("/api/v1/events?fieldSelector=spec.bogus=1");
    expect(unknown.status).toBe(400);
    expect(((await unknown.json()) as { message: string }).message).toContain("field label not supported");
  });

  test("pods filter on spec.nodeName and labels", async () => {
    api.scenario.createPod({ namespace: "nodes", name: "a", node: "node-a", labels: { tier: "web" } });
    api.scenario.createPod({ namespace: "nodes", name: "b", node: "node-b", labels: { tier: "db" } });
    const names = async (path: string) => ((await json(path)).items as any[]).map((item) => item.metadata.name);
    expect(await names("/api/v1/namespaces/nodes/pods?fieldSelector=spec.nodeName=node-b")).toEqual(["b"]);
    expect(await names("/api/v1/namespaces/nodes/pods?labelSelector=tier%20in%20(web,cache)")).toEqual(["a"]);
    expect(await names("/api/v1/namespaces/nodes/pods?labelSelector=tier!=web")).toEqual(["b"]);
  });
});

describe("watch", () => {
  test("headers arrive before any event; resourceVersion=N replays later changes in order, then follows live", async () => {
    api.scenario.createPod({ namespace: "w1", name: "old" });
    const since = api.scenario.resourceVersion;
    api.scenario.createPod({ namespace: "w1", name: "replayed" });
    const started = Date.now();
    const { reader, controller, response } = await openWatch(
      `/api/v1/namespaces/w1/pods?watch=true&resourceVersion=${since}`,
    );
    expect(Date.now() - started).toBeLessThan(1000);
    expect(response.headers.get("content-type")).toBe("application/json");
    const [replayed] = await reader.next(1);
    expect(replayed?.type).toBe("ADDED");
    expect(replayed?.object.metadata?.name).toBe("replayed");
    expect(replayed?.object.kind).toBe("Pod");
    api.scenario.patch(
      { apiVersion: "v1", kind: "Pod", namespace: "w1", name: "replayed" },
      { metadata: { labels: { changed: "yes" } } },
    );
    api.scenario.delete({ apiVersion: "v1", kind: "Pod", namespace: "w1", name: "old" });
    const live = await reader.next(2);
    expect(live.map((line) => line.type)).toEqual(["MODIFIED", "DELETED"]);
    expect(Number(live[1]?.object.metadata?.resourceVersion)).toBe(api.scenario.resourceVersion);
    controller.abort();
  });

  test("a watch with nothing to send still answers its headers at once (a leading newline)", async () => {
    const started = Date.now();
    const { reader, controller, response } = await openWatch(
      `/api/v1/namespaces/nothing-here/pods?watch=true&resourceVersion=${api.scenario.resourceVersion}`,
    );
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeLessThan(1000);
    await waitFor(() => (reader.raw.length > 0 ? true : undefined), 5000, "the leading newline");
    expect(reader.raw).toBe("\n");
    controller.abort();
  });

  test("an unset resourceVersion starts with synthetic ADDED for the current state", async () => {
    api.scenario.createNode({ name: "watch-node-1" });
    const { reader, controller } = await openWatch("/api/v1/nodes?watch=1&fieldSelector=metadata.name=watch-node-1");
    const [added] = await reader.next(1);
    expect(added?.type).toBe("ADDED");
    expect(added?.object.metadata?.name).toBe("watch-node-1");
    expect(reader.raw.startsWith("\n")).toBe(true);
    controller.abort();
  });

  test("objects entering or leaving the selector arrive as ADDED and DELETED", async () => {
    api.scenario.createPod({ namespace: "w2", name: "mover", labels: { watched: "no" } });
    const { reader, controller } = await openWatch(
      `/api/v1/namespaces/w2/pods?watch=true&labelSelector=watched%3Dyes&resourceVersion=${api.scenario.resourceVersion}`,
    );
    const ref = { apiVersion: "v1", kind: "Pod", namespace: "w2", name: "mover" };
    api.scenario.patch(ref, { metadata: { labels: { watched: "yes" } } });
    api.scenario.patch(ref, { status: { phase: "Running" } });
    api.scenario.patch(ref, { metadata: { labels: { watched: "no" } } });
    expect((await reader.next(3)).map((line) => line.type)).toEqual(["ADDED", "MODIFIED", "DELETED"]);
    controller.abort();
  });

  test("allowWatchBookmarks brings periodic BOOKMARKs with the current resourceVersion; none without it", async () => {
    const { reader, controller } = await openWatch(
      `/api/v1/namespaces/quiet/pods?watch=true&allowWatchBookmarks=true&resourceVersion=${api.scenario.resourceVersion}`,
    );
    const [bookmark] = await reader.next(1, 2000);
    expect(bookmark?.type).toBe("BOOKMARK");
    expect(bookmark?.object.kind).toBe("Pod");
    expect(Number(bookmark?.object.metadata?.resourceVersion)).toBe(api.scenario.resourceVersion);
    controller.abort();
    const plain = await openWatch(
      `/api/v1/namespaces/quiet/pods?watch=true&resourceVersion=${api.scenario.resourceVersion}`,
    );
    // A bookmark watch opened after the plain one gets its first BOOKMARK: the plain one's would
    // have come by then.
    const later = await openWatch(
      `/api/v1/namespaces/quiet/pods?watch=true&allowWatchBookmarks=true&resourceVersion=${api.scenario.resourceVersion}`,
    );
    expect((await later.reader.next(1, 2000))[0]?.type).toBe("BOOKMARK");
    later.controller.abort();
    expect(plain.reader.pending()).toEqual([]);
    plain.controller.abort();
  });

  test("sendInitialEvents ends its synthetic ADDED events with the initial-events-end bookmark", async () => {
    api.scenario.createPod({ namespace: "stream", name: "s1" });
    const { reader, controller } = await openWatch(
      "/api/v1/namespaces/stream/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
    );
    const [added, end] = await reader.next(2);
    expect(added?.type).toBe("ADDED");
    expect(end?.type).toBe("BOOKMARK");
    expect((end?.object.metadata?.annotations as Record<string, string>)["k8s.io/initial-events-end"]).toBe("true");
    controller.abort();
    expect((await get("/api/v1/pods?watch=true&sendInitialEvents=true")).status).toBe(422);
  });

  test("timeoutSeconds ends the stream cleanly", async () => {
    const { reader } = await openWatch(
      `/api/v1/namespaces/quiet/pods?watch=true&timeoutSeconds=1&resourceVersion=${api.scenario.resourceVersion}`,
    );
    await reader.end(3000);
    expect(reader.error).toBeUndefined();
  });

  test("events.k8s.io watches see core events converted", async () => {
    const { reader, controller } = await openWatch(
      `/apis/events.k8s.io/v1/namespaces/conv/events?watch=true&resourceVersion=${api.scenario.resourceVersion}`,
    );
    api.scenario.recordEvent({
      involvedObject: { kind: "Pod", name: "x", namespace: "conv", uid: "ux" },
      reason: "Failed",
      message: "ErrImagePull",
    });
    const [line] = await reader.next(1);
    expect(line?.object.apiVersion).toBe("events.k8s.io/v1");
    expect(line?.object.note).toBe("ErrImagePull");
    controller.abort();
  });
});

describe("410 Gone", () => {
  test("a watch from a compacted resourceVersion is an HTTP 410 Expired Status", async () => {
    const old = api.scenario.resourceVersion;
    api.scenario.createPod({ namespace: "gone", name: "g1" });
    api.faults.expireResourceVersions();
    const response = await get(`/api/v1/pods?watch=true&resourceVersion=${old}`);
    expect(response.status).toBe(410);
    const status = (await response.json()) as { kind: string; code: number; reason: string; message: string };
    expect(status).toMatchObject({ kind: "Status", code: 410, reason: "Expired" });
    expect(status.message).toContain("too old resource version");
    expect(
      (await get(`/api/v1/pods?watch=true&resourceVersion=${api.scenario.resourceVersion}&timeoutSeconds=1`)).status,
    ).toBe(200);
  });

  test("mid-stream expiry sends an ERROR event with a 410 Status and ends the stream", async () => {
    const { reader } = await openWatch(`/api/v1/pods?watch=true&resourceVersion=${api.scenario.resourceVersion}`);
    expect(api.faults.expireResourceVersions({ midStream: true })).toBeGreaterThanOrEqual(1);
    const [error] = await reader.next(1);
    expect(error?.type).toBe("ERROR");
    expect(error?.object).toMatchObject({ kind: "Status", code: 410, reason: "Expired" });
    await reader.end();
  });

  test("expiredWatch: event answers a too-old watch with a 200 stream carrying one ERROR 410", async () => {
    const eventMode = await startFakeApiserver({ expiredWatch: "event" });
    try {
      eventMode.scenario.createPod({ name: "x" });
      eventMode.faults.expireResourceVersions();
      const response = await fetch(`${eventMode.url}/api/v1/pods?watch=true&resourceVersion=1`);
      expect(response.status).toBe(200);
      const reader = new WatchReader(response);
      const [error] = await reader.next(1);
      expect(error).toMatchObject({ type: "ERROR", object: { code: 410, reason: "Expired" } });
      await reader.end();
    } finally {
      await eventMode.stop();
    }
  });

  test("history beyond historyLimit is compacted automatically", async () => {
    const small = await startFakeApiserver({ historyLimit: 3 });
    try {
      const start = small.scenario.resourceVersion;
      for (let index = 0; index < 5; index++) small.scenario.createPod({ name: `h${index}` });
      expect((await fetch(`${small.url}/api/v1/pods?watch=true&resourceVersion=${start}`)).status).toBe(410);
      const recent = await fetch(
        `${small.url}/api/v1/pods?watch=true&resourceVersion=${small.scenario.resourceVersion - 2}&timeoutSeconds=1`,
      );
      expect(recent.status).toBe(200);
      await recent.text();
    } finally {
      await small.stop();
    }
  });
});

describe("pod logs", () => {
  test("previous (empty for a restarted container without text), tailLines and limitBytes; the apiserver's errors for ambiguous containers and a previous instance never had", async () => {
    api.scenario.createPod({ namespace: "logs", name: "solo" });
    api.scenario.setPodLogs("logs", "solo", "app", { current: "a\nb\nc\nd\n", previous: "boom 1\nboom 2\nOOM\n" });
    const text = async (path: string) => {
      const response = await get(path);
      expect(response.headers.get("content-type")).toBe("text/plain");
      return response.text();
    };
    expect(await text("/api/v1/namespaces/logs/pods/solo/log")).toBe("a\nb\nc\nd\n");
    expect(await text("/api/v1/namespaces/logs/pods/solo/log?tailLines=2")).toBe("c\nd\n");
    expect(await text("/api/v1/namespaces/logs/pods/solo/log?previous=true&tailLines=1")).toBe("OOM\n");
    expect(await text("/api/v1/namespaces/logs/pods/solo/log?previous=true&limitBytes=4")).toBe("boom");
    api.scenario.createPod({ namespace: "logs", name: "duo", containers: [{ name: "app" }, { name: "sidecar" }] });
    const ambiguous = await get("/api/v1/namespaces/logs/pods/duo/log");
    expect(ambiguous.status).toBe(400);
    expect(((await ambiguous.json()) as { message: string }).message).toContain("a container name must be specified");
    const noPrevious = await get("/api/v1/namespaces/logs/pods/duo/log?container=sidecar&previous=true");
    expect(noPrevious.status).toBe(400);
    // A container that restarted has a previous instance, as on a node: empty until text is set.
    api.scenario.createPod({
      namespace: "logs",
      name: "looping",
      containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 5 }],
    });
    expect(await text("/api/v1/namespaces/logs/pods/looping/log?previous=true&tailLines=5")).toBe("");
    api.scenario.createPod({
      namespace: "logs",
      name: "killed",
      containers: [{ name: "app", lastTerminationReason: "OOMKilled" }],
    });
    expect(await text("/api/v1/namespaces/logs/pods/killed/log?previous=true")).toBe("");
    expect((await get("/api/v1/namespaces/logs/pods/ghost/log")).status).toBe(404);
    expect((await get("/api/v1/namespaces/logs/pods/solo/log?tailLines=-1")).status).toBe(422);
  });
});

describe("writes through the API", () => {
  test("create, merge patch, conflict, delete; bad bodies get a Status", async () => {
    const body = { apiVersion: "apps/v1", kind: "ReplicaSet", metadata: { name: "rs1" }, spec: { replicas: 2 } };
    const created = await get("/apis/apps/v1/namespaces/writes/replicasets", {
      method: "POST",
      body: JSON.stringify(body),
      headers: { "content-type": "application/json" },
    });
    expect(created.status).toBe(201);
    const again = await get("/apis/apps/v1/namespaces/writes/replicasets", {
      method: "POST",
      body: JSON.stringify(body),
    });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { reason: string }).reason).toBe("AlreadyExists");
    const patched = await get("/apis/apps/v1/namespaces/writes/replicasets/rs1", {
      method: "PATCH",
      body: JSON.stringify({ spec: { replicas: 3 } }),
      headers: { "content-type": "application/merge-patch+json" },
    });
    expect(((await patched.json()) as any).spec.replicas).toBe(3);
    const stale = await get("/apis/apps/v1/namespaces/writes/replicasets/rs1", {
      method: "PUT",
      body: JSON.stringify({ ...body, metadata: { name: "rs1", resourceVersion: "1" } }),
    });
    expect(stale.status).toBe(409);
    expect((await get("/apis/apps/v1/namespaces/writes/replicasets/rs1", { method: "DELETE" })).status).toBe(200);
    expect((await get("/apis/apps/v1/namespaces/writes/replicasets/rs1")).status).toBe(404);
    const garbage = await get("/api/v1/namespaces/writes/pods", { method: "POST", body: "{nope" });
    expect(garbage.status).toBe(400);
    expect(((await garbage.json()) as { kind: string }).kind).toBe("Status");
  });
});
