/**
 * deploy/: the Kustomize base and the example overlay render with `kubectl kustomize`, every
 * object validates against the Kubernetes schemas (kubernetes-models), the cluster roles hold no
 * write verb, every container runs non-root on a read-only root filesystem, every argument and
 * config key goes through the real flag tables and config readers, and the rendered set applies to
 * the fake apiserver with kubectl and reads back whole (D470-D474, docs/deploy.md).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../scripts/fake-apiserver/server.ts";
import { buildAgentConfig } from "../../src/cli/agent-config.ts";
import { AGENT_FLAGS } from "../../src/cli/agent-flags.ts";
import { SVC_FLAGS } from "../../src/cli/svc-flags.ts";
import { buildSvcConfig } from "../../src/cli/svc-config.ts";
import { watcherConfigFromArgv } from "../../src/cli/watcher-config.ts";
import { loadConfigFile } from "../../src/config/config-file.ts";
import { parseFlags } from "../../src/config/flag-parser.ts";
import { tempDir } from "../support/daemon.ts";
import {
  DEPLOY_DIR,
  type KubeObject,
  REPO_ROOT,
  SECRET_FIXTURES,
  agentOnDisk,
  container,
  containerOnDisk,
  containerEnv,
  everyContainer,
  expandedArgs,
  generatedConfigMap,
  objectNamed,
  objectsOfKind,
  podSpec,
  renderKustomization,
} from "../support/deploy-manifests.ts";
import { kubectl, writeKubeconfig } from "../support/kube.ts";

const SECRETS = SECRET_FIXTURES;

const WRITE_SAFE_VERBS = new Set(["get", "list", "watch"]);

let base: KubeObject[];
let example: { text: string; objects: KubeObject[] };

beforeAll(() => {
  base = renderKustomization(join(DEPLOY_DIR, "base")).objects;
  example = renderKustomization(join(DEPLOY_DIR, "overlays", "example"));
});

describe("rendering", () => {
  test("the base and the example overlay render the same objects; the overlay pins both images", () => {
    const names = (objects: KubeObject[]) =>
      objects.map((object) => `${object.kind}/${object.metadata.name.replace(/-[a-z0-9]{10}$/, "")}`).sort();
    expect(names(example.objects)).toEqual(names(base));
    expect(names(base)).toContain("Deployment/spar-agent");
    expect(names(base)).toContain("Deployment/spar-watcher");
    expect(names(base)).toContain("Deployment/spar-svc");
    for (const { container: entry } of everyContainer(example.objects))
      expect(entry.image).toMatch(/^[^:]+\/.+:[\w.-]+$/);
    expect(generatedConfigMap(example.objects, "spar-watcher-settings").data).toEqual({ "cluster-name": "prod-eu-1" });
  });

  test("every object validates against the Kubernetes schemas (kubernetes-models)", async () => {
    for (const object of example.objects) {
      const module = object.apiVersion.includes("/") ? object.apiVersion : `v1`;
      const models = (await import(`kubernetes-models/${module}`)) as Record<
        string,
        new (
          data: unknown,
        ) => { validate(): void }
      >;
      const Model = models[object.kind];
      if (!Model) throw new Error(`kubernetes-models has no ${object.apiVersion} ${object.kind}`);
      expect(() => new Model(object).validate(), `${object.kind}/${object.metadata.name}`).not.toThrow();
    }
  });

  test("the validator refuses a broken object, so a pass means something", async () => {
    const { Deployment } = await import("kubernetes-models/apps/v1");
    const broken = structuredClone(objectNamed(example.objects, "Deployment", "spar-agent"));
    (broken.spec as Record<string, unknown>).replicas = "one";
    expect(() => new Deployment(broken as never).validate()).toThrow(/replicas/);
  });
});

describe("propose-only: the roles and the containers", () => {
  test("no ClusterRole or Role holds a verb beyond get, list and watch, a wildcard, secrets or nodes/proxy", () => {
    const roles = example.objects.filter((object) => object.kind === "ClusterRole" || object.kind === "Role");
    expect(roles.map((role) => role.metadata.name).sort()).toEqual(["spar-agent-reader", "spar-watcher"]);
    for (const role of roles) {
      const rules = role.rules as { apiGroups: string[]; resources: string[]; verbs: string[] }[];
      expect(rules.length).toBeGreaterThan(0);
      for (const rule of rules) {
        for (const verb of rule.verbs) expect(WRITE_SAFE_VERBS.has(verb), `${role.metadata.name}: ${verb}`).toBe(true);
        expect([...rule.resources, ...rule.apiGroups]).not.toContain("*");
        expect(rule.resources).not.toContain("secrets");
        for (const sub of ["nodes/proxy", "pods/exec", "pods/attach", "pods/portforward"])
          expect(rule.resources).not.toContain(sub);
      }
    }
  });

  test("each role is bound to its own ServiceAccount; svc has none and mounts no token", () => {
    const bindings = objectsOfKind(example.objects, "ClusterRoleBinding");
    const bound = bindings.map((binding) => {
      const subjects = binding.subjects as { kind: string; name: string; namespace: string }[];
      return `${(binding.roleRef as { name: string }).name}->${subjects.map((s) => `${s.kind}:${s.namespace}/${s.name}`).join(",")}`;
    });
    expect(bound.sort()).toEqual([
      "spar-agent-reader->ServiceAccount:agent-triage/spar-agent",
      "spar-watcher->ServiceAccount:agent-triage/spar-watcher",
    ]);
    const svc = podSpec(objectNamed(example.objects, "Deployment", "spar-svc"));
    expect(svc.serviceAccountName).toBe("spar-svc");
    expect(svc.automountServiceAccountToken).toBe(false);
  });

  test("every container runs non-root, without privilege escalation or capabilities, on a read-only root filesystem", () => {
    const all = everyContainer(example.objects);
    expect(all.map(({ owner, container: entry }) => `${owner.metadata.name}/${entry.name}`).sort()).toEqual([
      "spar-agent/agent",
      "spar-agent/k8s-mcp",
      "spar-svc/svc",
      "spar-watcher/watcher",
    ]);
    for (const { owner, container: entry } of all) {
      const pod = podSpec(owner).securityContext ?? {};
      const own = entry.securityContext ?? {};
      expect(own.runAsNonRoot ?? pod.runAsNonRoot).toBe(true);
      expect(Number(own.runAsUser ?? pod.runAsUser)).toBeGreaterThan(0);
      expect(own.readOnlyRootFilesystem).toBe(true);
      expect(own.allowPrivilegeEscalation).toBe(false);
      expect((own.capabilities as { drop: string[] }).drop).toEqual(["ALL"]);
    }
  });
});

test("no container's arguments, as the kubelet expands them, hold a Secret's value (/proc/<pid>/cmdline is world-readable)", () => {
  const values = Object.values(SECRETS).flatMap((keys) => Object.values(keys));
  for (const { container: entry } of everyContainer(example.objects))
    for (const arg of expandedArgs(example.objects, entry, SECRETS))
      for (const value of values) expect(arg).not.toContain(value);
});

describe("spar agent", () => {
  test("one replica, Recreate, 30 s grace, /healthz probes, the session store on the PVC, plans on an emptyDir", () => {
    const deployment = objectNamed(example.objects, "Deployment", "spar-agent");
    const spec = deployment.spec as { replicas: number; strategy: { type: string } };
    expect(spec.replicas).toBe(1);
    expect(spec.strategy.type).toBe("Recreate");
    const pod = podSpec(deployment);
    expect(pod.terminationGracePeriodSeconds).toBe(30);
    const agent = container(deployment, "agent");
    for (const probe of [agent.livenessProbe, agent.readinessProbe, agent.startupProbe])
      expect(probe?.httpGet).toEqual({ path: "/healthz", port: "attach" });
    expect(agent.ports).toEqual([{ name: "attach", containerPort: 7777 }]);
    const settings = agentSettings();
    const volumeAt = (path: string) => {
      const mount = (agent.volumeMounts ?? []).find((candidate) => path.startsWith(`${candidate.mountPath}/`));
      return pod.volumes?.find((volume) => volume.name === mount?.name);
    };
    expect(volumeAt(settings.sessionDb)?.persistentVolumeClaim).toEqual({ claimName: "spar-agent-sessions" });
    expect(volumeAt(`${settings.plansDir}/x`)?.emptyDir).toEqual({});
    expect(objectNamed(example.objects, "PersistentVolumeClaim", "spar-agent-sessions")).toBeDefined();
  });

  test("its config file and flags go through the real readers; every key is one the daemon reads", () => {
    const settings = agentSettings();
    expect(settings.listen).toEqual({ host: "0.0.0.0", port: 7777 });
    expect(settings.unread).toEqual([]);
    expect(settings.raw.get("permissions.require_plan_artifact")).toBe(true);
    expect(settings.raw.get("tools.wait_and_verify.max_timeout_seconds")).toBe(300);
    expect(settings.raw.get("tools.wait_and_verify.max_attempts")).toBe(40);
    expect(settings.raw.get("alerts.rate_limit_per_target")).toBe("10/min");
    expect(settings.raw.get("alerts.targets")).toEqual([
      expect.objectContaining({ name: "oncall", url_env: "ONCALL_WEBHOOK_URL", template: "generic" }),
    ]);
    expect(settings.raw.get("tools.disable")).toEqual(["bash", "write_file", "edit_file", "delete_file", "fetch_url"]);
    for (const tool of settings.raw.get("tools.wait_and_verify.poll_allow") as string[])
      expect(tool).toMatch(/^k8s_[a-z]+_[a-z]+$/);
  });

  test("ONCALL_WEBHOOK_URL, the model key and the caller tokens come from Secrets, each variable the config names", () => {
    const agent = container(objectNamed(example.objects, "Deployment", "spar-agent"), "agent");
    const fromSecret = Object.fromEntries(
      (agent.env ?? []).flatMap((variable) =>
        variable.valueFrom?.secretKeyRef ? [[variable.name, variable.valueFrom.secretKeyRef.name]] : [],
      ),
    );
    expect(fromSecret).toEqual({
      MODEL_API_KEY: "spar-model",
      WATCHER_TOKEN: "spar-tokens",
      ONCALL_TOKEN: "spar-tokens",
      ONCALL_WEBHOOK_URL: "spar-alerts",
    });
    const data = generatedConfigMap(example.objects, "spar-agent-config").data as Record<string, string>;
    const callers = Bun.YAML.parse(data["callers.yaml"] ?? "") as { callers: { token_env: string }[] };
    for (const caller of callers.callers) expect(Object.keys(fromSecret)).toContain(caller.token_env);
  });

  test("the skill volume projects the k8s-triage bundle file for file, in one ConfigMap under 1 MiB", () => {
    const pod = podSpec(objectNamed(example.objects, "Deployment", "spar-agent"));
    const volume = pod.volumes?.find((candidate) => candidate.name === "skills") as unknown as {
      configMap: { name: string; items: { key: string; path: string }[] };
    };
    const map = example.objects.find((object) => object.metadata.name === volume.configMap.name);
    const data = (map?.data ?? {}) as Record<string, string>;
    expect(volume.configMap.items.map((item) => item.key).sort()).toEqual(Object.keys(data).sort());
    const bundle = [...new Bun.Glob("k8s-triage/**/*").scanSync({ cwd: join(REPO_ROOT, "skills"), onlyFiles: true })];
    expect(volume.configMap.items.map((item) => item.path).sort()).toEqual(bundle.sort());
    for (const item of volume.configMap.items)
      expect(data[item.key], item.path).toBe(readFileSync(join(REPO_ROOT, "skills", item.path), "utf8"));
    expect(new TextEncoder().encode(JSON.stringify(map)).length).toBeLessThan(1024 * 1024);
    const agentConfig = generatedConfigMap(example.objects, "spar-agent-config").data as Record<string, string>;
    const skillsDir = (Bun.YAML.parse(agentConfig["config.yaml"] ?? "") as { skills: { dir: string } }).skills.dir;
    const agent = container(objectNamed(example.objects, "Deployment", "spar-agent"), "agent");
    expect((agent.volumeMounts ?? []).find((mount) => mount.name === "skills")?.mountPath).toBe(skillsDir);
  });
});

