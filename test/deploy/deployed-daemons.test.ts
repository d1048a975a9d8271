/**
 * The daemons run on what deploy/ renders: `spar agent` on the rendered config file, caller table
 * and environment; `spar watcher watch` on the Deployment's arguments against the fake apiserver,
 * which grants its ServiceAccount exactly what the rendered ClusterRole binds to it (no request
 * refused), opening an incident session on that agent as the on-call owner through the proxy
 * identity the config grants; the Kubernetes tool server (the published kubernetes-mcp-server) on
 * its container's arguments as the agent's ServiceAccount, its read tools offered to the agent's
 * sessions under the names `poll_allow` gives, its write tools absent and secrets refused; `spar svc` on a real PostgreSQL through the DSN its Secret holds (D472, D473).
 * What a pod has that this machine lacks is replaced, each override named where it is made:
 * listeners on free ports, a kubeconfig instead of the in-cluster credentials, a local model endpoint
 * (it refuses every call) instead of a provider this machine cannot reach.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Grant } from "../../scripts/fake-apiserver/access.ts";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { type Daemon, postJson, startDaemon, tempDir, waitFor } from "../support/daemon.ts";
import {
  DEPLOY_DIR,
  type KubeObject,
  SECRET_FIXTURES,
  agentOnDisk,
  container,
  containerEnv,
  containerOnDisk,
  expandedArgs,
  freeLoopbackPort,
  generatedConfigMap,
  kubernetesMcpServerBinary,
  mountContainer,
  objectNamed,
  renderKustomization,
  svcStoreConfig,
} from "../support/deploy-manifests.ts";
import { type CertificateSet, generateCertificates, writeKubeconfig } from "../support/kube.ts";
import { type PostgresCluster, startPostgresCluster } from "../support/postgres-cluster.ts";
import { spawnWatcher, watcherReady } from "../support/watcher-process.ts";

const OWNER = "sre-oncall@example.com";
const WATCHER_TOKEN = SECRET_FIXTURES["spar-tokens"].watcher;
const ONCALL_TOKEN = SECRET_FIXTURES["spar-tokens"].oncall;
const WATCHER_USER = "system:serviceaccount:agent-triage:spar-watcher";
const KUBE_TOKEN = "watcher-service-account-token";
const AGENT_USER = "system:serviceaccount:agent-triage:spar-agent";
const AGENT_KUBE_TOKEN = "agent-service-account-token";

/** The fake apiserver's grants for `user`: the rules of every ClusterRole bound to it in the rendered set. */
function grantsOf(rendered: readonly KubeObject[], user: string): Grant[] {
  const bound = rendered
    .filter((object) => object.kind === "ClusterRoleBinding")
    .filter((binding) =>
      (binding.subjects as { kind: string; name: string; namespace: string }[]).some(
        (subject) => `system:serviceaccount:${subject.namespace}:${subject.name}` === user,
      ),
    )
    .map((binding) => (binding.roleRef as { name: string }).name);
  return rendered
    .filter((object) => object.kind === "ClusterRole" && bound.includes(object.metadata.name))
    .flatMap((role) => (role.rules as Grant[]).map((rule) => ({ ...rule, users: [user] })));
}

let objects: KubeObject[];

beforeAll(() => {
  objects = renderKustomization(join(DEPLOY_DIR, "overlays", "example")).objects;
});

