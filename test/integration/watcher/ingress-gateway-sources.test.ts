/**
 * The ingress and gateway sources (D386-D387) in the watcher against the fake apiserver:
 * ingress pages a Warning `Sync` event on an Ingress (not the one listed at start, not a Normal
 * one); gateway pages a Gateway whose Programmed condition stayed False past `--gateway-grace`,
 * not before, and a rejected HTTPRoute; without the Gateway API, `auto` starts, says why gateway
 * is off and is ready, while naming gateway refuses startup; RBAC denied: auto disables gateway
 * with one line, naming ingress or gateway refuses naming the grant.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { gateway, httpRoute } from "../../../scripts/fake-apiserver/builders-edge.ts";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { waitFor } from "../../support/daemon.ts";

let api: FakeApiserver;
beforeAll(async () => {
  api = await startFakeApiserver({ withoutApis: ["gateway.networking.k8s.io/v1"] });
});
afterAll(() => api.stop());

async function watcher(args: string[], lines: string[] = [], printed: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=edge-test",
    "--storm=off",
    "--recovery-stable-for=0",
    // Warnings go to the watchboard (D418): a digest per warning, printed at once.
    "--watchboard-batch=1",
    "--access-recheck=0",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return startWatcher(
    parsed.value,
    createLogger("info", (line) => lines.push(line)),
    {
      connection: { server: api.url, tls: {}, token: () => undefined },
      stdout: (text) => printed.push(text),
      env: {},
    },
  );
}

const ingress = { kind: "Ingress", namespace: "shop", name: "web", uid: "uid-ingress-web" };

describe("ingress", () => {
  test("a Warning Sync on an Ingress pages ingress.sync_failed; the listed history and Normal events do not", async () => {
    api.scenario.recordEvent({ involvedObject: ingress, reason: "Sync", type: "Warning", message: "old failure" });
    const printed: string[] = [];
    const running = await watcher(["--sources=cluster-events,ingress"], [], printed);
    try {
      await waitFor(() => (running.ready() ? true : undefined), 5000, "ready");
      api.scenario.recordEvent({ involvedObject: ingress, reason: "Sync", type: "Normal", message: "synced" });
      api.scenario.recordEvent({
        involvedObject: ingress,
        reason: "Sync",
        type: "Warning",
        message: "Error syncing to GCP: googleapi: Error 400",
        distinct: true,
      });
      const page = await waitFor(
        () => printed.find((text) => text.includes('"kind": "ingress.sync_failed"')),
        8000,
        "the sync failure's payload",
      );
      await running.dispatcher.idle();
      expect(page).toContain('"reason": "sync_failed"');
      expect(page).toContain('"kind_of_object": "Ingress"');
      expect(page).toContain("Error syncing to GCP");
      expect(printed.filter((text) => text.includes("ingress.sync_failed"))).toHaveLength(1);
      expect(printed.some((text) => text.includes("old failure"))).toBe(false);
    } finally {
      await running.stop();
    }
  });

  test("named without list and watch on events: startup refuses naming the grant", async () => {
    api.scenario.setGrants([{ verbs: ["create"], apiGroups: ["authorization.k8s.io"], resources: ["*"] }]);
    try {
      const refused = await watcher(["--sources=ingress"]).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StartupRefusal);
      expect((refused as Error).message).toContain(
        'source "ingress" requires permission to "list events cluster-wide"',
      );
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});

describe("gateway", () => {
  test("without the Gateway API: auto starts, says why gateway is off and is ready; named, startup refuses", async () => {
    const lines: string[] = [];
    const running = await watcher(["--sources=auto"], lines);
    try {
      expect(lines.filter((line) => line.includes("source gateway:"))).toEqual([
        expect.stringContaining(
          "source gateway: disabled (gateway.networking.k8s.io/v1 unavailable — install the Gateway API CRDs)",
        ),
      ]);
      const resolved = lines.find((line) => line.includes("sources: auto resolved → ")) ?? "";
      const enabled = resolved.split("→ ")[1]?.split(" ")[0]?.split(",") ?? [];
      expect(enabled).toContain("ingress");
      expect(enabled).not.toContain("gateway");
      await waitFor(() => (running.ready() ? true : undefined), 5000, "ready");
    } finally {
      await running.stop();
    }
    const refused = await watcher(["--sources=cluster-events,gateway"]).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StartupRefusal);
    expect((refused as Error).message).toContain(
      'source "gateway" needs the gateway.networking.k8s.io/v1 API (gateways or httproutes), which this cluster does not serve',
    );
  });

  test("served: Programmed=False pages after --gateway-grace, not before; a rejected HTTPRoute pages too", async () => {
    api.scenario.setApiServed("gateway.networking.k8s.io/v1", true);
    const printed: string[] = [];
    const running = await watcher(["--sources=cluster-events,gateway", "--gateway-grace=1500ms"], [], printed);
    try {
      await waitFor(() => (running.ready() ? true : undefined), 5000, "ready");
      const transition = Date.now();
      api.scenario.create(
        gateway({
          namespace: "shop",
          name: "public",
          generation: 3,
          conditions: [
            { type: "Accepted", status: "True", reason: "Accepted", observedGeneration: 3 },
            {
              type: "Programmed",
              status: "False",
              reason: "AddressNotAssigned",
              message: "no load balancer address",
              observedGeneration: 3,
              lastTransitionTime: new Date(transition).toISOString(),
            },
          ],
        }),
      );
      api.scenario.create(
        httpRoute({
          namespace: "shop",
          name: "store",
          generation: 1,
          parents: [
            {
              gateway: "public",
              conditions: [
                {
                  type: "Accepted",
                  status: "False",
                  reason: "NotAllowedByListeners",
                  observedGeneration: 1,
                  lastTransitionTime: new Date(transition - 60_000).toISOString(),
                },
              ],
            },
          ],
        }),
      );
      const route = await waitFor(
        () => printed.find((text) => text.includes('"kind": "gateway.route_rejected"')),
        8000,
        "the rejected route's payload",
      );
      expect(route).toContain("parent public Accepted=False (NotAllowedByListeners)");
      const page = await waitFor(
        () => printed.find((text) => text.includes('"kind": "gateway.programming_failed"')),
        8000,
        "the programming failure's payload",
      );
      const firstSeen = Date.parse(/"first_seen": "([^"]+)"/.exec(page)?.[1] ?? "");
      expect(firstSeen - Math.floor(transition / 1000) * 1000).toBeGreaterThanOrEqual(1500);
      expect(page).toContain("Programmed=False (AddressNotAssigned: no load balancer address)");
      expect(page).toContain('"severity": "warning"');
    } finally {
      await running.stop();
    }
  });

  test("served but not granted: auto disables gateway with one line naming the grant; named, startup refuses", async () => {
    api.scenario.setApiServed("gateway.networking.k8s.io/v1", true);
    api.scenario.setGrants([
      {
        verbs: ["get", "list", "watch", "create"],
        apiGroups: ["", "authorization.k8s.io", "admissionregistration.k8s.io"],
        resources: ["*"],
      },
    ]);
    try {
      const lines: string[] = [];
      const running = await watcher(["--sources=auto"], lines);
      await running.stop();
      expect(lines.filter((line) => line.includes("source gateway:"))).toEqual([
        expect.stringContaining(
          'source gateway: disabled (missing "list gateways.gateway.networking.k8s.io cluster-wide" — grant it, or name it in --sources to make this fatal)',
        ),
      ]);
      const refused = await watcher(["--sources=gateway"]).catch((error: unknown) => error);
      expect((refused as Error).message).toContain(
        'source "gateway" requires permission to "list gateways.gateway.networking.k8s.io cluster-wide"',
      );
    } finally {
      api.scenario.setGrants(undefined);
    }
  });
});
