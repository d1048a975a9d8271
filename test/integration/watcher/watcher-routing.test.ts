/**
 * Severity routing end to end (D418-D421) against the fake apiserver and a real `spar agent`:
 * twenty warnings arrive as one watchboard digest in one session, by a full batch or by the flush age; the board rotates after
 * `--watchboard-rotate` digests into a successor named by `watchboard.rotated`; info lands in the
 * occurrence store only; a critical opens its session, resolves, and its recurrence soon after
 * opens a new session with `triage.regressed` naming the one that resolved it.
 */
import { describe, expect, test } from "bun:test";
import { join } from "node:path";
import { OccurrenceStore } from "../../../src/watcher/occurrence-store.ts";
import { waitFor } from "../../support/daemon.ts";
import { ONCALL_TOKEN, injectedPayloads, startTriageWatcher, triageScope } from "../../support/triage-daemon.ts";

const triage = triageScope();

const watcher = (...extra: string[]) =>
  startTriageWatcher(triage.daemon, triage.kubeconfig, ["--backoff-min-count=1", "--storm=off", ...extra], {
    recoveryTickMs: 100,
  });

async function ownerSessions(): Promise<string[]> {
  const listed = (await (
    await fetch(`${triage.daemon.baseUrl}/sessions`, { headers: { authorization: `Bearer ${ONCALL_TOKEN}` } })
  ).json()) as { sessions: Array<{ sessionID: string }> };
  return listed.sessions.map((session) => session.sessionID).filter((id) => id.startsWith("sess-"));
}

const crashing = (namespace: string, name: string) => ({
  namespace,
  name,
  node: "node-a",
  containers: [
    { name: "app", image: "registry.example.com/app:v1", waitingReason: "CrashLoopBackOff", restartCount: 4 },
  ],
});

function crashLoop(namespace: string, name: string, at = Date.now()) {
  const pod = triage.api.scenario.createPod(crashing(namespace, name) as never);
  backOff(pod, at);
  return pod;
}

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

describe("the watchboard", () => {
  test("twenty warnings arrive as one digest in one board session (--watchboard-batch=20); no incident opens", async () => {
    const before = await ownerSessions();
    const { running, log } = await watcher("--severity=cluster-event=warning", "--watchboard-batch=20");
    try {
      for (let index = 1; index <= 20; index++) crashLoop("board", `web-${index}`);
      const line = await waitFor(
        () => log.find((text) => text.includes("watchboard: digest of 20 → sid=")),
        15_000,
        "the digest",
      );
      const sid = /sid=(\S+)/.exec(line)?.[1] ?? "";
      await running.dispatcher.idle();
      expect((await ownerSessions()).filter((id) => !before.includes(id))).toEqual([sid]);
      const [digest] = await injectedPayloads(triage.daemon, sid, 1);
      expect(digest).toMatchObject({
        kind: "watchboard.digest",
        cluster: "kind-test",
        board_generation: 1,
        sequence: 1,
      });
      const entries = (digest?.entries ?? []) as Array<Record<string, unknown>>;
      expect(entries.map((entry) => entry.name).sort()).toEqual(
        Array.from({ length: 20 }, (_, index) => `web-${index + 1}`).sort(),
      );
      expect(entries[0]).toMatchObject({ kind: "cluster-event", reason: "BackOff", severity: "warning", count: 1 });
      expect(log.some((text) => text.includes("fire BackOff"))).toBe(false);
    } finally {
      await running.stop();
    }
  }, 30_000);

  test("below the batch, the flush age delivers: twenty warnings within --watchboard-flush are one digest", async () => {
    const before = await ownerSessions();
    const { running, log } = await watcher(
      "--severity=cluster-event=warning",
      "--watchboard-batch=50",
      "--watchboard-flush=5s",
    );
    try {
      const started = Date.now();
      for (let index = 1; index <= 20; index++) crashLoop("aged", `job-${index}`);
      const line = await waitFor(
        () => log.find((text) => text.includes("watchboard: digest of")),
        15_000,
        "the aged digest",
      );
      expect(Date.now() - started).toBeGreaterThanOrEqual(4900);
      expect(line).toContain("watchboard: digest of 20 → sid=");
      const sid = /sid=(\S+)/.exec(line)?.[1] ?? "";
      expect((await ownerSessions()).filter((id) => !before.includes(id))).toEqual([sid]);
      const [digest] = await injectedPayloads(triage.daemon, sid, 1);
      expect((digest?.entries as unknown[]).length).toBe(20);
    } finally {
      await running.stop();
    }
  }, 30_000);

  test("after --watchboard-rotate digests the next opens a successor; the old board hears watchboard.rotated", async () => {
    const before = await ownerSessions();
    const { running, log } = await watcher(
      "--severity=cluster-event=warning",
      "--watchboard-batch=1",
      "--watchboard-rotate=2",
    );
    try {
      for (let index = 1; index <= 3; index++) {
        crashLoop("rotate", `api-${index}`);
        await waitFor(
          () => (log.filter((text) => text.includes("watchboard: digest of 1")).length >= index ? true : undefined),
          8000,
          `digest ${index}`,
        );
      }
      await running.dispatcher.idle();
      const fresh = (await ownerSessions()).filter((id) => !before.includes(id));
      expect(fresh).toHaveLength(2);
      const first = /rotated sid=(\S+) → sid=(\S+)/.exec(
        log.find((text) => text.includes("watchboard: rotated")) ?? "",
      );
      const [oldBoard, successor] = [first?.[1] ?? "", first?.[2] ?? ""];
      expect(fresh.sort()).toEqual([oldBoard, successor].sort());
      const old = await injectedPayloads(triage.daemon, oldBoard, 3);
      expect(old.map((payload) => [payload.kind, payload.sequence])).toEqual([
        ["watchboard.digest", 1],
        ["watchboard.digest", 2],
        ["watchboard.rotated", undefined],
      ]);
      expect(old[2]).toMatchObject({ board_generation: 1, successor_session_id: successor, injects_count: 2 });
      const next = await injectedPayloads(triage.daemon, successor, 1);
      expect(next).toEqual([expect.objectContaining({ kind: "watchboard.digest", board_generation: 2, sequence: 1 })]);
    } finally {
      await running.stop();
    }
  }, 30_000);
});

