/**
 * The fake apiserver as a separate process (`bun scripts/fake-apiserver/main.ts`), driven through
 * its HTTP control surface under /_fake/: objects, kubelet-style events in both APIs, logs, grants,
 * request faults, mid-stream expiry, restart and the request log; plus the --generate-certs mode
 * serving mTLS to kubectl through the kubeconfig it writes. Bad control input is a 400 Status.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join, resolve } from "node:path";
import { WatchReader, kubeTempDir, kubectl } from "../../support/kube.ts";
import { waitFor } from "../../support/daemon.ts";

const MAIN = resolve(import.meta.dir, "../../../scripts/fake-apiserver/main.ts");

interface Spawned {
  url: string;
  stop(): Promise<void>;
}

async function spawnFake(args: string[]): Promise<Spawned> {
  const child = Bun.spawn([process.execPath, MAIN, "--port", "0", ...args], {
    stdout: "pipe",
    stderr: "pipe",
    stdin: "ignore",
  });
  const reader = child.stdout.getReader();
  let text = "";
  const deadline = Date.now() + 10_000;
  try {
    while (!text.includes("\n")) {
      if (Date.now() > deadline) throw new Error("the fake apiserver printed no URL");
      const { value, done } = await reader.read();
      if (done) throw new Error(`the fake apiserver exited: ${await new Response(child.stderr).text()}`);
      text += new TextDecoder().decode(value);
    }
  } catch (error) {
    child.kill("SIGKILL");
    throw error;
  }
  reader.releaseLock();
  return {
    url: text.split("\n")[0] ?? "",
    stop: async () => {
      child.kill("SIGTERM");
      // Deadline: a fake still running by then is killed.
      const exited = await Promise.race([child.exited, Bun.sleep(3000).then(() => undefined)]);
      if (exited === undefined) child.kill("SIGKILL");
    },
  };
}

let fake: Spawned;
const control = async (path: string, body: unknown = {}) => {
  const response = await fetch(`${fake.url}/_fake/${path}`, { method: "POST", body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any };
};
const kube = async (path: string) => {
  const response = await fetch(`${fake.url}${path}`, { headers: { authorization: "Bearer ctl-token" } });
  return { status: response.status, body: (await response.json()) as any };
};

beforeAll(async () => {
  fake = await spawnFake(["--token", "ctl-token=driver", "--bookmark-interval-ms", "200"]);
}, 15_000);
afterAll(async () => {
  await fake?.stop();
});

describe("the spawned fake", () => {
  test("prints its URL first and serves discovery behind the token", async () => {
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await kube("/api/v1")).body.kind).toBe("APIResourceList");
    expect((await fetch(`${fake.url}/api/v1/pods`)).status).toBe(401);
  });

  test("objects, pods, nodes, replicasets and events (both APIs) are created through /_fake/", async () => {
    const pod = await control("pods", {
      namespace: "ctl",
      name: "web-1",
      node: "n1",
      containers: [{ name: "app", waitingReason: "ImagePullBackOff" }],
    });
    expect(pod.status).toBe(200);
    expect(pod.body.metadata.uid).toBeString();
    expect((await control("nodes", { name: "n1", ready: "Unknown" })).status).toBe(200);
    expect((await control("replicasets", { namespace: "ctl", name: "web", replicas: 3 })).status).toBe(200);
    expect(
      (
        await control("objects", {
          apiVersion: "v1",
          kind: "ConfigMap",
          metadata: { name: "cfg", namespace: "ctl" },
          data: { a: "1" },
        })
      ).status,
    ).toBe(200);
    const involved = { kind: "Pod", name: "web-1", namespace: "ctl", uid: pod.body.metadata.uid };
    await control("events", { involvedObject: involved, reason: "BackOff", message: "Back-off pulling image" });
    const bumped = await control("events", {
      involvedObject: involved,
      reason: "BackOff",
      message: "Back-off pulling image",
    });
    expect(bumped.body.count).toBe(2);
    const v1 = await control("events?api=events.k8s.io", {
      involvedObject: involved,
      reason: "Failed",
      message: "ErrImagePull",
      series: { count: 4 },
    });
    expect(v1.body.apiVersion).toBe("events.k8s.io/v1");
    expect(v1.body.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    expect(v1.body.series.count).toBe(4);
    const listed = await kube("/api/v1/namespaces/ctl/events?fieldSelector=involvedObject.name=web-1");
    expect(listed.body.items.map((item: any) => `${item.reason}:${item.count ?? "-"}`).sort()).toEqual([
      "BackOff:2",
      "Failed:-",
    ]);
    expect((await kube("/apis/apps/v1/namespaces/ctl/replicasets/web")).body.spec.replicas).toBe(3);
    expect(
      (await kube("/api/v1/nodes/n1")).body.status.conditions.find((condition: any) => condition.type === "Ready")
        .status,
    ).toBe("Unknown");
    const patched = await control("objects/patch", {
      ref: { apiVersion: "v1", kind: "ConfigMap", namespace: "ctl", name: "cfg" },
      patch: { data: { a: "2" } },
    });
    expect(patched.body.data.a).toBe("2");
    expect(
      (await control("objects/delete", { apiVersion: "v1", kind: "ConfigMap", namespace: "ctl", name: "cfg" })).status,
    ).toBe(200);
    expect((await kube("/api/v1/namespaces/ctl/configmaps/cfg")).status).toBe(404);
  });

  test("logs and grants are set through /_fake/", async () => {
    await control("pods", { namespace: "ctl", name: "logger" });
    await control("logs", {
      namespace: "ctl",
      pod: "logger",
      container: "app",
      current: "one\ntwo\n",
      previous: "crash\n",
    });
    const previous = await fetch(`${fake.url}/api/v1/namespaces/ctl/pods/logger/log?previous=true`, {
      headers: { authorization: "Bearer ctl-token" },
    });
    expect(await previous.text()).toBe("crash\n");
    await control("grants", { grants: [{ verbs: ["list"], resources: ["pods"] }] });
    expect((await kube("/api/v1/namespaces/ctl/events")).status).toBe(403);
    await control("grants", { grants: null });
    expect((await kube("/api/v1/namespaces/ctl/events")).status).toBe(200);
  });

  test("fail-next, mid-stream expiry and the request log", async () => {
    await control("requests/clear");
    await control("faults/fail-next", { code: 429, count: 1, pathRegex: "/events$", retryAfterSeconds: 2 });
    const throttled = await kube("/api/v1/namespaces/ctl/events");
    expect(throttled.status).toBe(429);
    expect(throttled.body.reason).toBe("TooManyRequests");
    expect((await kube("/api/v1/namespaces/ctl/events")).status).toBe(200);
    const state = (await (await fetch(`${fake.url}/_fake/state`)).json()) as { resourceVersion: number };
    const watch = new WatchReader(
      await fetch(`${fake.url}/api/v1/pods?watch=true&resourceVersion=${state.resourceVersion}`, {
        headers: { authorization: "Bearer ctl-token" },
      }),
    );
    await waitFor(
      async () =>
        ((await (await fetch(`${fake.url}/_fake/state`)).json()) as { openWatches: number }).openWatches === 1
          ? true
          : undefined,
      5000,
      "the watch registered",
    );
    expect((await control("faults/expire", { midStream: true })).body.errored).toBe(1);
    expect((await watch.next(1))[0]).toMatchObject({ type: "ERROR", object: { code: 410 } });
    const log = (await (await fetch(`${fake.url}/_fake/requests`)).json()) as { status: number; path: string }[];
    expect(log.map((entry) => entry.status)).toEqual([429, 200, 200]);
  });

  test("restart through /_fake/ comes back on the same port with the state kept", async () => {
    const before = (await kube("/api/v1/namespaces/ctl/pods")).body.items.length;
    expect((await control("restart", { keepState: true, downtimeMs: 100 })).body.restarting).toBe(true);
    const deadline = Date.now() + 5000;
    let after: number | undefined;
    while (after === undefined && Date.now() < deadline) {
      // Poll, first after the fake has gone down (20 ms after its answer, for 100 ms).
      await Bun.sleep(150);
      after = await kube("/api/v1/namespaces/ctl/pods").then(
        (result) => result.body.items.length as number,
        () => undefined,
      );
    }
    expect(after).toBe(before);
  }, 10_000);

  test("bad control input is a 400 Status; unknown routes 404", async () => {
    const bad = await fetch(`${fake.url}/_fake/objects`, { method: "POST", body: "{nope" });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { kind: string }).kind).toBe("Status");
    const unknownKind = await control("objects", { apiVersion: "v9", kind: "Nope", metadata: { name: "x" } });
    expect(unknownKind.status).toBe(400);
    expect(unknownKind.body.message).toContain("no served resource");
    expect((await control("faults/fail-next", { count: 1 })).status).toBe(400);
    expect((await control("nowhere")).status).toBe(404);
  });
});

test("--generate-certs serves mTLS and writes a kubeconfig kubectl can use", async () => {
  const dir = kubeTempDir("spar-fake-main-");
  const kubeconfig = join(dir, "kubeconfig");
  const secure = await spawnFake(["--generate-certs", join(dir, "certs"), "--kubeconfig-out", kubeconfig]);
  try {
    expect(secure.url).toStartWith("https://");
    const result = await kubectl(kubeconfig, ["get", "namespaces", "-o", "name"]);
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe("");
    await expect(fetch(`${secure.url}/api/v1/namespaces`, { tls: { rejectUnauthorized: false } })).rejects.toThrow();
  } finally {
    await secure.stop();
  }
}, 30_000);
