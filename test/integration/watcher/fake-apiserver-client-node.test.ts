/**
 * @kubernetes/client-node 2.0.1 against the fake apiserver over plain HTTP (D20: the watcher
 * routes HTTP through Bun's fetch; here the library's own transport is enough to prove the wire):
 * typed list calls with field selectors, pod logs, SelfSubjectAccessReview, and a ListWatch
 * informer on events that sees add/update/delete, re-lists exactly once on a 410 (mid-stream
 * ERROR and HTTP 410), resumes without a re-list after a clean close, and resumes from a
 * BOOKMARK's resourceVersion.
 */
import { afterAll, afterEach, beforeAll, describe, expect, test } from "bun:test";
import * as k8s from "@kubernetes/client-node";
import {
  type FakeApiserver,
  type RecordedRequest,
  startFakeApiserver,
} from "../../../scripts/fake-apiserver/server.ts";
import { waitFor } from "../../support/daemon.ts";
import { kubeconfigText } from "../../support/kube.ts";

const TOKEN = "client-node-token";
let api: FakeApiserver;
let config: k8s.KubeConfig;
const informers: k8s.ListWatch<k8s.CoreV1Event>[] = [];

beforeAll(async () => {
  api = await startFakeApiserver({ tokens: { [TOKEN]: "watcher" }, bookmarkIntervalMs: 300 });
  config = new k8s.KubeConfig();
  config.loadFromString(kubeconfigText({ server: api.url, token: TOKEN, insecureSkipTlsVerify: true }));
});
afterEach(async () => {
  for (const informer of informers.splice(0)) await informer.stop();
  api.faults.dropWatches("close");
});
afterAll(async () => {
  await api.stop();
});

/** Adds `allowWatchBookmarks` to every watch (client-node's informer never asks for bookmarks itself). */
class BookmarkWatch extends k8s.Watch {
  override watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: (phase: string, apiObj: any, watchObj?: any) => void,
    done: (err: any) => void,
  ): Promise<AbortController> {
    return super.watch(path, { ...queryParams, allowWatchBookmarks: true }, callback, done);
  }
}

function eventInformer(namespace: string, watch: k8s.Watch = new k8s.Watch(config)): k8s.ListWatch<k8s.CoreV1Event> {
  const core = config.makeApiClient(k8s.CoreV1Api);
  const informer = new k8s.ListWatch<k8s.CoreV1Event>(
    `/api/v1/namespaces/${namespace}/events`,
    watch,
    () => core.listNamespacedEvent({ namespace, fieldSelector: "type=Warning" }),
    false,
    undefined,
    "type=Warning",
  );
  informers.push(informer);
  return informer;
}

async function until(condition: () => boolean, what: string, timeoutMs = 8000): Promise<void> {
  await waitFor(() => (condition() ? true : undefined), timeoutMs, what);
}

const isList = (entry: RecordedRequest, namespace: string) =>
  entry.path === `/api/v1/namespaces/${namespace}/events` && entry.query.watch === undefined;
const isWatch = (entry: RecordedRequest, namespace: string) =>
  entry.path === `/api/v1/namespaces/${namespace}/events` && entry.query.watch === "true";

describe("typed calls", () => {
  test("lists with a field selector, reads logs with previous/tailLines, asks an access review", async () => {
    const pod = api.scenario.createPod({ namespace: "typed", name: "web" });
    api.scenario.recordEvent({ involvedObject: pod, reason: "BackOff", message: "back-off" });
    api.scenario.recordEvent({ involvedObject: pod, reason: "Scheduled", type: "Normal", message: "ok" });
    api.scenario.setPodLogs("typed", "web", "app", { current: "now\n", previous: "a\nb\nkilled\n" });
    const core = config.makeApiClient(k8s.CoreV1Api);
    const events = await core.listEventForAllNamespaces({ fieldSelector: "involvedObject.name=web,type=Warning" });
    expect(events.items.map((item) => item.reason)).toEqual(["BackOff"]);
    expect(events.items[0]?.lastTimestamp).toBeInstanceOf(Date);
    expect(Number(events.metadata?.resourceVersion)).toBe(api.scenario.resourceVersion);
    const log = await core.readNamespacedPodLog({ name: "web", namespace: "typed", previous: true, tailLines: 2 });
    expect(log).toBe("b\nkilled\n");
    const authorization = config.makeApiClient(k8s.AuthorizationV1Api);
    const review = await authorization.createSelfSubjectAccessReview({
      body: {
        apiVersion: "authorization.k8s.io/v1",
        kind: "SelfSubjectAccessReview",
        spec: { resourceAttributes: { verb: "watch", resource: "events" } },
      },
    });
    expect(review.status?.allowed).toBe(true);
    await expect(core.readNamespacedPod({ name: "ghost", namespace: "typed" })).rejects.toMatchObject({ code: 404 });
  }, 15_000);
});

