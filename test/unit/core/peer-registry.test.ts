/**
 * The peer registry's rules with a fake clock: upsert by name, owner scoping, registration_id
 * visibility, label filters, heartbeat extension, expiry and pruning, idempotent delete, and
 * snapshot/restore.
 */
import { describe, expect, test } from "bun:test";
import {
  DEFAULT_HEARTBEAT_TTL_SEC,
  type PeerRegistration,
  PeerRegistry,
  isPeerEndpoint,
  newRegistrationId,
  parseLabelFilter,
  peerWireView,
} from "../../../src/core/peer-registry.ts";
import type { Result } from "../../../src/core/result.ts";

const alice = { identity: "alice", admin: false };
const bob = { identity: "bob", admin: false };
const root = { identity: "root", admin: true };

function setup() {
  const clock = { now: 1_000_000 };
  let counter = 0;
  const registry = new PeerRegistry({ now: () => clock.now, newId: () => `id-${++counter}` });
  return { clock, registry };
}

function value<T, E>(result: Result<T, E>): T {
  if (!result.ok) throw new Error(`expected ok, got ${String(result.error)}`);
  return result.value;
}

function failure<T, E>(result: Result<T, E>): E {
  if (result.ok) throw new Error("expected an error");
  return result.error;
}

const peer = (
  name: string,
  extra: Partial<{ labels: Record<string, string>; heartbeatTtlSec: number; endpoint: string }> = {},
) => ({
  name,
  endpoint: extra.endpoint ?? `http://${name}.test:8080`,
  ...(extra.labels ? { labels: extra.labels } : {}),
  ...(extra.heartbeatTtlSec !== undefined ? { heartbeatTtlSec: extra.heartbeatTtlSec } : {}),
});

describe("register", () => {
  test("records the caller as owner, mints an id, defaults the TTL", () => {
    const { registry, clock } = setup();
    const registration = value(registry.register(alice, peer("a")));
    expect(registration).toEqual({
      registrationId: "id-1",
      name: "a",
      endpoint: "http://a.test:8080",
      labels: {},
      heartbeatTtlSec: DEFAULT_HEARTBEAT_TTL_SEC,
      owner: "alice",
      registeredAt: clock.now,
      expiresAt: clock.now + DEFAULT_HEARTBEAT_TTL_SEC * 1000,
    });
  });

  test("is an upsert by name: the owner keeps the id, fields are replaced, the lease renewed", () => {
    const { registry, clock } = setup();
    value(registry.register(alice, peer("a", { labels: { env: "dev" } })));
    clock.now += 10_000;
    const again = value(registry.register(alice, peer("a", { endpoint: "https://a2.test", heartbeatTtlSec: 60 })));
    expect(again.registrationId).toBe("id-1");
    expect(again.endpoint).toBe("https://a2.test");
    expect(again.labels).toEqual({});
    expect(again.expiresAt).toBe(clock.now + 60_000);
    expect(registry.list()).toHaveLength(1);
  });

  test("another caller cannot take a live name (conflict); an admin takes it over with a fresh id", () => {
    const { registry } = setup();
    value(registry.register(alice, peer("a")));
    const refused = failure(registry.register(bob, peer("a", { endpoint: "http://evil.test" })));
    expect(refused.code).toBe("conflict");
    expect(refused.message).not.toContain("alice");
    expect(registry.list()[0]?.endpoint).toBe("http://a.test:8080");
    const taken = value(registry.register(root, peer("a")));
    expect(taken.owner).toBe("root");
    expect(taken.registrationId).toBe("id-2");
    expect(registry.heartbeat(alice, "id-1").ok).toBe(false);
  });

  test("a lapsed name is free for anyone before any prune", () => {
    const { registry, clock } = setup();
    value(registry.register(alice, peer("a", { heartbeatTtlSec: 5 })));
    clock.now += 5000;
    const claimed = value(registry.register(bob, peer("a")));
    expect(claimed.owner).toBe("bob");
    expect(claimed.registrationId).toBe("id-2");
  });

  test("rejects an empty name, a bad endpoint and a bad TTL; trims the name", () => {
    const { registry } = setup();
    expect(failure(registry.register(alice, peer("  "))).code).toBe("bad_request");
    expect(failure(registry.register(alice, peer("a", { endpoint: "ftp://a.test" }))).code).toBe("bad_request");
    expect(failure(registry.register(alice, peer("a", { heartbeatTtlSec: 0 }))).code).toBe("bad_request");
    expect(failure(registry.register(alice, peer("a", { heartbeatTtlSec: Number.POSITIVE_INFINITY }))).code).toBe(
      "bad_request",
    );
    expect(value(registry.register(alice, { name: " a ", endpoint: "http://a.test" })).name).toBe("a");
  });
});

