/**
 * The local triage demo (scripts/demo-triage): the fake apiserver with a Deployment whose new pod
 * cannot pull its image, `spar agent` with the triage recipe (scripts/demo/triage-recipe.ts) and
 * the scripted model following the k8s-triage skill, the watcher injecting the incident, and a
 * local webhook standing in for on-call. Prints the INCIDENT SUMMARY the session ends with and the
 * alert the webhook received, then stops everything it started: exit 0, or 1 with the reason
 * (and the daemons' last log lines) when a step fails or the deadline passes (`--deadline-s`,
 * default two minutes); 2 for a bad argument.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { writeKubeconfig } from "../fake-apiserver/kubeconfig.ts";
import { type FakeApiserver, startFakeApiserver } from "../fake-apiserver/server.ts";
import { ONCALL_TOKEN, REPO, WATCHER_TOKEN, watcherArgs, writeTriageRecipe } from "./triage-recipe.ts";
import { type PullIncident, pullTriage } from "./triage-script.ts";

class DemoFailure extends Error {}

/** `--deadline-s=N`: give up after N seconds (default 120). */
function deadlineMs(argv: readonly string[]): number {
  const given = argv.find((arg) => arg.startsWith("--deadline-s="));
  const seconds = given === undefined ? 120 : Number(given.slice("--deadline-s=".length));
  if (!Number.isFinite(seconds) || seconds <= 0)
    throw new DemoFailure(`--deadline-s must be a positive number: ${given}`);
  return seconds * 1000;
}
const MAIN = join(REPO, "src", "main.ts");
const INCIDENT: PullIncident = {
  namespace: "shop",
  name: "web-6f7c9d-x2x7q",
  uid: "5d1c0b7e-3f2a-4c8e-9b61-2a7f0e4d9c13",
  image: "registry.example.com/shop/web:v2.1-typo",
  cluster: "kind-test",
};

interface Child {
  name: string;
  proc: Bun.Subprocess<"ignore", "pipe", "pipe">;
  log: string;
}

