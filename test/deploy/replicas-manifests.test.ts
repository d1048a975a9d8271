/**
 * deploy/overlays/replicas (the example overlay with component agent-replicas): the agent as three
 * replicas on PostgreSQL renders, validates against the Kubernetes schemas, adds no role and no
 * verb, keeps every container's security context, reads its store settings through the agent's own
 * flag table and config reader (the URL from a ConfigMap without a password, the password from a
 * Secret as PGPASSWORD), rolls one pod at a time under a PodDisruptionBudget behind the Service,
 * keeps the watcher one replica, and applies to the fake apiserver (D535-D539, docs/deploy.md).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { buildAgentConfig } from "../../src/cli/agent-config.ts";
import { AGENT_FLAGS } from "../../src/cli/agent-flags.ts";
import { loadConfigFile } from "../../src/config/config-file.ts";
import { parseFlags } from "../../src/config/flag-parser.ts";
import { tempDir } from "../support/daemon.ts";
import {
  DEPLOY_DIR,
  type KubeObject,
  REPO_ROOT,
  SECRET_FIXTURES,
  container,
  containerOnDisk,
  everyContainer,
  expandedArgs,
  generatedConfigMap,
  objectNamed,
  objectsOfKind,
  podSpec,
  renderKustomization,
} from "../support/deploy-manifests.ts";
import { kubectl, writeKubeconfig } from "../support/kube.ts";

/** The operator's Secrets: the example's and the agent's database password (docs/deploy.md#secrets). */
const SECRETS = { ...SECRET_FIXTURES, "spar-agent-db": { password: "agent-db-password-value" } };

let example: KubeObject[];
let replicas: { text: string; objects: KubeObject[] };

beforeAll(() => {
  example = renderKustomization(join(DEPLOY_DIR, "overlays", "example")).objects;
  replicas = renderKustomization(join(DEPLOY_DIR, "overlays", "replicas"));
});

const names = (objects: KubeObject[]) =>
  objects.map((object) => `${object.kind}/${object.metadata.name.replace(/-[a-z0-9]{10}$/, "")}`).sort();

const agentDeployment = () => objectNamed(replicas.objects, "Deployment", "spar-agent");

