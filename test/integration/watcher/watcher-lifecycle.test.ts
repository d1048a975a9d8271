/**
 * The watcher's incident lifecycle end to end against the fake kube-apiserver and a real
 * `spar agent`: a crash-looping pod that turns Ready and stays so for the stable window gets
 * `resolved` in its own session, and its relapse `resolved.reverted`; a full apiserver restart
 * mid-watch loses and duplicates nothing; and the watcher reaches an mTLS apiserver through a
 * kubeconfig holding client certificates.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { startWatcher } from "../../../src/watcher/watch-runner.ts";
import { waitFor } from "../../support/daemon.ts";
import { generateCertificates, writeKubeconfig } from "../../support/kube.ts";
import { WATCHER_ENV, injectedPayloads, startTriageWatcher, triageScope } from "../../support/triage-daemon.ts";

const env = WATCHER_ENV;
const triage = triageScope();

/** Storms off: each test here follows one pod's incident. */
const watcher = (config: string, ...extra: string[]) =>
  startTriageWatcher(triage.daemon, config, ["--backoff-min-count=1", "--storm=off", ...extra], {
    recoveryTickMs: 100,
  });

const injected = (sessionId: string, count: number) => injectedPayloads(triage.daemon, sessionId, count);

const crashing = (namespace: string, name: string) => ({
  namespace,
  name,
  node: "node-a",
  containers: [
    { name: "app", image: "registry.example.com/app:v1", waitingReason: "CrashLoopBackOff", restartCount: 4 },
  ],
});

function backOff(pod: Record<string, unknown>, at = Date.now()) {
  triage.api.scenario.recordEvent({
    involvedObject: pod,
    reason: "BackOff",
    message: "Back-off restarting failed container app in pod",
    type: "Warning",
    source: { component: "kubelet", host: "node-a" },
    fieldPath: "spec.containers{app}",
    lastTimestamp: new Date(at).toISOString(),
  });
}

const fires = (log: string[], name: string) => log.filter((line) => line.includes(`fire BackOff pod=${name} `));

describe("recovery", () => {
  test("Ready for the stable window: resolved into the incident's session; the relapse: resolved.reverted into the same one", async () => {
    const { running, log } = await watcher(triage.kubeconfig, "--recovery-stable-for=2s");
    try {
      const pod = triage.api.scenario.createPod(crashing("payments", "ledger-1") as never);
      backOff(pod);
      const fired = await waitFor(() => fires(log, "payments/ledger-1")[0], 8000, "fire line");
      const sid = /sid=(\S+)/.exec(fired)?.[1] ?? "";
      // Everything the watcher had to deliver is delivered; the pod never turned Ready, so no
      // recovery window can have started.
      await running.dispatcher.idle();
      expect(log.some((line) => line.includes(" resolved CrashLoopBackOff pod=payments/ledger-1"))).toBe(false);
      triage.api.scenario.updatePod({
        namespace: "payments",
        name: "ledger-1",
        node: "node-a",
        containers: [{ name: "app", image: "registry.example.com/app:v1", restartCount: 4 }],
      } as never);
      const clearedAt = Date.now();
      await waitFor(
        () => log.find((line) => line.includes(`resolved CrashLoopBackOff pod=payments/ledger-1 → sid=${sid}`)),
        8000,
        "resolved line",
      );
      expect(Date.now() - clearedAt).toBeGreaterThanOrEqual(1900);
      triage.api.scenario.updatePod(crashing("payments", "ledger-1") as never);
      backOff(pod, Date.now() + 1000);
      await waitFor(
        () =>
          log.find((line) => line.includes(`resolved.reverted CrashLoopBackOff pod=payments/ledger-1 → sid=${sid}`)),
        8000,
        "reverted line",
      );
      await running.dispatcher.idle();
      const payloads = await injected(sid, 3);
      expect(payloads.map((payload) => payload.kind)).toEqual(["cluster-event", "resolved", "resolved.reverted"]);
      expect(payloads[1]).toMatchObject({
        kind: "resolved",
        name: "ledger-1",
        namespace: "payments",
        cluster: "kind-test",
        resolution: "recovered",
      });
      expect(payloads[2]).toMatchObject({ kind: "resolved.reverted", name: "ledger-1", cluster: "kind-test" });
      expect(fires(log, "payments/ledger-1")).toHaveLength(1);
      expect(running.metrics.render()).toContain('watcher_recoveries_reverted_total{cluster="kind-test"} 1');
    } finally {
      await running.stop();
    }
  }, 30_000);
});

