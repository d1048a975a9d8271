/**
 * Helpers for the deploy/ tests (test/deploy/): render a kustomization with `kubectl kustomize`,
 * split the output into objects, find objects and containers, and expand a container's arguments
 * the way the kubelet does (`$(VAR)` from the container's own env: a literal, a ConfigMap key of
 * the rendered set, or a Secret key from the fixture values the test passes), and lay a
 * container's mounts out on disk so a daemon can run on the rendered files.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";

export const REPO_ROOT = resolve(import.meta.dir, "../..");
export const DEPLOY_DIR = join(REPO_ROOT, "deploy");

export type KubeObject = Record<string, unknown> & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string> };
};

export interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string };
    configMapKeyRef?: { name: string; key: string };
  };
}

export interface Container {
  name: string;
  image: string;
  args?: string[];
  env?: EnvVar[];
  ports?: { name?: string; containerPort: number }[];
  securityContext?: Record<string, unknown>;
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  startupProbe?: Probe;
}

export interface Probe {
  httpGet?: { path: string; port: string | number };
  tcpSocket?: { port: string | number };
}

export interface PodSpec {
  containers: Container[];
  securityContext?: Record<string, unknown>;
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  terminationGracePeriodSeconds?: number;
  volumes?: Array<Record<string, unknown> & { name: string }>;
}

/** `kubectl kustomize DIR` (fails the test with kubectl's stderr when it does not render). */
export function renderKustomization(dir: string): { text: string; objects: KubeObject[] } {
  const run = Bun.spawnSync(["kubectl", "kustomize", dir], { stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`kubectl kustomize ${dir} failed: ${run.stderr.toString()}`);
  const text = run.stdout.toString();
  const objects = text
    .split(/^---$/m)
    .map((document) => Bun.YAML.parse(document) as KubeObject | null)
    .filter((object): object is KubeObject => object !== null && typeof object === "object");
  return { text, objects };
}

export function objectsOfKind(objects: readonly KubeObject[], kind: string): KubeObject[] {
  return objects.filter((object) => object.kind === kind);
}

export function objectNamed(objects: readonly KubeObject[], kind: string, name: string): KubeObject {
  const found = objects.find((object) => object.kind === kind && object.metadata.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in the rendered manifests`);
  return found;
}

/** A generated ConfigMap, found by its generator name (kustomize appends a content hash). */
export function generatedConfigMap(objects: readonly KubeObject[], name: string): KubeObject {
  const found = objects.find(
    (object) => object.kind === "ConfigMap" && new RegExp(`^${name}-[a-z0-9]{10}$`).test(object.metadata.name),
  );
  if (!found) throw new Error(`no generated ConfigMap ${name}`);
  return found;
}

export function podSpec(deployment: KubeObject): PodSpec {
  return (deployment.spec as { template: { spec: PodSpec } }).template.spec;
}

export function container(deployment: KubeObject, name: string): Container {
  const found = podSpec(deployment).containers.find((candidate) => candidate.name === name);
  if (!found) throw new Error(`no container ${name} in ${deployment.metadata.name}`);
  return found;
}

/** The value a container's variable gets: a literal, a rendered ConfigMap's key, or a fixture Secret's. */
export function envValue(
  objects: readonly KubeObject[],
  variable: EnvVar,
  secrets: Readonly<Record<string, Record<string, string>>>,
): string {
  if (variable.value !== undefined) return variable.value;
  const secretRef = variable.valueFrom?.secretKeyRef;
  if (secretRef) {
    const value = secrets[secretRef.name]?.[secretRef.key];
    if (value === undefined) throw new Error(`no fixture for Secret ${secretRef.name} key ${secretRef.key}`);
    return value;
  }
  const mapRef = variable.valueFrom?.configMapKeyRef;
  if (mapRef) {
    const map = objects.find((object) => object.kind === "ConfigMap" && object.metadata.name === mapRef.name);
    const value = (map?.data as Record<string, string> | undefined)?.[mapRef.key];
    if (value === undefined) throw new Error(`ConfigMap ${mapRef.name} has no key ${mapRef.key}`);
    return value;
  }
  throw new Error(`variable ${variable.name} has no value`);
}

/** The container's environment, as the kubelet builds it. */
export function containerEnv(
  objects: readonly KubeObject[],
  target: Container,
  secrets: Readonly<Record<string, Record<string, string>>>,
): Record<string, string> {
  return Object.fromEntries(
    (target.env ?? []).map((variable) => [variable.name, envValue(objects, variable, secrets)]),
  );
}

/** The container's arguments with `$(VAR)` expanded from its environment (an unknown one stays, as in Kubernetes). */
export function expandedArgs(
  objects: readonly KubeObject[],
  target: Container,
  secrets: Readonly<Record<string, Record<string, string>>>,
): string[] {
  const env = containerEnv(objects, target, secrets);
  return (target.args ?? []).map((arg) =>
    arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole),
  );
}

/** Every container of every workload in the set, with its owner's name. */
export function everyContainer(objects: readonly KubeObject[]): { owner: KubeObject; container: Container }[] {
  return objectsOfKind(objects, "Deployment").flatMap((owner) =>
    podSpec(owner).containers.map((entry) => ({ owner, container: entry })),
  );
}

/** What the operator's Secrets hold in the tests (docs/deploy.md#secrets names each key). */
export const SECRET_FIXTURES = {
  "spar-tokens": { watcher: "watcher-token-value", oncall: "oncall-token-value" },
  "spar-model": { "api-key": "model-key-value" },
  "spar-alerts": { "oncall-webhook-url": "https://hooks.example.com/oncall" },
  "spar-svc": {
    "inject-token": "inject-token-value",
    "svc.yaml": svcStoreConfig("postgres://spar:pw@postgres:5432/spar"),
  },
};

/** The svc config file Secret spar-svc holds: the DSN and nothing else. */
export function svcStoreConfig(dsn: string): string {
  return `svc:\n  session_db:\n    path: ${dsn}\n`;
}

export type SecretValues = Readonly<Record<string, Record<string, string>>>;

/** A container's mount paths as directories under `dir`, and a rewriter of its paths to them. */
export interface MountedContainer {
  dir: string;
  /** A text with every mount path (and what lies below it) moved under `dir`. */
  onDisk(text: string): string;
  /** A path under `dir` as the container sees it. */
  inContainer(path: string): string;
}

export function mountContainer(target: Container, dir: string): MountedContainer {
  const mounts = (target.volumeMounts ?? []).map((mount) => mount.mountPath).sort((a, b) => b.length - a.length);
  for (const mount of mounts) mkdirSync(join(dir, mount), { recursive: true });
  // One pass, so a path already moved under `dir` (itself under /tmp) is not moved again.
  const pattern = new RegExp(`(^|[\\s="'\\[,])(${mounts.join("|")})(?=/|$|[\\s"',\\]])`, "gm");
  return {
    dir,
    onDisk: (text) => text.replace(pattern, (_whole, before: string, mount: string) => `${before}${dir}${mount}`),
    inContainer: (path) => (path.startsWith(dir) ? path.slice(dir.length) : path),
  };
}

type ProjectedVolume = {
  configMap?: { name: string; items?: { key: string; path: string }[] };
  secret?: { secretName: string; items?: { key: string; path: string }[] };
};

/** The files a ConfigMap or Secret volume projects: every key, or its items at their paths. */
function projectedFiles(
  objects: readonly KubeObject[],
  volume: ProjectedVolume,
  secrets: SecretValues,
): { path: string; text: string }[] {
  const source = volume.configMap ?? volume.secret;
  if (!source) return [];
  const data = volume.configMap
    ? ((objects.find((object) => object.kind === "ConfigMap" && object.metadata.name === volume.configMap?.name)
        ?.data ?? {}) as Record<string, string>)
    : (secrets[volume.secret?.secretName ?? ""] ?? {});
  return (source.items ?? Object.keys(data).map((key) => ({ key, path: key }))).map(({ key, path }) => {
    const text = data[key];
    if (text === undefined) throw new Error(`volume item ${key} is not in its ConfigMap or Secret`);
    return { path, text };
  });
}

/**
 * A container on disk: each ConfigMap and Secret volume projected where it is mounted (the files'
 * mount paths rewritten), and its arguments and environment as the kubelet gives them, paths
 * rewritten.
 */
export function containerOnDisk(
  objects: readonly KubeObject[],
  deploymentName: string,
  containerName: string,
  dir: string,
  secrets: SecretValues = SECRET_FIXTURES,
): { mounted: MountedContainer; args: string[]; env: Record<string, string>; workingDir: string } {
  const deployment = objectNamed(objects, "Deployment", deploymentName);
  const target = container(deployment, containerName);
  const mounted = mountContainer(target, dir);
  for (const mount of target.volumeMounts ?? []) {
    const volume = podSpec(deployment).volumes?.find((candidate) => candidate.name === mount.name) ?? {};
    for (const file of projectedFiles(objects, volume as ProjectedVolume, secrets)) {
      const path = join(dir, mount.mountPath, file.path);
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, mounted.onDisk(file.text));
    }
  }
  return {
    mounted,
    args: expandedArgs(objects, target, secrets).map(mounted.onDisk),
    env: containerEnv(objects, target, secrets),
    workingDir: mounted.onDisk((target as { workingDir?: string }).workingDir ?? "/"),
  };
}

/** The agent container on disk (containerOnDisk). */
export function agentOnDisk(objects: readonly KubeObject[], dir: string) {
  return containerOnDisk(objects, "spar-agent", "agent", dir);
}

/** The kubernetes-mcp-server binary the npm package installs for this platform (its bin/ wrapper needs node). */
export function kubernetesMcpServerBinary(): string {
  const arch = process.arch === "x64" ? "amd64" : process.arch;
  const name = `kubernetes-mcp-server-${process.platform}-${arch}`;
  return join(REPO_ROOT, "node_modules", name, "bin", name);
}

/** A free port on 127.0.0.1 for a server that cannot be told port 0 (it is bound at once after). */
export function freeLoopbackPort(): number {
  const probe = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const port = probe.port;
  probe.stop(true);
  return port;
}