describe("rendering", () => {
  test("the example's objects without the PVC, with a PodDisruptionBudget and the store's ConfigMap", () => {
    const expected = names(example)
      .filter((name) => name !== "PersistentVolumeClaim/spar-agent-sessions")
      .concat(["ConfigMap/spar-agent-store", "PodDisruptionBudget/spar-agent"])
      .sort();
    expect(names(replicas.objects)).toEqual(expected);
    for (const object of replicas.objects)
      if (object.kind !== "Namespace" && !object.kind.startsWith("Cluster"))
        expect(object.metadata.namespace, `${object.kind}/${object.metadata.name}`).toBe("agent-triage");
  });

  test("every object validates against the Kubernetes schemas (kubernetes-models)", async () => {
    for (const object of replicas.objects) {
      const models = (await import(
        `kubernetes-models/${object.apiVersion.includes("/") ? object.apiVersion : "v1"}`
      )) as Record<string, new (data: unknown) => { validate(): void }>;
      const Model = models[object.kind];
      if (!Model) throw new Error(`kubernetes-models has no ${object.apiVersion} ${object.kind}`);
      expect(() => new Model(object).validate(), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
  });
});

describe("what stays as the example has it", () => {
  test("the same roles and bindings, verb for verb: the overlay adds no write verb", () => {
    for (const kind of ["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "ServiceAccount"])
      expect(objectsOfKind(replicas.objects, kind), kind).toEqual(objectsOfKind(example, kind));
    for (const role of objectsOfKind(replicas.objects, "ClusterRole"))
      for (const rule of role.rules as { verbs: string[] }[])
        for (const verb of rule.verbs) expect(["get", "list", "watch"]).toContain(verb);
  });

  test("every container keeps its security context, and the pods theirs", () => {
    const before = new Map(
      everyContainer(example).map(({ owner, container: entry }) => [
        `${owner.metadata.name}/${entry.name}`,
        { pod: podSpec(owner).securityContext, own: entry.securityContext },
      ]),
    );
    const after = everyContainer(replicas.objects);
    expect(after.map(({ owner, container: entry }) => `${owner.metadata.name}/${entry.name}`).sort()).toEqual(
      [...before.keys()].sort(),
    );
    for (const { owner, container: entry } of after) {
      const key = `${owner.metadata.name}/${entry.name}`;
      expect(before.has(key), key).toBe(true);
      expect({ pod: podSpec(owner).securityContext, own: entry.securityContext }, key).toEqual(
        before.get(key) ?? { pod: undefined, own: undefined },
      );
      expect(entry.securityContext?.readOnlyRootFilesystem, key).toBe(true);
    }
  });

  test("the watcher stays one replica, Recreate, pointed at the agents' Service (D539)", () => {
    const watcher = objectNamed(replicas.objects, "Deployment", "spar-watcher");
    expect(watcher).toEqual(objectNamed(example, "Deployment", "spar-watcher"));
    expect((watcher.spec as { replicas: number }).replicas).toBe(1);
    expect((watcher.spec as { strategy: { type: string } }).strategy.type).toBe("Recreate");
    const args = container(watcher, "watcher").args ?? [];
    const service = objectNamed(replicas.objects, "Service", "spar-agent");
    const port = (service.spec as { ports: { port: number }[] }).ports[0]?.port;
    expect(args).toContain(`--daemon-url=http://spar-agent.agent-triage.svc.cluster.local:${port}`);
  });
});

describe("spar agent: three replicas", () => {
  test("three, rolling one at a time (maxUnavailable 1, maxSurge 1), readiness on /healthz, spread across nodes", () => {
    const spec = agentDeployment().spec as {
      replicas: number;
      strategy: { type: string; rollingUpdate: Record<string, number> };
    };
    expect(spec.replicas).toBe(3);
    expect(spec.strategy).toEqual({ type: "RollingUpdate", rollingUpdate: { maxUnavailable: 1, maxSurge: 1 } });
    const agent = container(agentDeployment(), "agent");
    expect(agent.readinessProbe?.httpGet).toEqual({ path: "/healthz", port: "attach" });
    const pod = podSpec(agentDeployment()) as unknown as {
      topologySpreadConstraints: { topologyKey: string; whenUnsatisfiable: string; labelSelector: unknown }[];
    };
    const byKey = Object.fromEntries(pod.topologySpreadConstraints.map((entry) => [entry.topologyKey, entry]));
    expect(byKey["kubernetes.io/hostname"]).toMatchObject({ maxSkew: 1, whenUnsatisfiable: "DoNotSchedule" });
    for (const entry of pod.topologySpreadConstraints)
      expect(entry.labelSelector).toEqual({ matchLabels: { "app.kubernetes.io/name": "spar-agent" } });
  });

  test("a PodDisruptionBudget keeps two of the three, selecting the Deployment's pods; the Service selects them too", () => {
    const budget = objectNamed(replicas.objects, "PodDisruptionBudget", "spar-agent").spec as {
      minAvailable: number;
      selector: { matchLabels: Record<string, string> };
    };
    expect(budget.minAvailable).toBe(2);
    const labels = (agentDeployment().spec as { template: { metadata: { labels: Record<string, string> } } }).template
      .metadata.labels;
    expect(labels).toMatchObject(budget.selector.matchLabels);
    const service = objectNamed(replicas.objects, "Service", "spar-agent").spec as {
      selector: Record<string, string>;
      ports: unknown[];
    };
    expect(labels).toMatchObject(service.selector);
    expect(service.ports).toEqual([{ name: "attach", port: 7777, targetPort: "attach" }]);
  });

  test("the store through the agent's own readers: postgres, the URL without a password, lease 30 s, pool 8", () => {
    const { args, env, workingDir } = containerOnDisk(replicas.objects, "spar-agent", "agent", tempDir(), SECRETS);
    const flags = parseFlags(AGENT_FLAGS, args.slice(1));
    if (!flags.ok) throw new Error(flags.error);
    const file = loadConfigFile(flags.value.values.get("config") as string);
    if (!file.ok) throw new Error(file.error);
    const built = buildAgentConfig(flags.value.values, file.value, workingDir, 2);
    if (!built.ok) throw new Error(built.error);
    expect(built.value.sessionDbDriver).toBe("postgres");
    expect(built.value.sessionDb).toBe("postgres://spar@postgres.db.svc:5432/spar");
    expect(new URL(built.value.sessionDb).password).toBe("");
    expect(built.value.sessionDbLeaseMs).toBe(30_000);
    expect(built.value.sessionDbPool).toBe(8);
    expect(env.PGPASSWORD).toBe(SECRETS["spar-agent-db"].password);
    expect(file.value.unread()).toEqual([]);
  });

  test("the password is in no argument, no ConfigMap and no literal variable: only Secret spar-agent-db's PGPASSWORD", () => {
    const password = SECRETS["spar-agent-db"].password;
    const agent = container(agentDeployment(), "agent");
    for (const arg of expandedArgs(replicas.objects, agent, SECRETS)) expect(arg).not.toContain(password);
    const fromSecret = (agent.env ?? []).filter(
      (variable) => variable.valueFrom?.secretKeyRef?.name === "spar-agent-db",
    );
    expect(fromSecret).toEqual([
      { name: "PGPASSWORD", valueFrom: { secretKeyRef: { name: "spar-agent-db", key: "password" } } },
    ]);
    const store = generatedConfigMap(replicas.objects, "spar-agent-store").data as Record<string, string>;
    expect(Object.keys(store)).toEqual(["session-db-url"]);
    expect(new URL(store["session-db-url"] ?? "").password).toBe("");
  });

  test("no PVC, no sessions volume or mount: every replica's state is in the database", () => {
    const pod = podSpec(agentDeployment());
    expect(pod.volumes?.map((volume) => volume.name)).not.toContain("sessions");
    for (const volume of pod.volumes ?? []) expect(volume.persistentVolumeClaim).toBeUndefined();
    for (const entry of pod.containers)
      expect((entry.volumeMounts ?? []).map((mount) => mount.mountPath)).not.toContain("/var/lib/spar");
  });

  test("the termination grace covers the orderly stop's worst case, the config's drain included (D537)", () => {
    const data = generatedConfigMap(replicas.objects, "spar-agent-config").data as Record<string, string>;
    const drain = (Bun.YAML.parse(data["config.yaml"] ?? "") as { attach: { shutdown_timeout: string } }).attach
      .shutdown_timeout;
    expect(drain).toMatch(/^\d+s$/);
    // docs/agent.md#stopping: cancel 2 s, the drain, subagents 5 s, tool servers 2 s, a commit in
    // doubt resolved at the store's close 30 s (D501), telemetry 3 s.
    const worst = 2 + Number.parseInt(drain, 10) + 5 + 2 + 30 + 3;
    expect(podSpec(agentDeployment()).terminationGracePeriodSeconds).toBeGreaterThanOrEqual(worst);
  });
});

describe("applied to the fake apiserver", () => {
  let api: FakeApiserver;
  let kubeconfig: string;
  let rendered: string;

  beforeAll(async () => {
    api = await startFakeApiserver({});
    const dir = tempDir();
    kubeconfig = writeKubeconfig(join(dir, "kubeconfig"), { server: api.url });
    rendered = join(dir, "rendered.yaml");
    writeFileSync(rendered, replicas.text);
  });

  afterAll(async () => {
    await api?.stop();
  });

  test("kubectl apply creates every object and reads it back as rendered; again, nothing changes", async () => {
    const applied = await kubectl(kubeconfig, ["apply", "--validate=false", "-f", rendered], 60_000);
    expect(applied.stderr).toBe("");
    expect(applied.exitCode).toBe(0);
    expect(applied.stdout.trim().split("\n")).toHaveLength(replicas.objects.length);
    const read = await kubectl(kubeconfig, ["get", "-f", rendered, "-o", "json"], 60_000);
    expect(read.exitCode).toBe(0);
    const items = (JSON.parse(read.stdout) as { items: KubeObject[] }).items;
    for (const object of replicas.objects) {
      const back = items.find((item) => item.kind === object.kind && item.metadata.name === object.metadata.name);
      const { metadata, ...body } = object;
      expect(back, `${object.kind}/${metadata.name}`).toMatchObject(body);
    }
    const again = await kubectl(kubeconfig, ["apply", "--validate=false", "-f", rendered], 60_000);
    expect(again.exitCode).toBe(0);
    // kubectl's patch of a PodDisruptionBudget always carries its selector (replaced whole, never
    // merged), so it says "configured" on every apply, here as on a real cluster; what it holds
    // is unchanged all the same.
    for (const line of again.stdout.trim().split("\n"))
      expect(line).toMatch(line.startsWith("poddisruptionbudget.policy/") ? / (unchanged|configured)$/ : / unchanged$/);
    const reread = await kubectl(kubeconfig, ["get", "-f", rendered, "-o", "json"], 60_000);
    const specs = (text: string) =>
      (JSON.parse(text) as { items: KubeObject[] }).items.map((item) => [item.kind, item.metadata.name, item.spec]);
    expect(specs(reread.stdout)).toEqual(specs(read.stdout));
  });
});

test("docs/deploy.md names the overlay, the component, Secret spar-agent-db and its key", () => {
  const page = readFileSync(join(REPO_ROOT, "docs", "deploy.md"), "utf8");
  for (const text of ["deploy/overlays/replicas", "deploy/components/agent-replicas", "spar-agent-db", "password"])
    expect(page).toContain(text);
});