describe("spar watcher watch", () => {
  test("its arguments parse through the watcher's own flag table and checks", () => {
    const watcher = container(objectNamed(example.objects, "Deployment", "spar-watcher"), "watcher");
    const args = expandedArgs(example.objects, watcher, SECRETS);
    expect(args.slice(0, 2)).toEqual(["watcher", "watch"]);
    const config = watcherConfigFromArgv(args.slice(2));
    if (!config.ok) throw new Error(config.error);
    expect(config.value.clusterName).toBe("prod-eu-1");
    expect(config.value.sources).toEqual({ auto: false, names: ["cluster-events"] });
    expect(config.value.daemonUrl).toBe("http://spar-agent.agent-triage.svc.cluster.local:7777");
    expect(config.value.metricsAddr).toBe(":9090");
    expect(containerEnv(example.objects, watcher, SECRETS).WATCHER_TOKEN).toBe("watcher-token-value");
  });

  test("probes /healthz and /readyz on the metrics port, a Service and a NetworkPolicy for that port only", () => {
    const deployment = objectNamed(example.objects, "Deployment", "spar-watcher");
    const watcher = container(deployment, "watcher");
    expect(watcher.ports).toEqual([{ name: "metrics", containerPort: 9090 }]);
    expect(watcher.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "metrics" });
    expect(watcher.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "metrics" });
    const service = objectNamed(example.objects, "Service", "spar-watcher-metrics");
    expect((service.spec as { ports: unknown[] }).ports).toEqual([
      { name: "metrics", port: 9090, targetPort: "metrics" },
    ]);
    const policy = objectNamed(example.objects, "NetworkPolicy", "spar-watcher").spec as {
      podSelector: { matchLabels: Record<string, string> };
      ingress: { ports: unknown[] }[];
    };
    expect(policy.podSelector.matchLabels).toEqual({ "app.kubernetes.io/name": "spar-watcher" });
    expect(policy.ingress.flatMap((rule) => rule.ports)).toEqual([{ protocol: "TCP", port: 9090 }]);
  });
});