describe("wire view", () => {
  test("registration_id only for the owner or an admin; the owner never", () => {
    const { registry, clock } = setup();
    const registration = value(registry.register(alice, peer("a", { labels: { role: "db" } })));
    const forOwner = peerWireView(registration, alice);
    expect(forOwner).toEqual({
      registration_id: "id-1",
      name: "a",
      endpoint: "http://a.test:8080",
      labels: { role: "db" },
      heartbeat_ttl_sec: 30,
      expires_at: new Date(clock.now + 30_000).toISOString(),
    });
    expect(peerWireView(registration, root).registration_id).toBe("id-1");
    const forOther = peerWireView(registration, bob);
    expect("registration_id" in forOther).toBe(false);
    expect(JSON.stringify([forOwner, forOther])).not.toContain("alice");
  });
});

describe("list", () => {
  test("filters by labels, all must match; sorted by name; lapsed leases hidden", () => {
    const { registry, clock } = setup();
    value(registry.register(alice, peer("c", { labels: { env: "prod", role: "db" } })));
    value(registry.register(alice, peer("b", { labels: { env: "prod", role: "web" } })));
    value(registry.register(bob, peer("a", { labels: { env: "dev", role: "db" } })));
    value(registry.register(bob, peer("short", { labels: { env: "prod" }, heartbeatTtlSec: 1 })));
    const names = (filters: { key: string; value: string }[]) => registry.list(filters).map((r) => r.name);
    expect(names([])).toEqual(["a", "b", "c", "short"]);
    expect(names([{ key: "env", value: "prod" }])).toEqual(["b", "c", "short"]);
    expect(
      names([
        { key: "env", value: "prod" },
        { key: "role", value: "db" },
      ]),
    ).toEqual(["c"]);
    expect(names([{ key: "zone", value: "" }])).toEqual([]);
    expect(names([{ key: "toString", value: "x" }])).toEqual([]);
    clock.now += 1000;
    expect(names([{ key: "env", value: "prod" }])).toEqual(["b", "c"]);
  });

  test("parseLabelFilter splits at the first '=' and needs a key", () => {
    expect(parseLabelFilter("env=prod")).toEqual({ ok: true, value: { key: "env", value: "prod" } });
    expect(parseLabelFilter("expr=a=b")).toEqual({ ok: true, value: { key: "expr", value: "a=b" } });
    expect(parseLabelFilter("env=")).toEqual({ ok: true, value: { key: "env", value: "" } });
    expect(parseLabelFilter("env").ok).toBe(false);
    expect(parseLabelFilter("=prod").ok).toBe(false);
    expect(parseLabelFilter("").ok).toBe(false);
  });
});

