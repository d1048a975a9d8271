/**
 * The triage references' convergence checks against what the real kubernetes-mcp-server
 * (read-only, over stdio) answers for fake-apiserver objects (D477): each pod-level check and the
 * rollout check fails while the object is in its failing state and holds once it recovered, read
 * both as the tool's text and as the JSON-serialized result wait_and_verify may match on.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { deployment, node } from "../../../scripts/fake-apiserver/builders.ts";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { kubeTempDir, writeKubeconfig } from "../../support/kube.ts";
import { readdirSync } from "node:fs";
import {
  BUNDLE,
  READ_TOOLS,
  type WaitCall,
  conditionHolds,
  fillArgs,
  readReference,
  section,
  waitCalls,
} from "../../support/triage-references.ts";

const SERVER = resolve(import.meta.dir, "..", "..", "..", "node_modules", ".bin", "kubernetes-mcp-server");
/**
 * As the triage deployment runs it (D478): read-only, and lists as YAML (its default, a table,
 * asks the apiserver for the Table format, which the fake apiserver does not serve, and reads
 * nothing a substring check can match).
 */
const SERVER_FLAGS = ["--read-only", "--list-output=yaml"];

let api: FakeApiserver;
let client: Client;

beforeAll(async () => {
  api = await startFakeApiserver();
  const kubeconfig = writeKubeconfig(join(kubeTempDir("spar-triage-"), "kubeconfig"), {
    server: api.url,
    insecureSkipTlsVerify: true,
  });
  client = new Client({ name: "spar-triage-test", version: "0" });
  await client.connect(
    new StdioClientTransport({
      command: SERVER,
      args: [...SERVER_FLAGS, `--kubeconfig=${kubeconfig}`],
      stderr: "pipe",
    }),
  );
}, 30_000);

afterAll(async () => {
  await client?.close();
  await api?.stop();
});

function checkOf(reason: string): WaitCall {
  const call = waitCalls(section(readReference(reason), "Convergence check"))[0];
  if (!call) throw new Error(`${reason}: no wait_and_verify call`);
  return call;
}

/** What the check sees for the object now: the tool's text, and the result as JSON text. */
async function observe(call: WaitCall, values: Record<string, string>): Promise<{ text: string; json: string }> {
  const result = await client.callTool({
    name: call.tool.replace(/^k8s__/, ""),
    arguments: fillArgs(call.args_json, values),
  });
  expect(result.isError).toBeFalsy();
  const content = result.content as { type: string; text?: string }[];
  return { text: content.map((part) => part.text ?? "").join("\n"), json: JSON.stringify(result) };
}

async function expectCheck(call: WaitCall, values: Record<string, string>, holds: boolean): Promise<void> {
  const seen = await observe(call, values);
  expect(seen.text).toContain(`name: ${values.name}`);
  expect(conditionHolds(call, seen.text)).toBe(holds);
  expect(conditionHolds(call, seen.json)).toBe(holds);
}

describe("the tools the skill names", () => {
  test("are served read-only, and every check passes only arguments its tool takes", async () => {
    const { tools } = await client.listTools();
    const served = new Map(tools.map((tool) => [`k8s__${tool.name}`, tool]));
    for (const name of READ_TOOLS) expect(served.get(name)?.annotations?.readOnlyHint).toBe(true);
    const references = readdirSync(join(BUNDLE, "references")).map((file) => file.replace(/\.md$/, ""));
    const calls = references.flatMap((reason) => waitCalls(section(readReference(reason), "Convergence check")));
    expect(calls.length).toBeGreaterThan(20);
    for (const call of calls) {
      const schema = served.get(call.tool)?.inputSchema;
      const keys = Object.keys(JSON.parse(call.args_json) as Record<string, unknown>);
      expect(keys.filter((key) => !Object.keys(schema?.properties ?? {}).includes(key))).toEqual([]);
      expect((schema?.required ?? []).filter((key) => !keys.includes(key))).toEqual([]);
    }
  });
});