describe("apiserver restart", () => {
  test("a full restart mid-watch: incidents before, during and after each fire exactly once", async () => {
    const { running, log } = await watcher(triage.kubeconfig, "--recovery-stable-for=0");
    try {
      const before = triage.api.scenario.createPod(crashing("restart", "before-1") as never);
      backOff(before);
      await waitFor(() => fires(log, "restart/before-1")[0], 8000, "fire before the restart");
      const restarting = triage.api.restart({ keepState: true, downtimeMs: 1500 });
      // Down: connections are refused until the restart ends.
      await waitFor(
        () =>
          fetch(triage.api.url).then(
            async (answer) => {
              await answer.arrayBuffer();
              return undefined;
            },
            () => true,
          ),
        5000,
        "the apiserver down",
      );
      // Recorded while the server is down: the re-list after the restart must deliver it.
      backOff(triage.api.scenario.createPod(crashing("restart", "during-1") as never));
      backOff(before, Date.now() + 1000);
      await restarting;
      await waitFor(() => fires(log, "restart/during-1")[0], 15_000, "fire of the event recorded during the downtime");
      backOff(triage.api.scenario.createPod(crashing("restart", "after-1") as never));
      await waitFor(() => fires(log, "restart/after-1")[0], 10_000, "fire after the restart");
      await running.dispatcher.idle();
      expect(log.some((line) => line.includes("cluster-events: watch failed"))).toBe(true);
      expect(fires(log, "restart/before-1")).toHaveLength(1);
      expect(fires(log, "restart/during-1")).toHaveLength(1);
      expect(fires(log, "restart/after-1")).toHaveLength(1);
      expect(log.some((line) => line.includes("dedup BackOff pod=restart/before-1 (count=2"))).toBe(true);
    } finally {
      await running.stop();
    }
  }, 40_000);
});

describe("access re-check", () => {
  test("revoked twice in a row: an optional grant degrades with a warning, a required one emits sentinel.access_revoked and stops the runner", async () => {
    const printed: string[] = [];
    const parsed = watcherConfigFromArgv([
      "--dry-run",
      `--kubeconfig=${triage.kubeconfig}`,
      "--cluster-name=kind-test",
      // Only cluster-events: the grant sets below are about events and the storm graph, not other sources.
      "--sources=cluster-events",
      "--storm=auto",
      // Only cluster-events: the built sources' own grants are not what this test revokes.
      "--sources=cluster-events",
      "--recovery-stable-for=0",
      // Warnings go to the watchboard (D418): a digest per warning, printed at once.
      "--watchboard-batch=1",
      "--access-recheck=150ms",
    ]);
    if (!parsed.ok) throw new Error(parsed.error);
    const log: string[] = [];
    const running = await startWatcher(
      parsed.value,
      createLogger("debug", (line) => log.push(line)),
      { env, stdout: (text) => printed.push(text) },
    );
    const revoked = (severity: string) =>
      printed.filter(
        (text) => text.includes('"kind": "sentinel.access_revoked"') && text.includes(`"severity": "${severity}"`),
      );
    const names = (texts: string[]) => texts.map((text) => /"name": "([^"]+)"/.exec(text)?.[1]).sort();
    try {
      await waitFor(() => (running.ready() ? true : undefined), 8000, "synced");
      const all = ["get", "list", "watch", "create"];
      triage.api.scenario.setGrants([
        { verbs: all, resources: ["events", "pods", "replicasets", "selfsubjectaccessreviews"] },
      ]);
      await waitFor(() => (revoked("warning").length >= 2 ? true : undefined), 8000, "optional revocation");
      expect(names(revoked("warning"))).toEqual(["list nodes cluster-wide", "watch nodes cluster-wide"]);
      expect(
        log.some(
          (line) =>
            line.includes('access re-check: permission "list nodes cluster-wide" denied on two consecutive sweeps') &&
            line.includes("optional, degraded"),
        ),
      ).toBe(true);
      expect(running.ready()).toBe(true);
      expect(revoked("critical")).toEqual([]);
      triage.api.scenario.setGrants([{ verbs: all, resources: ["pods", "replicasets", "selfsubjectaccessreviews"] }]);
      await waitFor(() => (running.accessRevoked() ? true : undefined), 8000, "runner stopped");
      expect(names(revoked("critical"))).toEqual(["list events cluster-wide", "watch events cluster-wide"]);
      expect(revoked("critical")[0]).toContain('"cluster": "kind-test"');
      expect(running.ready()).toBe(false);
      expect(log.some((line) => line.includes("required, stopping the runner"))).toBe(true);
      // The sweep that stopped the runner printed its pages before stopping it, and a stopped
      // runner sweeps no more (AccessSweeper): the counts below are final.
      expect(revoked("critical")).toHaveLength(2);
      expect(revoked("warning")).toHaveLength(2);
      expect(running.metrics.render()).toMatch(
        /watcher_access_rechecks_total\{cluster="kind-test",outcome="denied"\} [1-9]/,
      );
    } finally {
      triage.api.scenario.setGrants(undefined);
      await running.stop();
    }
  }, 30_000);
});