describe("spar agent and spar watcher watch", () => {
  let api: FakeApiserver;
  let agent: Daemon;
  let model: ReturnType<typeof Bun.serve>;
  let toolServer: Bun.Subprocess;
  let toolServerUrl: string;
  let certificates: CertificateSet;

  beforeAll(async () => {
    // HTTPS: client-go (the tool server's client) sends a bearer token over TLS only.
    certificates = generateCertificates(tempDir(), { user: "unused" });
    api = await startFakeApiserver({
      tls: { cert: certificates.serverCert, key: certificates.serverKey },
      tokens: { [KUBE_TOKEN]: WATCHER_USER, [AGENT_KUBE_TOKEN]: AGENT_USER },
      grants: [...grantsOf(objects, WATCHER_USER), ...grantsOf(objects, AGENT_USER)],
    });
    toolServerUrl = await startToolServer();
    model = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () => Response.json({ error: { message: "no model in this test" } }, { status: 400 }),
    });
    const { args, env, workingDir, mounted } = agentOnDisk(objects, tempDir());
    expect(args[0]).toBe("agent");
    // The catalog names the tool server on the pod's loopback, port 8080; here it has a free port.
    const catalog = mounted.onDisk("/etc/spar/config/mcp.json");
    const text = readFileSync(catalog, "utf8");
    expect(text).toContain('"url": "http://127.0.0.1:8080/mcp"');
    writeFileSync(catalog, text.replace("http://127.0.0.1:8080/mcp", toolServerUrl));
    agent = await startDaemon({
      // startDaemon adds --attach-listen=127.0.0.1:0 (flags win over the config's 0.0.0.0:7777)
      // and --session-db, here the PVC's path the config names.
      sessionDb: mounted.onDisk("/var/lib/spar/sessions.db"),
      // A local endpoint for the model (the configured provider is not reachable from here); the
      // key still comes from MODEL_API_KEY as the config says.
      args: [
        ...args.slice(1),
        "--provider=openai-compatible",
        "--model=triage-test",
        `--model-base-url=http://127.0.0.1:${model.port}/v1`,
      ],
      cwd: workingDir,
      env,
    });
  }, 60_000);

  afterAll(async () => {
    await agent?.sigterm();
    toolServer?.kill();
    await toolServer?.exited;
    await api?.stop();
    await model?.stop(true);
  });

  /** The k8s-mcp container's server, on its arguments: a free port, and a kubeconfig for in-cluster. */
  async function startToolServer(): Promise<string> {
    const sidecar = container(objectNamed(objects, "Deployment", "spar-agent"), "k8s-mcp");
    const kubeconfig = writeKubeconfig(join(tempDir(), "kubeconfig"), {
      server: api.url,
      token: AGENT_KUBE_TOKEN,
      caPem: certificates.caCert,
    });
    const overridden = ["--port=", "--cluster-provider="];
    const args = sidecar.args ?? [];
    for (const prefix of overridden) expect(args.some((arg) => arg.startsWith(prefix))).toBe(true);
    const port = freeLoopbackPort();
    toolServer = Bun.spawn(
      [
        kubernetesMcpServerBinary(),
        ...args.filter((arg) => !overridden.some((prefix) => arg.startsWith(prefix))),
        `--port=${port}`,
        "--cluster-provider=kubeconfig",
        `--kubeconfig=${kubeconfig}`,
      ],
      {
        stdin: "ignore",
        stdout: "ignore",
        stderr: "ignore",
        env: { ...process.env, ...containerEnv(objects, sidecar, {}) },
      },
    );
    const url = `http://127.0.0.1:${port}/mcp`;
    await waitFor(
      async () => ((await fetch(url).catch(() => undefined)) ? true : undefined),
      15_000,
      "the tool server",
    );
    return url;
  }

  test("the agent answers its probe and knows both callers of its table by their Secret tokens", async () => {
    expect((await fetch(`${agent.baseUrl}/healthz`)).status).toBe(200);
    for (const [token, identity] of [
      [WATCHER_TOKEN, "sa:spar-watcher"],
      [ONCALL_TOKEN, OWNER],
    ]) {
      const whoami = await fetch(`${agent.baseUrl}/whoami`, { headers: { authorization: `Bearer ${token}` } });
      expect(whoami.status).toBe(200);
      expect(await whoami.json()).toMatchObject({ identity });
    }
    expect((await fetch(`${agent.baseUrl}/sessions`)).status).toBe(401);
  });

  test("a session offers the triage tools, no shell, file-writing or URL-fetching tool, and the mounted skill", async () => {
    const asOwner = { authorization: `Bearer ${ONCALL_TOKEN}` };
    const created = await postJson(`${agent.baseUrl}/sessions`, {}, asOwner);
    expect(created.status).toBe(201);
    const { sessionID } = (await created.json()) as { sessionID: string };
    const tools = (await (
      await fetch(`${agent.baseUrl}/sessions/${sessionID}/tools`, { headers: asOwner })
    ).json()) as {
      tools: { name: string }[];
    };
    const names = tools.tools.map((tool) => tool.name);
    expect(names).toContain("read_file");
    // The oncall target's URL variable is set from Secret spar-alerts: the alert tool is offered;
    // the plan gate's record_plan and poll_allow's wait_and_verify are too.
    for (const triageTool of ["alert", "record_plan", "wait_and_verify"]) expect(names).toContain(triageTool);
    for (const disabled of ["bash", "write_file", "edit_file", "delete_file", "fetch_url"])
      expect(names).not.toContain(disabled);
    const skills = await fetch(`${agent.baseUrl}/sessions/${sessionID}/skills`, { headers: asOwner });
    expect(((await skills.json()) as { skills: { name: string }[] }).skills.map((skill) => skill.name)).toEqual([
      "k8s-triage",
    ]);
  });

  test("the tool server's read tools reach a session as read-only tools, named as poll_allow names them; no write tool", async () => {
    const asOwner = { authorization: `Bearer ${ONCALL_TOKEN}` };
    const created = await postJson(`${agent.baseUrl}/sessions`, {}, asOwner);
    const { sessionID } = (await created.json()) as { sessionID: string };
    type Listed = { tools: { name: string; server?: string; read_only?: boolean }[] };
    // A /tools read starts the tool server; a later read lists its tools.
    const kube = await waitFor(
      async () => {
        const listed = (await (
          await fetch(`${agent.baseUrl}/sessions/${sessionID}/tools`, { headers: asOwner })
        ).json()) as Listed;
        const tools = listed.tools.filter((tool) => tool.server === "k8s");
        return tools.length > 0 ? tools : undefined;
      },
      20_000,
      "the tool server's tools",
    );
    expect(kube.length).toBeGreaterThan(0);
    for (const tool of kube) expect(tool.read_only, tool.name).toBe(true);
    const config = Bun.YAML.parse(
      (generatedConfigMap(objects, "spar-agent-config").data as Record<string, string>)["config.yaml"] ?? "",
    ) as { tools: { wait_and_verify: { poll_allow: string[] } } };
    const offered = kube.map((tool) => tool.name);
    for (const entry of config.tools.wait_and_verify.poll_allow)
      expect(offered).toContain(entry.replace(/^k8s_/, "k8s__"));
    for (const write of ["resources_create_or_update", "resources_delete", "pods_delete", "pods_exec", "pods_run"])
      expect(offered).not.toContain(`k8s__${write}`);
  });

  test("the tool server reads a pod as the agent's ServiceAccount and is refused a Secret", async () => {
    api.scenario.createPod({
      namespace: "shop",
      name: "web-1",
      node: "node-a",
      containers: [{ name: "app", image: "registry.example.com/web:v2", waitingReason: "ImagePullBackOff" }],
    } as never);
    const client = new Client({ name: "deploy-test", version: "1" });
    await client.connect(new StreamableHTTPClientTransport(new URL(toolServerUrl)));
    try {
      const pod = await client.callTool({ name: "pods_get", arguments: { namespace: "shop", name: "web-1" } });
      expect(JSON.stringify(pod.content)).toContain("registry.example.com/web:v2");
      const secret = await client.callTool({
        name: "resources_get",
        arguments: { apiVersion: "v1", kind: "Secret", namespace: "shop", name: "db" },
      });
      expect(secret.isError).toBe(true);
      const refused = api.requests().filter((request) => request.user === AGENT_USER && request.status === 403);
      expect(refused.map((request) => request.path)).toEqual(["/api/v1/namespaces/shop/secrets/db"]);
    } finally {
      await client.close();
    }
  });

  test("the watcher, on the Deployment's arguments, opens an incident session owned by the on-call identity", async () => {
    const deployment = container(objectNamed(objects, "Deployment", "spar-watcher"), "watcher");
    const mounted = mountContainer(deployment, tempDir());
    const kubeconfig = writeKubeconfig(join(mounted.dir, "kubeconfig"), {
      server: api.url,
      token: KUBE_TOKEN,
      caPem: certificates.caCert,
    });
    const overridden = ["--in-cluster", "--daemon-url=", "--metrics-addr="];
    const args = expandedArgs(objects, deployment, SECRET_FIXTURES).map(mounted.onDisk);
    expect(args.slice(0, 2)).toEqual(["watcher", "watch"]);
    for (const prefix of overridden) expect(args.some((arg) => arg.startsWith(prefix))).toBe(true);
    const watcher = await spawnWatcher(
      [
        ...args.slice(2).filter((arg) => !overridden.some((prefix) => arg.startsWith(prefix))),
        // Outside a pod: the fake apiserver's kubeconfig, and the agent where the test started it.
        `--kubeconfig=${kubeconfig}`,
        `--daemon-url=${agent.baseUrl}`,
      ],
      containerEnv(objects, deployment, SECRET_FIXTURES),
    );
    try {
      await watcherReady(watcher);
      const pod = api.scenario.createPod({
        namespace: "checkout",
        name: "api-1",
        node: "node-a",
        containers: [{ name: "app", image: "registry.example.com/app:v1", waitingReason: "CrashLoopBackOff" }],
      } as never);
      // --backoff-min-count stays at its default, 3: the kubelet's event repeats three times.
      for (let count = 0; count < 3; count++)
        api.scenario.recordEvent({
          involvedObject: pod,
          reason: "BackOff",
          message: "Back-off restarting failed container app in pod",
          type: "Warning",
          source: { component: "kubelet", host: "node-a" },
        });
      const sessionId = await waitFor(
        () => /fire BackOff pod=checkout\/api-1 → sid=(\S+)/.exec(watcher.stderr())?.[1],
        20_000,
        "the watcher's fire line",
      );
      const asOwner = { authorization: `Bearer ${ONCALL_TOKEN}` };
      const status = await fetch(`${agent.baseUrl}/sessions/${sessionId}/status`, { headers: asOwner });
      expect(status.status).toBe(200);
      const acl = await fetch(`${agent.baseUrl}/sessions/${sessionId}/acl`, { headers: asOwner });
      expect(acl.status).toBe(200);
      expect(await acl.json()).toMatchObject({ owner: OWNER });
      const log = watcher.stderr();
      expect(log).toContain('mode=per-incident, storm=off, cluster="prod-eu-1"');
      expect(log).toContain("source cluster-events: enabled");
      expect(log).toContain("recovery: on");
      // Everything the watcher asked for under these flags, enrichment included, the role allows.
      const asked = api.requests().filter((request) => request.user === WATCHER_USER);
      expect(asked.length).toBeGreaterThan(0);
      expect(asked.filter((request) => request.status === 403)).toEqual([]);
      expect(asked.some((request) => request.path.endsWith("/api-1/log"))).toBe(true);
      expect(log).toContain(`store: ${mounted.onDisk("/var/lib/spar-watcher/occurrences.db")} open`);
    } finally {
      await watcher.stop();
    }
  });
});