describe("heartbeat", () => {
  test("extends the lease from now by the registration's TTL", () => {
    const { registry, clock } = setup();
    value(registry.register(alice, peer("a", { heartbeatTtlSec: 10 })));
    clock.now += 9000;
    const renewed = value(registry.heartbeat(alice, "id-1"));
    expect(renewed.expiresAt).toBe(clock.now + 10_000);
    clock.now += 9000;
    expect(registry.list().map((r) => r.name)).toEqual(["a"]);
    expect(registry.prune()).toEqual([]);
  });

  test("unknown, lapsed and someone else's ids are not found; an admin may renew any", () => {
    const { registry, clock } = setup();
    value(registry.register(alice, peer("a", { heartbeatTtlSec: 10 })));
    expect(failure(registry.heartbeat(alice, "nope")).code).toBe("not_found");
    expect(failure(registry.heartbeat(bob, "id-1")).code).toBe("not_found");
    expect(value(registry.heartbeat(root, "id-1")).owner).toBe("alice");
    clock.now += 10_000;
    expect(failure(registry.heartbeat(alice, "id-1")).code).toBe("not_found");
  });
});

describe("deregister", () => {
  test("owner or admin removes; others are forbidden; unknown ids are a no-op success", () => {
    const { registry } = setup();
    value(registry.register(alice, peer("a")));
    value(registry.register(alice, peer("b")));
    expect(failure(registry.deregister(bob, "id-1")).code).toBe("forbidden");
    expect(value(registry.deregister(alice, "id-1"))).toEqual({ removed: true });
    expect(value(registry.deregister(alice, "id-1"))).toEqual({ removed: false });
    expect(value(registry.deregister(bob, "id-1"))).toEqual({ removed: false });
    expect(value(registry.deregister(root, "id-2"))).toEqual({ removed: true });
    expect(registry.list()).toEqual([]);
  });
});

describe("prune", () => {
  test("drops exactly the lapsed leases", () => {
    const { registry, clock } = setup();
    value(registry.register(alice, peer("a", { heartbeatTtlSec: 5 })));
    value(registry.register(alice, peer("b", { heartbeatTtlSec: 50 })));
    clock.now += 4999;
    expect(registry.prune()).toEqual([]);
    clock.now += 1;
    expect(registry.prune().map((r) => r.name)).toEqual(["a"]);
    expect(registry.snapshot().map((r) => r.name)).toEqual(["b"]);
  });
});

describe("snapshot and restore", () => {
  test("round-trips ownership and ids; lapsed records dropped; clashes and bad records skipped", () => {
    const { registry, clock } = setup();
    value(registry.register(alice, peer("a", { labels: { env: "prod" }, heartbeatTtlSec: 100 })));
    value(registry.register(bob, peer("b", { heartbeatTtlSec: 10 })));
    const records = registry.snapshot();
    expect(records[0]).toEqual({
      registration_id: "id-1",
      name: "a",
      endpoint: "http://a.test:8080",
      labels: { env: "prod" },
      heartbeat_ttl_sec: 100,
      owner: "alice",
      registered_at: new Date(clock.now).toISOString(),
      expires_at: new Date(clock.now + 100_000).toISOString(),
    });
    const later = { now: clock.now + 50_000 };
    const restored = new PeerRegistry({ now: () => later.now });
    const first = records[0] as (typeof records)[number];
    const report = restored.restore([
      ...records,
      { ...first, name: "clash" },
      { ...first, registration_id: "x", name: "bad", endpoint: "/relative" },
    ]);
    expect(report.restored).toBe(1);
    expect(report.expired).toBe(1);
    expect(report.skipped).toHaveLength(2);
    expect(report.skipped.join("\n")).toContain("record 3");
    expect(report.skipped.join("\n")).not.toContain("id-1");
    const [held] = restored.list() as [PeerRegistration];
    expect(held.owner).toBe("alice");
    expect(failure(restored.deregister(bob, "id-1")).code).toBe("forbidden");
    expect(value(restored.heartbeat(alice, "id-1")).expiresAt).toBe(later.now + 100_000);
  });
});