describe("mTLS", () => {
  test("a kubeconfig with client certificates reaches an apiserver that requires them; one without is refused", async () => {
    const certs = generateCertificates(join(triage.dir, "pki"), { user: "system:serviceaccount:agent-triage:watcher" });
    const secure = await startFakeApiserver({
      tls: { cert: certs.serverCert, key: certs.serverKey, clientCa: certs.caCert },
      clientCertificateUser: "watcher",
    });
    try {
      const mtlsConfig = writeKubeconfig(join(triage.dir, "kubeconfig-mtls"), {
        server: secure.url,
        caPem: certs.caCert,
        clientCertPem: certs.clientCert,
        clientKeyPem: certs.clientKey,
        name: "secure",
      });
      const { running, log } = await watcher(mtlsConfig, "--recovery-stable-for=0");
      try {
        const pod = secure.scenario.createPod({
          namespace: "vault",
          name: "unsealer-1",
          node: "node-a",
          containers: [{ name: "app", waitingReason: "CrashLoopBackOff", restartCount: 2 }],
        } as never);
        secure.scenario.recordEvent({
          involvedObject: pod,
          reason: "BackOff",
          message: "Back-off restarting failed container app in pod",
          type: "Warning",
          source: { host: "node-a" },
          fieldPath: "spec.containers{app}",
        });
        const fired = await waitFor(() => fires(log, "vault/unsealer-1")[0], 8000, "fire over mTLS");
        const [payload] = await injected(/sid=(\S+)/.exec(fired)?.[1] ?? "", 1);
        expect(payload).toMatchObject({
          kind: "cluster-event",
          reason: "BackOff",
          cluster: "kind-test",
          namespace: "vault",
          name: "unsealer-1",
        });
        expect(String((payload?.enrichment as { bundle?: string } | undefined)?.bundle)).toContain(
          "kind=spec.container",
        );
        expect(
          secure.requests().some((request) => request.user === "watcher" && request.path === "/api/v1/events"),
        ).toBe(true);
      } finally {
        await running.stop();
      }
      const noClientCert = writeKubeconfig(join(triage.dir, "kubeconfig-nocert"), {
        server: secure.url,
        caPem: certs.caCert,
        name: "secure",
      });
      const parsed = watcherConfigFromArgv(["--dry-run", `--kubeconfig=${noClientCert}`, "--storm=off"]);
      if (!parsed.ok) throw new Error(parsed.error);
      await expect(
        startWatcher(
          parsed.value,
          createLogger("error", () => {}),
          { env },
        ),
      ).rejects.toThrow("access review");
    } finally {
      await secure.stop();
    }
  }, 30_000);
});
