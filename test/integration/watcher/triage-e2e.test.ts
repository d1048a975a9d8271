/**
 * The propose-only triage flow end to end on real processes (issue 33): the fake apiserver's
 * scenario makes a pod fail to pull its image; `spar watcher watch` (its own process) injects the
 * incident into `spar agent` (its own process: multi-session, plan-first, wait_and_verify, the
 * alert tool, the shipped k8s-triage skill, and the real kubernetes-mcp-server read-only as its
 * only tool server); the new session wakes and the scripted model follows the skill. Scenario 1:
 * its first cluster call before record_plan is refused, record_plan, the skill's reference, a
 * read through the MCP server, wait_and_verify that does not verify (the failure persists), one
 * alert the local webhook receiver gets once, an UNRESOLVED summary. Scenario 2: the failure
 * clears while wait_and_verify polls: verified, RESOLVED, no alert. The event-to-summary latency
 * is printed (the closing note reports it).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { WATCHER_TOKEN, watcherArgs, writeTriageRecipe } from "../../../scripts/demo/triage-recipe.ts";
import { type PullIncident, pullTriage } from "../../../scripts/demo/triage-script.ts";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { type Daemon, MAIN, REPO_ROOT, startDaemon, tempDir, waitFor } from "../../support/daemon.ts";
import { writeKubeconfig } from "../../support/kube.ts";
import { toolResults, writeScript } from "../../support/scripted.ts";
import { type Collector, collect } from "../../support/sse-client.ts";
import { ONCALL_TOKEN } from "../../support/triage-daemon.ts";

const NAMESPACE = "shop";
const IMAGE = "registry.example.com/web:v9";
const incident = (name: string): PullIncident => ({
  namespace: NAMESPACE,
  name,
  uid: `uid-${name}`,
  image: IMAGE,
  cluster: "kind-test",
});
const BROKEN = "web-pull";
const HEALING = "web-heal";

/** Scenario 1's calls (the failure persists: a 3 s wait), then scenario 2's (it clears: up to 60 s). */
const SCRIPT = [...pullTriage(incident(BROKEN), "UNRESOLVED", 3), ...pullTriage(incident(HEALING), "RESOLVED", 60)];

let api: FakeApiserver;
let daemon: Daemon;
let watcher: ReturnType<typeof Bun.spawn>;
let watcherLog = "";
const alerts: Array<Record<string, unknown>> = [];
let receiver: ReturnType<typeof Bun.serve>;

beforeAll(async () => {
  const dir = tempDir();
  receiver = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      alerts.push((await request.json()) as Record<string, unknown>);
      return Response.json({ ok: true });
    },
  });
  // Plain HTTP and no tokens: client-go (the MCP server's client) sends a bearer over TLS only;
  // test/deploy runs the same server as its ServiceAccount over TLS.
  api = await startFakeApiserver();
  const kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), { server: api.url });
  const recipe = writeTriageRecipe(dir, kubeconfig);
  daemon = await startDaemon({
    args: [...recipe.agentArgs, "--model=scripted", `--script=${writeScript(SCRIPT)}`],
    env: { WATCHER_TOKEN, [recipe.alertUrlEnv]: `http://127.0.0.1:${receiver.port}/oncall` },
  });
  watcher = Bun.spawn([process.execPath, MAIN, "watcher", "watch", ...watcherArgs(daemon.baseUrl, kubeconfig)], {
    cwd: REPO_ROOT,
    env: { ...process.env, WATCHER_TOKEN },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  void (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of watcher.stderr as ReadableStream<Uint8Array>) watcherLog += decoder.decode(chunk);
  })();
  await waitFor(() => /metrics listening on/.exec(watcherLog)?.[0], 20_000, `the watcher; stderr=${watcherLog}`);
}, 60_000);

afterAll(async () => {
  watcher?.kill("SIGTERM");
  await watcher?.exited;
  await daemon?.sigterm();
  await api?.stop();
  receiver?.stop(true);
});

/** A pod whose image cannot be pulled (a tag the registry does not know) and the kubelet's event. */
function failingPull(name: string): number {
  const pod = api.scenario.createPod({
    namespace: NAMESPACE,
    name,
    uid: incident(name).uid,
    node: "node-a",
    phase: "Pending",
    containers: [{ name: "app", image: IMAGE, waitingReason: "ImagePullBackOff" }],
  });
  const at = Date.now();
  api.scenario.recordEvent({
    involvedObject: pod,
    reason: "ErrImagePull",
    message: `Failed to pull image "${IMAGE}": manifest unknown`,
    type: "Warning",
    source: { component: "kubelet", host: "node-a" },
  } as never);
  return at;
}