describe("caps and limits", () => {
  const capped = (limits: { maxPerCaller?: number; maxTotal?: number; maxTtlSec?: number }) => {
    const clock = { now: 1_000_000 };
    let counter = 0;
    return { clock, registry: new PeerRegistry({ now: () => clock.now, newId: () => `id-${++counter}`, limits }) };
  };

  test("past the per-caller cap: too_many_requests naming it, retry after the caller's earliest lease", () => {
    const { registry, clock } = capped({ maxPerCaller: 2 });
    value(registry.register(alice, peer("a", { heartbeatTtlSec: 50 })));
    clock.now += 10_000;
    value(registry.register(alice, peer("b", { heartbeatTtlSec: 500 })));
    const refused = failure(registry.register(alice, peer("c")));
    expect(refused.code).toBe("too_many_requests");
    expect(refused.details).toEqual({ cap: "registrations_per_caller", limit: 2, retry_after_seconds: 40 });
    // Others are not affected, and re-registering a held name adds nothing.
    value(registry.register(bob, peer("d")));
    value(registry.register(alice, peer("a")));
    // A lapsed lease frees its place.
    clock.now += 41_000;
    value(registry.register(alice, peer("c")));
  });

  test("past the total cap: everyone is refused, but an admin may still take a name over", () => {
    const { registry } = capped({ maxTotal: 2 });
    value(registry.register(alice, peer("a")));
    value(registry.register(bob, peer("b")));
    expect(failure(registry.register(root, peer("c"))).details.cap).toBe("registrations_total");
    const taken = value(registry.register(root, peer("a")));
    expect(taken.owner).toBe("root");
    expect(registry.list().length).toBe(2);
  });

  test("a lease longer than maxTtlSec is granted as maxTtlSec", () => {
    const { registry, clock } = capped({ maxTtlSec: 60 });
    const granted = value(registry.register(alice, peer("a", { heartbeatTtlSec: 365 * 24 * 3600 })));
    expect(granted.heartbeatTtlSec).toBe(60);
    expect(granted.expiresAt).toBe(clock.now + 60_000);
  });

  test("restore cuts old leases to maxTtlSec and refuses records over the field limits or the caps", () => {
    const { registry: source } = setup();
    const year = 365 * 24 * 3600;
    value(source.register(alice, peer("long", { heartbeatTtlSec: year })));
    value(source.register(alice, peer("big")));
    value(source.register(alice, peer("third")));
    // As an older version wrote them: one-year leases and labels of any size.
    const records = source
      .snapshot()
      .map((record) => (record.name === "big" ? { ...record, labels: { note: "x".repeat(300) } } : record));
    const { registry, clock } = capped({ maxPerCaller: 1, maxTtlSec: 3600 });
    const report = registry.restore(records);
    expect(report.restored).toBe(1);
    expect(report.skipped).toEqual([
      "record 1: labels.note: a value must be at most 256 characters",
      "record 3: over the registration caps",
    ]);
    const [held] = registry.list() as [PeerRegistration];
    expect(held.name).toBe("long");
    expect(held.heartbeatTtlSec).toBe(3600);
    expect(held.expiresAt).toBe(clock.now + 3_600_000);
  });
});

describe("helpers", () => {
  test("isPeerEndpoint wants an absolute http(s) URL with a host", () => {
    for (const good of [
      "http://a.test",
      "https://a.test:8443/x?y#z",
      "http://127.0.0.1:1",
      "HTTP://A.TEST",
      "http://[::1]:80/",
    ]) {
      expect(isPeerEndpoint(good)).toBe(true);
    }
    for (const bad of [
      "",
      "/peers",
      "a.test:80",
      "ftp://a.test",
      "http:a.test",
      "http:///path",
      "http://",
      "https://?x",
      " http://a.test",
      "mailto:x@y.z",
      "file:///etc/passwd",
    ]) {
      expect(isPeerEndpoint(bad)).toBe(false);
    }
  });

  test("registration ids are 128 random bits", () => {
    const id = newRegistrationId();
    expect(id).toMatch(/^peer-[0-9a-f]{32}$/);
    expect(newRegistrationId()).not.toBe(id);
  });
});
