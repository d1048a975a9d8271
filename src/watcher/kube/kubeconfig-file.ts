/**
 * Reading kubeconfig files and the in-cluster service account without client-node's KubeConfig
 * (D140: its module graph alone costs the watcher ~25 MB of resident memory). Covers what the
 * watcher's connection uses: clusters (server, certificate-authority[-data],
 * insecure-skip-tls-verify), users (token, tokenFile, client-certificate[-data], client-key[-data],
 * an auth-provider tokenFile), contexts and current-context; relative file paths resolve against
 * the kubeconfig's directory; `KUBECONFIG` lists are merged first-wins, else ~/.kube/config.
 */
import { existsSync, readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, isAbsolute, join } from "node:path";

export interface KubeCluster {
  name: string;
  server: string;
  caData?: string;
  caFile?: string;
  skipTLSVerify?: boolean;
}

export interface KubeUser {
  name: string;
  token?: string;
  tokenFile?: string;
  certData?: string;
  certFile?: string;
  keyData?: string;
  keyFile?: string;
}

export interface KubeContext {
  name: string;
  cluster: string;
  user: string;
}

export interface KubeconfigData {
  clusters: KubeCluster[];
  users: KubeUser[];
  contexts: KubeContext[];
  currentContext: string;
}

const SERVICE_ACCOUNT = "/var/run/secrets/kubernetes.io/serviceaccount";

type Raw = Record<string, unknown>;
const str = (value: unknown) => (typeof value === "string" && value !== "" ? value : undefined);
const named = (value: unknown): Raw[] =>
  Array.isArray(value)
    ? (value as Raw[]).filter((item) => item && typeof item === "object" && typeof item.name === "string")
    : [];

function parseOne(path: string): KubeconfigData {
  const doc = (Bun.YAML.parse(readFileSync(path, "utf8")) ?? {}) as Raw;
  const base = dirname(path);
  const file = (value: unknown) => {
    const text = str(value);
    return text === undefined ? undefined : isAbsolute(text) ? text : join(base, text);
  };
  const opt = <T extends object>(key: string, value: unknown): Partial<T> =>
    value === undefined ? {} : ({ [key]: value } as Partial<T>);
  return {
    clusters: named(doc.clusters).map((entry) => {
      const cluster = (entry.cluster ?? {}) as Raw;
      return {
        name: String(entry.name),
        server: str(cluster.server) ?? "",
        ...opt<KubeCluster>("caData", str(cluster["certificate-authority-data"])),
        ...opt<KubeCluster>("caFile", file(cluster["certificate-authority"])),
        ...(cluster["insecure-skip-tls-verify"] === true ? { skipTLSVerify: true } : {}),
      };
    }),
    users: named(doc.users).map((entry) => {
      const user = (entry.user ?? {}) as Raw;
      const provider = ((user["auth-provider"] as Raw | undefined)?.config ?? {}) as Raw;
      return {
        name: String(entry.name),
        ...opt<KubeUser>("token", str(user.token)),
        ...opt<KubeUser>("tokenFile", file(user.tokenFile) ?? file(provider.tokenFile)),
        ...opt<KubeUser>("certData", str(user["client-certificate-data"])),
        ...opt<KubeUser>("certFile", file(user["client-certificate"])),
        ...opt<KubeUser>("keyData", str(user["client-key-data"])),
        ...opt<KubeUser>("keyFile", file(user["client-key"])),
      };
    }),
    contexts: named(doc.contexts).map((entry) => {
      const context = (entry.context ?? {}) as Raw;
      return { name: String(entry.name), cluster: str(context.cluster) ?? "", user: str(context.user) ?? "" };
    }),
    currentContext: str(doc["current-context"]) ?? "",
  };
}

/** One kubeconfig file, or the standard search path (KUBECONFIG, merged first-wins; else ~/.kube/config). */
export function readKubeconfig(path?: string): KubeconfigData {
  const paths = path ? [path] : (process.env.KUBECONFIG ?? "").split(":").filter((item) => item !== "");
  if (paths.length === 0) paths.push(join(homedir(), ".kube", "config"));
  const present = path ? [path] : paths.filter((candidate) => existsSync(candidate));
  if (present.length === 0) throw new Error(`no kubeconfig found (looked in ${paths.join(", ")})`);
  const merged: KubeconfigData = { clusters: [], users: [], contexts: [], currentContext: "" };
  for (const file of present) {
    const one = parseOne(file);
    const add = <T extends { name: string }>(into: T[], items: T[]) => {
      for (const item of items) if (!into.some((existing) => existing.name === item.name)) into.push(item);
    };
    add(merged.clusters, one.clusters);
    add(merged.users, one.users);
    add(merged.contexts, one.contexts);
    if (!merged.currentContext) merged.currentContext = one.currentContext;
  }
  return merged;
}

/** The in-cluster service account, as a one-context kubeconfig. */
export function inClusterKubeconfig(): KubeconfigData {
  const host = process.env.KUBERNETES_SERVICE_HOST ?? "";
  const port = process.env.KUBERNETES_SERVICE_PORT ?? "443";
  const scheme = ["80", "8080", "8001"].includes(port) ? "http" : "https";
  const server = `${scheme}://${host.includes(":") ? `[${host}]` : host}:${port}`;
  return {
    clusters: [{ name: "in-cluster", server, caFile: `${SERVICE_ACCOUNT}/ca.crt` }],
    users: [{ name: "in-cluster", tokenFile: `${SERVICE_ACCOUNT}/token` }],
    contexts: [{ name: "in-cluster", cluster: "in-cluster", user: "in-cluster" }],
    currentContext: "in-cluster",
  };
}