/** The incident's session (the watcher logs it when it fires) and a collector on it as the owner. */
async function incidentSession(name: string): Promise<Collector> {
  const fired = await waitFor(
    () => watcherLog.split("\n").find((line) => line.includes(`pod=${NAMESPACE}/${name}`) && /sid=\S+/.test(line)),
    20_000,
    `the watcher's fire line for ${name}; stderr=${watcherLog}`,
  );
  const sid = /sid=(\S+)/.exec(fired)?.[1] ?? "";
  return collect(`${daemon.baseUrl}/sessions/${sid}/events?since=0`, {
    headers: { authorization: `Bearer ${ONCALL_TOKEN}` },
  });
}

const summaryFrame = (events: Collector) =>
  events.frames.find((frame) => frame.event === "agent" && JSON.stringify(frame.data).includes("INCIDENT SUMMARY"));

describe("triage end to end", () => {
  test("a pull that stays broken: plan first, read through the MCP server, not verified, one alert, UNRESOLVED", async () => {
    const eventAt = failingPull(BROKEN);
    const events = await incidentSession(BROKEN);
    try {
      await events.waitFor((frame) => frame.event === "turn-complete", 60_000);
      const summaryAt = Date.now();
      const results = toolResults(events);
      expect(results.map((result) => result.name)).toEqual([
        "k8s__pods_get",
        "record_plan",
        "load_skill_resource",
        "k8s__pods_get",
        "wait_and_verify",
        "alert",
      ]);
      const [refused, recorded, reference, read, wait, alert] = results.map((result) => result.response);
      expect(refused).toMatchObject({ refused: true, plan_required: true });
      expect(String(refused?.error)).toContain("plan first");
      expect(recorded).toMatchObject({ sequence: 1 });
      expect(String(reference?.content)).toContain("## Convergence check");
      // The real server read the fake apiserver's pod: its waiting reason is in the answer.
      expect(JSON.stringify(read)).toContain("ImagePullBackOff");
      expect(wait).toMatchObject({ verified: false, outcome: "timeout", tool: "k8s__pods_get" });
      expect(alert).toMatchObject({ target: "oncall", outcome: "delivered", status_code: 200 });
      expect(alerts).toHaveLength(1);
      expect(alerts[0]).toMatchObject({
        level: "critical",
        details: { status: "UNRESOLVED", name: BROKEN, uid: incident(BROKEN).uid },
      });
      const text = JSON.stringify(summaryFrame(events)?.data ?? {});
      expect(text).toContain("Status: UNRESOLVED");
      expect(text).toContain("Escalation: alert(oncall) sent");
      expect(recorded?.path).toBeString();
      console.log(`triage e2e: event to UNRESOLVED summary ${summaryAt - eventAt} ms`);
    } finally {
      events.close();
    }
  }, 90_000);

  test("a pull that heals while wait_and_verify polls: verified, RESOLVED, no alert", async () => {
    const eventAt = failingPull(HEALING);
    const events = await incidentSession(HEALING);
    try {
      // Once the wait's first poll saw the pod still failing (the tool server's second read of
      // it: the first was the model's own k8s__pods_get), the image arrives and the pod runs.
      const podPath = `/api/v1/namespaces/${NAMESPACE}/pods/${HEALING}`;
      await waitFor(
        () =>
          api.requests().filter((request) => request.method === "GET" && request.path === podPath).length >= 2
            ? true
            : undefined,
        60_000,
        "the wait's first poll",
      );
      api.scenario.updatePod({
        namespace: NAMESPACE,
        name: HEALING,
        node: "node-a",
        phase: "Running",
        containers: [{ name: "app", image: IMAGE, ready: true }],
      });
      await events.waitFor((frame) => frame.event === "turn-complete", 60_000);
      const summaryAt = Date.now();
      const results = toolResults(events).map((result) => [result.name, result.response] as const);
      expect(results.map(([name]) => name)).toEqual(["record_plan", "k8s__pods_get", "wait_and_verify"]);
      expect(results[2]?.[1]).toMatchObject({ verified: true, outcome: "verified" });
      // It verified on a later poll than its first: the failure cleared while it polled.
      expect(Number(results[2]?.[1].attempts)).toBeGreaterThanOrEqual(2);
      expect(alerts).toHaveLength(1);
      const text = JSON.stringify(summaryFrame(events)?.data ?? {});
      expect(text).toContain("Status: RESOLVED");
      expect(text).toContain("Escalation: not sent (resolved by itself)");
      console.log(`triage e2e: event to RESOLVED summary ${summaryAt - eventAt} ms`);
    } finally {
      events.close();
    }
  }, 90_000);
});
