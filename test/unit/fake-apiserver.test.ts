/**
 * Pure parts of the fake apiserver: the store's resourceVersion, history, compaction and
 * point-in-time lists; field and label selectors; path parsing; event conversion between the two
 * APIs; log tails; the protobuf access-review reader; grants; and the command line parser.
 */
import { describe, expect, test } from "bun:test";
import { AccessControl } from "../../scripts/fake-apiserver/access.ts";
import { event } from "../../scripts/fake-apiserver/builders.ts";
import { fromEventsV1, toEventsV1 } from "../../scripts/fake-apiserver/events-v1.ts";
import { tailLines } from "../../scripts/fake-apiserver/logs.ts";
import { parseArgs } from "../../scripts/fake-apiserver/main.ts";
import { parseResourcePath } from "../../scripts/fake-apiserver/paths.ts";
import { decodeAccessReview } from "../../scripts/fake-apiserver/protobuf.ts";
import { parseFieldSelector, parseLabelSelector } from "../../scripts/fake-apiserver/selectors.ts";
import { ObjectStore } from "../../scripts/fake-apiserver/store.ts";

const podObject = (name: string, namespace = "default") => ({
  apiVersion: "v1",
  kind: "Pod",
  metadata: { name, namespace },
});

describe("ObjectStore", () => {
  test("every change takes the next resourceVersion; changesSince replays one storage key in order", () => {
    const store = new ObjectStore({ initialResourceVersion: 100 });
    const created = store.create("pods", podObject("a"));
    expect(created.ok && created.object.metadata?.resourceVersion).toBe("101");
    store.create("nodes", { metadata: { name: "n" } });
    const updated = store.update("pods", { ...podObject("a"), spec: { x: 1 } });
    expect(updated.ok && updated.object.metadata?.resourceVersion).toBe("103");
    store.delete("pods", "default", "a");
    expect(store.changesSince("pods", 100)?.map((change) => `${change.type}@${change.resourceVersion}`)).toEqual([
      "ADDED@101",
      "MODIFIED@103",
      "DELETED@104",
    ]);
    expect(store.changesSince("pods", 103)?.map((change) => change.type)).toEqual(["DELETED"]);
  });

  test("create refuses duplicates and nameless objects; update checks a given resourceVersion", () => {
    const store = new ObjectStore();
    store.create("pods", podObject("a"));
    expect(store.create("pods", podObject("a"))).toMatchObject({ ok: false, code: 409 });
    expect(store.create("pods", { metadata: {} })).toMatchObject({ ok: false, code: 422 });
    const generated = store.create("pods", { metadata: { generateName: "web-", namespace: "default" } });
    expect(generated.ok && String(generated.object.metadata?.name)).toMatch(/^web-.{5}$/);
    expect(store.update("pods", { metadata: { name: "a", namespace: "default", resourceVersion: "1" } })).toMatchObject(
      { ok: false, code: 409 },
    );
    expect(store.update("pods", { metadata: { name: "zz", namespace: "default" } })).toMatchObject({
      ok: false,
      code: 404,
    });
  });

  test("compaction and the history limit expire old versions", () => {
    const store = new ObjectStore({ historyLimit: 2 });
    for (const name of ["a", "b", "c"]) store.create("pods", podObject(name));
    expect(store.compactedResourceVersion).toBe(2);
    expect(store.changesSince("pods", 1)).toBeUndefined();
    expect(store.changesSince("pods", 2)?.length).toBe(2);
    store.compact();
    expect(store.changesSince("pods", 3)).toBeUndefined();
    expect(store.changesSince("pods", 4)).toEqual([]);
  });

  test("listAt rebuilds the state at a past version", () => {
    const store = new ObjectStore();
    store.create("pods", podObject("a"));
    const version = store.resourceVersion;
    store.create("pods", podObject("b"));
    store.update("pods", { ...podObject("a"), spec: { changed: true } });
    store.delete("pods", "default", "a");
    const past = store.listAt("pods", "default", version);
    expect(past?.map((object) => object.metadata?.name)).toEqual(["a"]);
    expect(past?.[0]?.spec).toBeUndefined();
    expect(store.listAt("pods", undefined, store.resourceVersion + 1)).toBeUndefined();
  });

  test("clear empties the store and expires every earlier version", () => {
    const store = new ObjectStore();
    store.create("pods", podObject("a"));
    const before = store.resourceVersion;
    store.clear();
    expect(store.list("pods", undefined)).toEqual([]);
    expect(store.resourceVersion).toBeGreaterThan(before);
    expect(store.changesSince("pods", before)).toBeUndefined();
  });
});

describe("selectors", () => {
  const backOff = event({
    involvedObject: { kind: "Pod", name: "web", namespace: "shop", uid: "u1" },
    reason: "BackOff",
    type: "Warning",
  });

  test("field selectors: =, ==, != on event fields; unknown fields refused", () => {
    const check = (selector: string) => {
      const parsed = parseFieldSelector(selector, "events");
      if (!parsed.ok) throw new Error(parsed.error);
      return parsed.value(backOff);
    };
    expect(check("involvedObject.uid=u1,type==Warning")).toBe(true);
    expect(check("reason!=BackOff")).toBe(false);
    expect(check("metadata.namespace=shop,involvedObject.kind=Pod,source=kubelet")).toBe(true);
    expect(parseFieldSelector("spec.nodeName=x", "events")).toEqual({
      ok: false,
      error: "field label not supported: spec.nodeName",
    });
    expect(parseFieldSelector("garbage", "events").ok).toBe(false);
    const aliased = parseFieldSelector("regarding.name=web,reportingController=kubelet", "events", true);
    expect(aliased.ok && aliased.value(backOff)).toBe(true);
  });

  test("label selectors: equality, inequality, set and existence forms", () => {
    const object = { metadata: { labels: { app: "web", tier: "front" } } };
    const matches = (selector: string) => {
      const parsed = parseLabelSelector(selector);
      if (!parsed.ok) throw new Error(parsed.error);
      return parsed.value(object);
    };
    expect(matches("app=web,tier in (front, back)")).toBe(true);
    expect(matches("app!=web")).toBe(false);
    expect(matches("tier notin (front)")).toBe(false);
    expect(matches("app,!missing")).toBe(true);
    expect(matches("missing")).toBe(false);
    expect(parseLabelSelector("a in (").ok).toBe(false);
  });
});