describe("spar svc", () => {
  test("on PostgreSQL: the DSN from the config file in its Secret, SVC_INJECT_TOKEN from it too; read by svc's own readers", () => {
    const deployment = objectNamed(example.objects, "Deployment", "spar-svc");
    const svc = container(deployment, "svc");
    const { args, env, mounted } = containerOnDisk(example.objects, "spar-svc", "svc", tempDir());
    expect(args[0]).toBe("svc");
    expect(args).toContain("--session-db-driver=postgres");
    const flags = parseFlags(SVC_FLAGS, args.slice(1));
    if (!flags.ok) throw new Error(flags.error);
    const configPath = flags.value.values.get("config") as string;
    expect(mounted.inContainer(configPath)).toBe("/etc/spar-svc/svc.yaml");
    const file = loadConfigFile(configPath);
    if (!file.ok) throw new Error(file.error);
    const config = buildSvcConfig(flags.value.values, file.value, env, tempDir());
    if (!config.ok) throw new Error(config.error);
    const dsn = "postgres://spar:pw@postgres:5432/spar";
    expect(config.value.sessionDb).toMatchObject({ driver: "postgres", location: dsn });
    expect(file.value.unread()).toEqual([]);
    // Every process may read /proc/<pid>/cmdline: the DSN is in no argument, nor in the environment.
    for (const text of [...args, ...Object.values(env)]) expect(text).not.toContain("pw@");
    expect(config.value.listen).toMatchObject({ token: "inject-token-value" });
    const secretVariables = (svc.env ?? []).filter((variable) => variable.valueFrom?.secretKeyRef);
    expect(secretVariables.map((variable) => variable.name)).toEqual(["SVC_INJECT_TOKEN"]);
    const volume = podSpec(deployment).volumes?.find((candidate) => candidate.name === "store-config");
    expect(volume?.secret).toEqual({
      secretName: "spar-svc",
      defaultMode: 0o440,
      items: [{ key: "svc.yaml", path: "svc.yaml" }],
    });
    for (const probe of [svc.livenessProbe, svc.readinessProbe, svc.startupProbe])
      expect(probe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect((deployment.spec as { strategy: { type: string } }).strategy.type).toBe("Recreate");
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
    writeFileSync(rendered, example.text);
  });

  afterAll(async () => {
    await api?.stop();
  });

  test("kubectl apply creates every object, and reading them back gives what was rendered", async () => {
    // The fake serves no OpenAPI schema for kubectl's client-side check: the schemas are checked above.
    const applied = await kubectl(kubeconfig, ["apply", "--validate=false", "-f", rendered], 60_000);
    expect(applied.stderr).toBe("");
    expect(applied.exitCode).toBe(0);
    expect(applied.stdout.trim().split("\n")).toHaveLength(example.objects.length);
    const read = await kubectl(kubeconfig, ["get", "-f", rendered, "-o", "json"], 60_000);
    expect(read.exitCode).toBe(0);
    const items = (JSON.parse(read.stdout) as { items: KubeObject[] }).items;
    expect(items).toHaveLength(example.objects.length);
    for (const object of example.objects) {
      const back = items.find((item) => item.kind === object.kind && item.metadata.name === object.metadata.name);
      const { metadata, ...body } = object;
      expect(back, `${object.kind}/${metadata.name}`).toMatchObject(body);
      expect(back?.metadata).toMatchObject({ name: metadata.name, labels: metadata.labels ?? {} });
    }
  });

  test("applying again changes nothing", async () => {
    const again = await kubectl(kubeconfig, ["apply", "--validate=false", "-f", rendered], 60_000);
    expect(again.exitCode).toBe(0);
    for (const line of again.stdout.trim().split("\n")) expect(line).toMatch(/ unchanged$/);
  });
});

test("docs/deploy.md names every Secret and key the manifests read", () => {
  const page = readFileSync(join(REPO_ROOT, "docs", "deploy.md"), "utf8");
  for (const [secret, keys] of Object.entries(SECRETS)) {
    expect(page).toContain(secret);
    for (const key of Object.keys(keys)) expect(page).toContain(key);
  }
  const referenced = everyContainer(example.objects).flatMap(({ container: entry }) =>
    (entry.env ?? []).flatMap((variable) =>
      variable.valueFrom?.secretKeyRef ? [variable.valueFrom.secretKeyRef] : [],
    ),
  );
  for (const ref of referenced) expect(Object.keys(SECRETS[ref.name as keyof typeof SECRETS] ?? {})).toContain(ref.key);
});

/** The agent's settings from the rendered ConfigMap and arguments, read by the daemon's own readers. */
function agentSettings() {
  const { mounted, args, workingDir } = agentOnDisk(example.objects, tempDir());
  expect(args[0]).toBe("agent");
  const flags = parseFlags(AGENT_FLAGS, args.slice(1));
  if (!flags.ok) throw new Error(flags.error);
  const file = loadConfigFile(flags.value.values.get("config") as string);
  if (!file.ok) throw new Error(file.error);
  const built = buildAgentConfig(flags.value.values, file.value, workingDir, 2);
  if (!built.ok) throw new Error(built.error);
  return {
    listen: built.value.listen,
    sessionDb: mounted.inContainer(built.value.sessionDb),
    plansDir: mounted.inContainer(built.value.plansDir),
    unread: file.value.unread(),
    raw: file.value,
  };
}