test("info goes to the occurrence store only: no session opens", async () => {
  const store = join(triage.dir, "info-store.db");
  const before = await ownerSessions();
  const { running, log } = await watcher("--severity=cluster-event=info", `--store=${store}`);
  try {
    crashLoop("info", "batch-1");
    await waitFor(() => log.find((text) => text.includes("info cluster-event Pod=info/batch-1")), 8000, "info line");
    await running.dispatcher.idle();
  } finally {
    await running.stop();
  }
  expect((await ownerSessions()).filter((id) => !before.includes(id))).toEqual([]);
  const rows = new OccurrenceStore({ path: store, maxBytes: 1 << 20, ttlMs: 3_600_000 });
  try {
    expect(rows.rows()).toEqual([
      expect.objectContaining({ route: "info-stored", severity: "info", name: "batch-1", kind: "cluster-event" }),
    ]);
  } finally {
    rows.close();
  }
}, 30_000);

test("a critical opens its session; once resolved, its recurrence soon after opens triage.regressed naming that session", async () => {
  const { running, log } = await watcher(
    "--recovery-stable-for=1s",
    "--dedup-window=1s",
    "--triage-regress-factor=3",
    `--store=${join(triage.dir, "regress-store.db")}`,
  );
  try {
    const pod = crashLoop("regress", "ledger-1");
    const fired = await waitFor(
      () => log.find((text) => text.includes("fire BackOff pod=regress/ledger-1")),
      8000,
      "fire line",
    );
    const sid = /sid=(\S+)/.exec(fired)?.[1] ?? "";
    triage.api.scenario.updatePod({
      namespace: "regress",
      name: "ledger-1",
      node: "node-a",
      containers: [{ name: "app", image: "registry.example.com/app:v1", restartCount: 4 }],
    } as never);
    await waitFor(
      () => log.find((text) => text.includes(`resolved CrashLoopBackOff pod=regress/ledger-1 → sid=${sid}`)),
      8000,
      "resolved line",
    );
    // Past the revert window (the tracker lets go), inside 3x the incident's duration.
    await waitFor(() => (running.dispatcher.recovery.size === 0 ? true : undefined), 8000, "revert window over");
    triage.api.scenario.updatePod(crashing("regress", "ledger-1") as never);
    backOff(pod, Date.now() + 1000);
    const regressed = await waitFor(
      () => log.find((text) => text.includes("fire BackOff pod=regress/ledger-1") && !text.includes(sid)),
      8000,
      "the regression's open",
    );
    const next = /sid=(\S+)/.exec(regressed)?.[1] ?? "";
    const [payload] = await injectedPayloads(triage.daemon, next, 1);
    expect(payload).toMatchObject({
      kind: "triage.regressed",
      signal_kind: "cluster-event",
      reason: "BackOff",
      name: "ledger-1",
      cluster: "kind-test",
      triage_status: "resolved",
      triage_session: sid,
      factor: 3,
    });
    const kinds = (await injectedPayloads(triage.daemon, sid, 2)).map((one) => one.kind);
    expect(kinds).toEqual(["cluster-event", "resolved"]);
  } finally {
    await running.stop();
  }
}, 40_000);
