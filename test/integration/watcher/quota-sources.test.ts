/**
 * The quota source (D398-D399) against the fake apiserver: ResourceQuotas listed cluster-wide
 * through the portable provider, judged on a clock the test moves: 89% is quiet, 90% warns, 98%
 * is critical, back under 90% clears and 90% pages again; a growth whose ETA is under 7d warns
 * from the 4th poll; in the watcher, the first poll pages a quota already full; named in
 * --sources with list resourcequotas denied, startup refuses naming the grant; `auto` never
 * enables it.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { QUOTA_DEFAULTS } from "../../../src/watcher/core/sources/quota-detector.ts";
import { QuotaSource, ResourceQuotaProvider } from "../../../src/watcher/sources/quota-source.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { waitFor } from "../../support/daemon.ts";

const DAY = 24 * 3600_000;
const T0 = Date.parse("2026-11-01T00:00:00Z");
let api: FakeApiserver;
const connection = () => ({ server: api.url, tls: {}, token: () => undefined });

beforeAll(async () => {
  api = await startFakeApiserver();
});
afterAll(() => api.stop());

function cpuQuota(namespace: string, name: string, used: string, hard = "2") {
  api.scenario.applyResourceQuota({ namespace, name, hard: { "requests.cpu": hard }, used: { "requests.cpu": used } });
}

/** A QuotaSource on the fake apiserver whose polls the test runs at the clock it sets. */
function source() {
  const clock = { now: T0 };
  const emitted: Signal[] = [];
  const quota = new QuotaSource(
    { emit: (signal) => emitted.push(signal), logger: createLogger("error"), now: () => clock.now },
    new ResourceQuotaProvider(connection()),
    QUOTA_DEFAULTS,
  );
  const poll = async (at: number) => {
    clock.now = at;
    const before = emitted.length;
    await quota.poll();
    return emitted.slice(before).map((signal) => `${signal.uid}:${signal.severity}`);
  };
  return { quota, poll, emitted };
}

describe("quota against the fake apiserver", () => {
  test("usage thresholds: 89% quiet, 90% warns, 98% critical, back under 90% clears, 90% pages again", async () => {
    const { poll, emitted } = source();
    cpuQuota("shop", "compute", "1780m");
    expect(await poll(T0)).toEqual([]);
    cpuQuota("shop", "compute", "1800m");
    expect(await poll(T0 + 60_000)).toEqual(["quota:shop/compute/requests.cpu:warning"]);
    expect(emitted[0]?.message).toStartWith("ResourceQuota shop/compute requests.cpu at 90.0% (used 1800m of 2)");
    expect(await poll(T0 + 120_000)).toEqual([]);
    cpuQuota("shop", "compute", "1960m");
    expect(await poll(T0 + 180_000)).toEqual(["quota:shop/compute/requests.cpu:critical"]);
    cpuQuota("shop", "compute", "1");
    expect(await poll(T0 + 240_000)).toEqual([]);
    cpuQuota("shop", "compute", "1.8");
    expect(await poll(T0 + 300_000)).toEqual(["quota:shop/compute/requests.cpu:warning"]);
    api.scenario.delete({ apiVersion: "v1", kind: "ResourceQuota", namespace: "shop", name: "compute" });
  });

  test("growth: a limit reached within 7d at the fitted slope warns at the 4th poll, not before", async () => {
    const { poll, emitted } = source();
    const days = ["10Gi", "12Gi", "14Gi", "16Gi"];
    for (const [day, used] of days.entries()) {
      api.scenario.applyResourceQuota({
        namespace: "ci",
        name: "storage",
        hard: { "requests.storage": "20Gi", persistentvolumeclaims: "50" },
        used: { "requests.storage": used, persistentvolumeclaims: "3" },
      });
      const fired = await poll(T0 + day * DAY);
      expect(fired).toEqual(day < 3 ? [] : ["quota:ci/storage/requests.storage:warning"]);
    }
    expect(emitted.at(-1)?.message).toContain("growing 2Gi/day over the last 72h0m0s (4 points)");
    expect(emitted.at(-1)?.message).toContain("the limit is reached in ~2.0d at this slope");
    api.scenario.delete({ apiVersion: "v1", kind: "ResourceQuota", namespace: "ci", name: "storage" });
  });

  test("a failed list judges nothing and is logged once until it answers again", async () => {
    const lines: string[] = [];
    const emitted: Signal[] = [];
    const quota = new QuotaSource(
      { emit: (signal) => emitted.push(signal), logger: createLogger("info", (line) => lines.push(line)) },
      new ResourceQuotaProvider(connection()),
      QUOTA_DEFAULTS,
    );
    cpuQuota("shop", "full", "2");
    api.faults.failNext({ code: 500, count: 2, path: "/api/v1/resourcequotas" });
    await quota.poll();
    await quota.poll();
    expect(quota.lastError).toContain("HTTP 500");
    expect(lines.filter((line) => line.includes("poll failed"))).toHaveLength(1);
    expect(emitted).toEqual([]);
    await quota.poll();
    expect(quota.lastError).toBeUndefined();
    expect(lines.some((line) => line.includes("source quota/resourcequotas: poll answers again"))).toBe(true);
    expect(emitted.map((signal) => signal.severity)).toEqual(["critical"]);
    api.scenario.delete({ apiVersion: "v1", kind: "ResourceQuota", namespace: "shop", name: "full" });
  });
});

async function watcher(args: string[], lines: string[], printed: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=quota-test",
    "--storm=off",
    "--recovery-stable-for=0",
    "--access-recheck=0",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return startWatcher(
    parsed.value,
    createLogger("info", (line) => lines.push(line)),
    { connection: connection(), stdout: (text) => printed.push(text), env: {} },
  );
}

describe("quota in the watcher", () => {
  test("named: enabled, and the first poll pages a quota already at its limit", async () => {
    api.scenario.applyResourceQuota({ namespace: "batch", name: "counts", hard: { pods: "10" }, used: { pods: "10" } });
    const lines: string[] = [];
    const printed: string[] = [];
    const running = await watcher(["--sources=cluster-events,quota"], lines, printed);
    try {
      expect(lines).toContainEqual(expect.stringContaining("source quota: enabled"));
      const page = await waitFor(
        () => printed.find((text) => text.includes('"kind": "quota.forecast"')),
        8000,
        "the quota's payload",
      );
      expect(page).toContain('"uid": "quota:batch/counts/pods"');
      expect(page).toContain('"severity": "critical"');
      expect(page).toContain('"kind_of_object": "ResourceQuota"');
      expect(running.ready()).toBe(true);
    } finally {
      await running.stop();
      api.scenario.delete({ apiVersion: "v1", kind: "ResourceQuota", namespace: "batch", name: "counts" });
    }
  });

  test("auto never enables it; named with list resourcequotas denied, startup refuses naming the grant", async () => {
    const lines: string[] = [];
    const auto = await watcher(["--sources=auto"], lines);
    await auto.stop();
    const resolved = lines.find((line) => line.includes("sources: auto resolved → ")) ?? "";
    expect(resolved.split("→ ")[1]?.split(" ")[0]?.split(",") ?? []).not.toContain("quota");
    expect(resolved).toContain("quota, notifications and token-burn stay explicit-only");
    api.scenario.setGrants([
      { verbs: ["get", "list", "watch", "create"], resources: ["events", "selfsubjectaccessreviews"] },
    ]);
    try {
      const refused = await watcher(["--sources=cluster-events,quota"], []).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StartupRefusal);
      expect(String((refused as Error).message)).toContain(
        'source "quota" requires permission to "list resourcequotas cluster-wide"',
      );
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});
