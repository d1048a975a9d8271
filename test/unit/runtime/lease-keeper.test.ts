/**
 * LeaseKeeper (D487) against an in-process SessionCluster whose calls the test controls: a renewal
 * that never answers (a partition: the socket stays open, nothing comes back) still stops this
 * daemon serving its sessions after two thirds of the lease, before another daemon can take them
 * (D525); and an acquire that follows a release of the same session waits for the release, so the
 * release's delete cannot land after the new lease and leave a session served without one (D526).
 */
import { expect, test } from "bun:test";
import type { LeaseOutcome, PendingCommand, SessionCluster } from "../../../src/core/session-cluster.ts";
import type { SessionKey } from "../../../src/core/session-key.ts";
import { LeaseKeeper } from "../../../src/runtime/lease-keeper.ts";
import { waitFor } from "../../support/daemon.ts";

/** A cluster of one: every call is recorded; `renew` and `release` answer when the test says. */
class FakeCluster implements SessionCluster {
  readonly daemonId = "me";
  readonly calls: string[] = [];
  /** Leases in the fake database: session name -> holder. */
  readonly leases = new Map<string, string>();
  renew: () => Promise<void> = async () => {};
  release: () => Promise<void> = async () => {};

  async keepAlive(): Promise<void> {}
  async acquireLease(key: SessionKey): Promise<LeaseOutcome> {
    this.calls.push(`acquire ${key.id}`);
    this.leases.set(key.id, this.daemonId);
    return { held: true, holder: this.daemonId };
  }
  async renewLeases(): Promise<SessionKey[]> {
    await this.renew();
    return [...this.leases].filter(([, holder]) => holder === this.daemonId).map(([id]) => ({ app: "a", id }));
  }
  async releaseLease(key: SessionKey): Promise<void> {
    this.calls.push(`release ${key.id} begun`);
    await this.release();
    this.leases.delete(key.id);
    this.calls.push(`release ${key.id} done`);
  }
  async lapsedLeases(): Promise<SessionKey[]> {
    return [];
  }
  async postCommand(): Promise<number> {
    return 0;
  }
  async pendingCommands(): Promise<PendingCommand[]> {
    return [];
  }
  async completeCommand(): Promise<void> {}
  async commandResult(): Promise<string | undefined> {
    return undefined;
  }
  async pruneAnswered(): Promise<void> {}
  async listen(): Promise<() => Promise<void>> {
    return async () => {};
  }
}

const key = (id: string): SessionKey => ({ app: "a", id });

test("a renewal that never answers (a partition) still drops every held session within two thirds of the lease", async () => {
  const cluster = new FakeCluster();
  const lost: { keys: SessionKey[]; why: string }[] = [];
  const keeper = new LeaseKeeper(
    cluster,
    { ttlMs: 600 },
    { lost: (keys, why) => lost.push({ keys, why }), warn: () => {} },
  );
  await keeper.start();
  await keeper.acquire(key("s1"));
  await keeper.acquire(key("s2"));
  const started = performance.now();
  // From now on every renewal hangs: its statement went out and nothing comes back.
  cluster.renew = () => new Promise<void>(() => {});
  await waitFor(() => (lost.length > 0 ? true : undefined), 3_000, "the sessions dropped");
  const after = performance.now() - started;
  // Dropped before the lease (600 ms) can lapse at the database and another daemon take them.
  expect(after).toBeLessThan(600);
  expect(lost).toHaveLength(1);
  expect(lost[0]?.keys.map((k) => k.id).sort()).toEqual(["s1", "s2"]);
  expect(lost[0]?.why).toContain("could not be renewed");
  expect(keeper.heldCount).toBe(0);
  await keeper.close(() => false);
});

test("an acquire right after a release of the same session waits for the release to finish", async () => {
  const cluster = new FakeCluster();
  const keeper = new LeaseKeeper(cluster, { ttlMs: 60_000 }, { lost: () => {}, warn: () => {} });
  await keeper.start();
  await keeper.acquire(key("s1"));
  let finishRelease = () => {};
  cluster.release = () => new Promise<void>((resolve) => (finishRelease = resolve));
  // Evicted idle (release not awaited), and at once a request needs the session again.
  const released = keeper.release(key("s1"), false);
  const acquired = keeper.acquire(key("s1"));
  await Bun.sleep(0);
  finishRelease();
  await Promise.all([released, acquired]);
  cluster.release = async () => {};
  expect(cluster.calls).toEqual(["acquire s1", "release s1 begun", "release s1 done", "acquire s1"]);
  // The lease is in the database and held: the session is served with its lease.
  expect(cluster.leases.get("s1")).toBe("me");
  expect(keeper.holds(key("s1"))).toBe(true);
  await keeper.close(() => false);
});

test("a stop cut off from the database gives its leases back within its budget, not never", async () => {
  const cluster = new FakeCluster();
  const keeper = new LeaseKeeper(cluster, { ttlMs: 60_000 }, { lost: () => {}, warn: () => {} });
  await keeper.start();
  await keeper.acquire(key("s1"));
  // The release's statement goes out and nothing comes back (a partition at the stop).
  cluster.release = () => new Promise<void>(() => {});
  const started = performance.now();
  await keeper.close(() => true, 200);
  expect(performance.now() - started).toBeLessThan(2_000);
  expect(keeper.heldCount).toBe(0);
});