describe("pod-level checks", () => {
  test("ImagePullBackOff: not verified while the pull fails (either waiting reason), verified once it runs", async () => {
    const call = checkOf("ImagePullBackOff");
    const values = { namespace: "shop", name: "web-pull" };
    const failing = (reason: string) =>
      api.scenario.updatePod({
        namespace: "shop",
        name: "web-pull",
        node: "node-1",
        containers: [{ name: "web", waitingReason: reason, waitingMessage: "Back-off pulling image" }],
      });
    api.scenario.createPod({ namespace: "shop", name: "web-pull", node: "node-1", containers: [{ name: "web" }] });
    failing("ImagePullBackOff");
    await expectCheck(call, values, false);
    failing("ErrImagePull");
    await expectCheck(call, values, false);
    api.scenario.updatePod({ namespace: "shop", name: "web-pull", node: "node-1", containers: [{ name: "web" }] });
    await expectCheck(call, values, true);
  }, 20_000);

  test("CrashLoopBackOff: not verified while one container loops, verified once all are ready", async () => {
    const call = checkOf("CrashLoopBackOff");
    const values = { namespace: "shop", name: "checkout" };
    api.scenario.createPod({
      namespace: "shop",
      name: "checkout",
      node: "node-1",
      containers: [
        { name: "proxy" },
        {
          name: "server",
          waitingReason: "CrashLoopBackOff",
          lastTerminationReason: "Error",
          lastExitCode: 1,
          restartCount: 6,
        },
      ],
    });
    await expectCheck(call, values, false);
    api.scenario.updatePod({
      namespace: "shop",
      name: "checkout",
      node: "node-1",
      containers: [
        { name: "proxy" },
        { name: "server", lastTerminationReason: "Error", lastExitCode: 1, restartCount: 6 },
      ],
    });
    await expectCheck(call, values, true);
  }, 20_000);

  test("OOMKilled: verified once the pod runs again, though its last state still says OOMKilled", async () => {
    const call = checkOf("OOMKilled");
    const values = { namespace: "shop", name: "cache" };
    api.scenario.createPod({
      namespace: "shop",
      name: "cache",
      node: "node-1",
      containers: [
        { name: "redis", waitingReason: "CrashLoopBackOff", lastTerminationReason: "OOMKilled", restartCount: 3 },
      ],
    });
    await expectCheck(call, values, false);
    api.scenario.updatePod({
      namespace: "shop",
      name: "cache",
      node: "node-1",
      containers: [{ name: "redis", lastTerminationReason: "OOMKilled", restartCount: 3 }],
    });
    const seen = await observe(call, values);
    expect(seen.text).toContain("reason: OOMKilled");
    await expectCheck(call, values, true);
  }, 20_000);

  test("FailedScheduling: not verified while the pod is unbound, verified once it has a node", async () => {
    const call = checkOf("FailedScheduling");
    const values = { namespace: "shop", name: "batch" };
    api.scenario.createPod({
      namespace: "shop",
      name: "batch",
      conditions: [{ type: "PodScheduled", status: "False", reason: "Unschedulable" }],
    });
    await expectCheck(call, values, false);
    api.scenario.updatePod({ namespace: "shop", name: "batch", node: "node-2" });
    await expectCheck(call, values, true);
  }, 20_000);
});

describe("the rollout check", () => {
  test("rollout_stall: not verified past the progress deadline, verified once the new ReplicaSet is available", async () => {
    const call = checkOf("rollout_stall");
    const values = { namespace: "shop", name: "web" };
    api.scenario.createDeployment({
      namespace: "shop",
      name: "web",
      replicas: 3,
      readyReplicas: 2,
      progressDeadlineExceeded: true,
    });
    await expectCheck(call, values, false);
    api.scenario.apply(deployment({ namespace: "shop", name: "web", replicas: 3 }));
    await expectCheck(call, values, true);
  }, 20_000);
});

/** A Deployment whose status says what a controller writes: `availableReplicas`, and `unavailableReplicas` only above 0. */
function deploymentWithAvailability(name: string, replicas: number, available: number): Record<string, unknown> {
  const object = deployment({ namespace: "shop", name, replicas, readyReplicas: available });
  const status = object.status as Record<string, unknown>;
  status.availableReplicas = available;
  if (available < replicas) status.unavailableReplicas = replicas - available;
  return object;
}

/** A node with the condition reasons a kubelet writes. */
function kubeletNode(name: string, ready: boolean, memoryPressure = false): Record<string, unknown> {
  const object = node({ name, ready: ready ? "True" : "False", pressure: memoryPressure ? ["MemoryPressure"] : [] });
  const status = object.status as { conditions: Record<string, unknown>[] };
  const reasons: Record<string, string> = {
    MemoryPressure: memoryPressure ? "KubeletHasInsufficientMemory" : "KubeletHasSufficientMemory",
    DiskPressure: "KubeletHasNoDiskPressure",
    PIDPressure: "KubeletHasSufficientPID",
    Ready: ready ? "KubeletReady" : "KubeletNotReady",
  };
  for (const condition of status.conditions) condition.reason = reasons[String(condition.type)];
  return object;
}

describe("workload, service and node checks", () => {
  test("Evicted: not verified while the owner misses replicas, verified once all are available", async () => {
    const call = checkOf("Evicted");
    const values = { namespace: "shop", name: "web-evicted", workload: "api" };
    api.scenario.apply(deploymentWithAvailability("api", 3, 1));
    const seen = await observe(call, values);
    expect(conditionHolds(call, seen.text)).toBe(false);
    expect(conditionHolds(call, seen.json)).toBe(false);
    api.scenario.apply(deploymentWithAvailability("api", 3, 3));
    const after = await observe(call, values);
    expect(after.text).toContain("name: api");
    expect(conditionHolds(call, after.text)).toBe(true);
    expect(conditionHolds(call, after.json)).toBe(true);
  }, 20_000);

  test("endpoints_empty: not verified with no ready endpoint, verified once one is ready", async () => {
    const call = checkOf("endpoints_empty");
    const values = { namespace: "shop", name: "cart" };
    api.scenario.applyEndpointSlice({ namespace: "shop", service: "cart", ready: [false, false] });
    api.scenario.applyEndpointSlice({ namespace: "shop", service: "other", ready: [true] });
    await expectCheck(call, { ...values, name: "cart" }, false);
    api.scenario.applyEndpointSlice({ namespace: "shop", service: "cart", ready: [false, true] });
    await expectCheck(call, values, true);
  }, 20_000);

  test("NodeNotReady and node_pressure: not verified while the kubelet reports the failure, verified after", async () => {
    const notReady = checkOf("NodeNotReady");
    const pressure = checkOf("node_pressure");
    const values = { name: "node-7", node: "node-7" };
    api.scenario.apply(kubeletNode("node-7", false, true));
    await expectCheck(notReady, values, false);
    await expectCheck(pressure, values, false);
    api.scenario.apply(kubeletNode("node-7", true, true));
    await expectCheck(notReady, values, true);
    await expectCheck(pressure, values, false);
    api.scenario.apply(kubeletNode("node-7", true, false));
    await expectCheck(pressure, values, true);
  }, 20_000);
});