function spawn(name: string, args: string[], env: Record<string, string>): Child {
  const proc = Bun.spawn([process.execPath, "--max-http-header-size=65536", MAIN, ...args], {
    cwd: REPO,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const child: Child = { name, proc, log: "" };
  const decoder = new TextDecoder();
  void (async () => {
    for await (const chunk of proc.stderr) child.log += decoder.decode(chunk, { stream: true });
  })();
  return child;
}

async function until<T>(what: string, check: () => T | undefined, deadline: number): Promise<T> {
  for (;;) {
    const value = check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new DemoFailure(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

/** A Deployment `web` whose current ReplicaSet's pod waits on an image tag the registry lacks. */
function failingDeployment(api: FakeApiserver): void {
  const { namespace, name, uid, image } = INCIDENT;
  const deployment = api.scenario.createDeployment({ namespace, name: "web", replicas: 1, readyReplicas: 0 });
  const uidOf = (object: Record<string, unknown>) => String((object.metadata as { uid: string }).uid);
  const replicaSet = api.scenario.createReplicaSet({
    namespace,
    name: "web-6f7c9d",
    labels: { app: "web" },
    owner: { kind: "Deployment", name: "web", uid: uidOf(deployment) },
  });
  const pod = api.scenario.createPod({
    namespace,
    name,
    uid,
    node: "node-a",
    phase: "Pending",
    labels: { app: "web" },
    owner: { kind: "ReplicaSet", name: "web-6f7c9d", uid: uidOf(replicaSet) },
    containers: [{ name: "web", image, waitingReason: "ImagePullBackOff" }],
  });
  api.scenario.recordEvent({
    involvedObject: pod,
    reason: "ErrImagePull",
    message: `Failed to pull image "${image}": manifest unknown`,
    type: "Warning",
    source: { component: "kubelet", host: "node-a" },
  } as never);
}

interface Triage {
  summary: string;
  /** Each tool result of the session's turn, in order: the tool's name and its response. */
  results: Array<{ name: string; response: Record<string, unknown> }>;
}

type Row = {
  event?: {
    Content?: {
      parts?: Array<{ text?: string; functionResponse?: { name: string; response: Record<string, unknown> } }>;
    };
  };
};

/** The session's rows as the on-call owner sees them, until one carries the summary. */
async function triageOf(baseUrl: string, sessionId: string, deadline: number): Promise<Triage> {
  const results: Triage["results"] = [];
  const response = await fetch(`${baseUrl}/sessions/${sessionId}/events?since=0`, {
    headers: { authorization: `Bearer ${ONCALL_TOKEN}`, accept: "text/event-stream" },
    signal: AbortSignal.timeout(Math.max(1, deadline - Date.now())),
  });
  if (!response.ok || !response.body) throw new DemoFailure(`attaching to ${sessionId}: HTTP ${response.status}`);
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block
        .split("\n")
        .filter((line) => line.startsWith("data:"))
        .map((line) => line.slice(5).trimStart())
        .join("\n");
      if (!data.startsWith("{")) continue;
      const parts = (JSON.parse(data) as Row).event?.Content?.parts ?? [];
      for (const part of parts) if (part.functionResponse) results.push(part.functionResponse);
      const text = parts.map((part) => part.text ?? "").join("");
      if (text.startsWith("INCIDENT SUMMARY")) return { summary: text, results };
    }
  }
  throw new DemoFailure(`the session ${sessionId} ended without a summary`);
}

/** What the summary says must be what the tools did: the demo fails rather than print a story. */
function checkTriage(results: Triage["results"], pages: number): void {
  const outcome = (name: string) => results.find((result) => result.name === name)?.response;
  const expectations: Array<[string, boolean]> = [
    ["the first cluster call refused until a plan exists", results[0]?.response.plan_required === true],
    ["record_plan wrote a plan", typeof outcome("record_plan")?.path === "string"],
    [
      "the tool server read the pod",
      results.some(
        (result) => result.name === "k8s__pods_get" && JSON.stringify(result.response).includes("ImagePullBackOff"),
      ),
    ],
    ["wait_and_verify saw the failure persist", outcome("wait_and_verify")?.verified === false],
    ["the alert was delivered", outcome("alert")?.outcome === "delivered"],
    // A page is never doubled: the one alert call reached the webhook exactly once.
    ["the webhook got the page once", pages === 1],
  ];
  for (const [what, held] of expectations) {
    if (!held) throw new DemoFailure(`${what}: not so (tool results: ${JSON.stringify(results).slice(0, 2000)})`);
    console.log(`  ok: ${what}`);
  }
}

async function main(): Promise<number> {
  let deadline: number;
  try {
    deadline = Date.now() + deadlineMs(process.argv.slice(2));
  } catch (error) {
    console.error(`demo-triage: ${error instanceof Error ? error.message : String(error)}`);
    return 2;
  }
  const dir = mkdtempSync(join(tmpdir(), "spar-demo-triage-"));
  const alerts: unknown[] = [];
  const children: Child[] = [];
  let api: FakeApiserver | undefined;
  const webhook = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      alerts.push(await request.json());
      return Response.json({ ok: true });
    },
  });
  try {
    api = await startFakeApiserver();
    const kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), { server: api.url });
    const recipe = writeTriageRecipe(dir, kubeconfig);
    const script = join(dir, "script.jsonl");
    await Bun.write(
      script,
      `${pullTriage(INCIDENT, "UNRESOLVED", 3)
        .map((line) => JSON.stringify(line))
        .join("\n")}\n`,
    );
    const agent = spawn(
      "spar agent",
      [
        "agent",
        "--attach-listen=127.0.0.1:0",
        `--session-db=${join(dir, "sessions.db")}`,
        "--model=scripted",
        `--script=${script}`,
        ...recipe.agentArgs,
      ],
      { WATCHER_TOKEN, [recipe.alertUrlEnv]: `http://127.0.0.1:${webhook.port}/oncall` },
    );
    children.push(agent);
    const port = await until(
      "spar agent to listen",
      () => /listening on http:\/\/[^:]+:(\d+)/.exec(agent.log)?.[1],
      deadline,
    );
    const baseUrl = `http://127.0.0.1:${port}`;
    console.log(`spar agent on ${baseUrl}; the triage skill, plan-first, kubernetes-mcp-server --read-only`);
    const watcher = spawn("spar watcher", ["watcher", "watch", ...watcherArgs(baseUrl, kubeconfig)], { WATCHER_TOKEN });
    children.push(watcher);
    await until("the watcher to start", () => /metrics listening on/.exec(watcher.log)?.[0], deadline);
    const started = Date.now();
    failingDeployment(api);
    console.log(`fake apiserver: Deployment shop/web, pod ${INCIDENT.name} cannot pull ${INCIDENT.image}`);
    const sessionId = await until(
      "the watcher to open the incident's session",
      () => new RegExp(`pod=${INCIDENT.namespace}/${INCIDENT.name} → sid=(\\S+)`).exec(watcher.log)?.[1],
      deadline,
    );
    console.log(`watcher: incident injected into session ${sessionId}`);
    const { summary, results } = await triageOf(baseUrl, sessionId, deadline);
    await until("the alert at the webhook", () => (alerts.length > 0 ? true : undefined), deadline);
    checkTriage(results, alerts.length);
    console.log(`\n${summary}\n`);
    console.log(`alert received by the on-call webhook:\n${JSON.stringify(alerts[0], null, 2)}\n`);
    console.log(`event to summary: ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return 0;
  } catch (error) {
    console.error(`demo-triage failed: ${error instanceof Error ? error.message : String(error)}`);
    for (const child of children)
      console.error(`--- ${child.name} log (last lines):\n${child.log.split("\n").slice(-15).join("\n")}`);
    return 1;
  } finally {
    for (const child of children) child.proc.kill("SIGTERM");
    await Promise.all(children.map((child) => child.proc.exited));
    await api?.stop();
    webhook.stop(true);
    rmSync(dir, { recursive: true, force: true });
  }
}

process.exit(await main());