describe("paths", () => {
  test("core, grouped, namespaced, cluster-scoped, subresource and legacy watch paths", () => {
    expect(parseResourcePath("/api/v1/namespaces/shop/pods/web/log")).toMatchObject({
      namespace: "shop",
      name: "web",
      subresource: "log",
      info: { resource: "pods" },
    });
    expect(parseResourcePath("/api/v1/pods")).toMatchObject({ namespace: undefined, name: undefined });
    expect(parseResourcePath("/api/v1/namespaces/shop")).toMatchObject({
      info: { resource: "namespaces" },
      name: "shop",
    });
    expect(parseResourcePath("/apis/events.k8s.io/v1/namespaces/a/events")).toMatchObject({
      info: { group: "events.k8s.io", storage: "events" },
    });
    expect(parseResourcePath("/api/v1/watch/namespaces/a/events")).toMatchObject({ legacyWatch: true, namespace: "a" });
    expect(parseResourcePath("/api/v1/namespaces/a/nodes")).toBeUndefined();
    expect(parseResourcePath("/apis/apps/v1/nothing")).toBeUndefined();
  });
});

describe("events in two APIs", () => {
  test("core → events.k8s.io → core keeps every mapped field", () => {
    const core = event({
      involvedObject: { kind: "Pod", name: "p", namespace: "n", uid: "u" },
      reason: "Failed",
      message: "m",
      count: 3,
      source: { component: "kubelet", host: "node-1" },
    });
    const v1 = toEventsV1(core);
    expect(v1).toMatchObject({
      apiVersion: "events.k8s.io/v1",
      note: "m",
      regarding: { name: "p" },
      deprecatedCount: 3,
      deprecatedSource: { host: "node-1" },
      reportingController: "kubelet",
    });
    const back = fromEventsV1(v1);
    expect(back).toMatchObject({
      message: "m",
      involvedObject: { uid: "u" },
      count: 3,
      reason: "Failed",
      source: { component: "kubelet" },
    });
  });
});

describe("logs, protobuf, grants, flags", () => {
  test("tailLines keeps the last lines and the trailing newline", () => {
    expect(tailLines("a\nb\nc\n", 2)).toBe("b\nc\n");
    expect(tailLines("a\nb", 1)).toBe("b");
    expect(tailLines("a\n", 0)).toBe("");
    expect(tailLines("a\nb\n", 10)).toBe("a\nb\n");
  });

  test("a protobuf SelfSubjectAccessReview as kubectl sends it decodes to its JSON form", () => {
    const hex = [
      "6b3873000a320a17617574686f72697a6174696f6e2e6b38732e696f2f7631121753656c665375626a65637441636365737352657669657712",
      "400a100a0012001a0022002a0032003800420012220a200a0764656661756c741205776174636",
      "81a0022002a066576656e747332003a001a08080012001a0020001a002200",
    ].join("");
    const review = decodeAccessReview(Uint8Array.from(Buffer.from(hex, "hex")));
    expect(review?.spec).toEqual({
      resourceAttributes: {
        namespace: "default",
        verb: "watch",
        group: "",
        version: "",
        resource: "events",
        subresource: "",
        name: "",
      },
    });
    expect(decodeAccessReview(new TextEncoder().encode("{}"))).toBeUndefined();
  });

  test("grants: wildcards, per-user rules, subresources and namespace scoping", () => {
    const access = new AccessControl(
      { t: "alice" },
      [
        { users: ["alice"], verbs: ["*"], apiGroups: ["apps"], resources: ["*"] },
        { verbs: ["get"], resources: ["pods/log"], namespaces: ["shop"] },
      ],
      undefined,
    );
    const base = {
      user: "alice",
      verb: "list",
      group: "apps",
      resource: "replicasets",
      subresource: "",
      namespace: "",
      name: "",
    };
    expect(access.allows(base)).toBe(true);
    expect(access.allows({ ...base, user: "bob" })).toBe(false);
    expect(
      access.allows({ ...base, group: "", resource: "pods", subresource: "log", verb: "get", namespace: "shop" }),
    ).toBe(true);
    expect(
      access.allows({ ...base, group: "", resource: "pods", subresource: "log", verb: "get", namespace: "" }),
    ).toBe(false);
    expect(access.authenticate("Bearer t")).toEqual({ ok: true, user: "alice" });
    expect(access.authenticate(null).ok).toBe(false);
  });

  test("the command line: tokens with users, TLS pairs, bounded integers", () => {
    const parsed = parseArgs([
      "--port",
      "0",
      "--token",
      "abc=watcher",
      "--token=def",
      "--history-limit=50",
      "--expired-watch",
      "event",
      "--no-control",
    ]);
    expect(parsed.options).toMatchObject({
      port: 0,
      tokens: { abc: "watcher", def: "fake-user" },
      historyLimit: 50,
      expiredWatch: "event",
      control: false,
    });
    expect(parsed.firstToken).toBe("abc");
  });
});