describe("ListWatch informer", () => {
  test("add, update (count bump) and delete reach the informer; Normal events are filtered out by the server", async () => {
    const informer = eventInformer("inf");
    const seen: string[] = [];
    informer.on("add", (event) => seen.push(`add:${event.reason}:${event.count}`));
    informer.on("update", (event) => seen.push(`update:${event.reason}:${event.count}`));
    informer.on("delete", (event) => seen.push(`delete:${event.reason}`));
    await informer.start();
    await until(() => api.requests().some((entry) => isWatch(entry, "inf")), "the watch");
    const target = { kind: "Pod", name: "p", namespace: "inf", uid: "uid-p" };
    api.scenario.recordEvent({ involvedObject: target, reason: "BackOff", message: "m" });
    api.scenario.recordEvent({ involvedObject: target, reason: "Pulled", type: "Normal", message: "m" });
    api.scenario.recordEvent({ involvedObject: target, reason: "BackOff", message: "m" });
    const [created] = api.scenario.list("v1", "Event", "inf").filter((event) => event.reason === "BackOff");
    api.scenario.delete({ apiVersion: "v1", kind: "Event", namespace: "inf", name: String(created?.metadata?.name) });
    await until(() => seen.length >= 3, "three informer callbacks");
    expect(seen).toEqual(["add:BackOff:1", "update:BackOff:2", "delete:BackOff"]);
  }, 15_000);

  test("a 410 ERROR mid-stream makes the informer re-list exactly once and lose nothing", async () => {
    const informer = eventInformer("gone");
    const adds: string[] = [];
    informer.on("add", (event) => adds.push(String(event.metadata?.name)));
    await informer.start();
    await until(() => api.requests().some((entry) => isWatch(entry, "gone")), "the watch");
    const listsBefore = api.requests().filter((entry) => isList(entry, "gone")).length;
    expect(api.faults.expireResourceVersions({ midStream: true })).toBeGreaterThanOrEqual(1);
    api.scenario.recordEvent({
      involvedObject: { kind: "Pod", name: "g", namespace: "gone", uid: "uid-g" },
      reason: "Failed",
      message: "during the gap",
      name: "gap-event",
    });
    await until(() => adds.includes("gap-event"), "the event created during the re-list gap");
    await until(() => api.requests().filter((entry) => isWatch(entry, "gone")).length >= 2, "the second watch");
    expect(api.requests().filter((entry) => isList(entry, "gone")).length - listsBefore).toBe(1);
    expect(adds.filter((name) => name === "gap-event")).toHaveLength(1);
  }, 15_000);

  test("an HTTP 410 on the re-watch after a drop makes the informer re-list; a clean drop alone resumes without one", async () => {
    const informer = eventInformer("resume");
    const adds: string[] = [];
    informer.on("add", (event) => adds.push(String(event.metadata?.name)));
    await informer.start();
    await until(() => api.requests().filter((entry) => isWatch(entry, "resume")).length === 1, "the watch");
    api.faults.dropWatches("close");
    await until(() => api.requests().filter((entry) => isWatch(entry, "resume")).length === 2, "the re-watch", 10_000);
    expect(api.requests().filter((entry) => isList(entry, "resume"))).toHaveLength(1);
    api.scenario.createPod({ namespace: "elsewhere", name: "unseen-by-the-event-watch" });
    api.faults.expireResourceVersions();
    api.faults.dropWatches("close");
    api.scenario.recordEvent({
      involvedObject: { kind: "Pod", name: "r", namespace: "resume", uid: "uid-r" },
      reason: "Failed",
      message: "x",
      name: "after-compaction",
    });
    await until(() => adds.includes("after-compaction"), "the event after compaction", 10_000);
    const watchStatuses = api
      .requests()
      .filter((entry) => isWatch(entry, "resume"))
      .map((entry) => entry.status);
    expect(watchStatuses).toContain(410);
    expect(api.requests().filter((entry) => isList(entry, "resume"))).toHaveLength(2);
  }, 25_000);

  test("a BOOKMARK moves the informer's resourceVersion; the re-watch after a drop starts there", async () => {
    const informer = eventInformer("marks", new BookmarkWatch(config));
    await informer.start();
    await until(() => api.requests().some((entry) => isWatch(entry, "marks")), "the watch");
    const firstVersion = Number(api.requests().find((entry) => isWatch(entry, "marks"))?.query.resourceVersion);
    api.scenario.createPod({ namespace: "elsewhere", name: "moves-the-version" });
    const moved = api.scenario.resourceVersion;
    expect(moved).toBeGreaterThan(firstVersion);
    await until(() => Number(informer.latestResourceVersion()) >= moved, "a bookmark at the new version", 5000);
    api.faults.dropWatches("close");
    await until(() => api.requests().filter((entry) => isWatch(entry, "marks")).length >= 2, "the re-watch", 10_000);
    const rewatch = api.requests().filter((entry) => isWatch(entry, "marks"))[1];
    expect(rewatch?.query.allowWatchBookmarks).toBe("true");
    expect(Number(rewatch?.query.resourceVersion)).toBeGreaterThanOrEqual(moved);
    expect(api.requests().filter((entry) => isList(entry, "marks"))).toHaveLength(1);
  }, 20_000);
});