describe("spar svc on PostgreSQL", () => {
  let cluster: PostgresCluster;

  beforeAll(() => {
    cluster = startPostgresCluster("spar");
  });

  afterAll(() => {
    cluster?.stop();
  });

  test("starts on the DSN from its Secret, answers /healthz without a token and refuses an inject without one", async () => {
    const secrets = {
      ...SECRET_FIXTURES,
      "spar-svc": { ...SECRET_FIXTURES["spar-svc"], "svc.yaml": svcStoreConfig(cluster.url) },
    };
    const { args, env } = containerOnDisk(objects, "spar-svc", "svc", tempDir(), secrets);
    expect(args[0]).toBe("svc");
    const daemon = await startDaemon({
      role: "svc",
      // startDaemon adds --listen=127.0.0.1:0 for the rendered 0.0.0.0:7777; the store is the
      // config file's, so no --session-db.
      args: args.slice(1).filter((arg) => !arg.startsWith("--listen=")),
      sessionDb: null,
      env,
    });
    try {
      expect((await fetch(`${daemon.baseUrl}/healthz`)).status).toBe(200);
      expect((await postJson(`${daemon.baseUrl}/inject`, { message: "hello" })).status).toBe(401);
      // The store is the DSN's database, its credentials redacted in the log line.
      expect(daemon.log()).toMatch(/store postgres postgres:\/\/\*\*\*@127\.0\.0\.1:\d+\/spar\)/);
    } finally {
      expect(await daemon.sigterm()).toBe(0);
    }
  });
});
