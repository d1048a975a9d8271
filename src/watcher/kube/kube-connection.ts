/**
 * How the watcher reaches the API server (D20, D140): the kubeconfig (or the in-cluster service
 * account) is read by kubeconfig-file.ts, and every request goes through Bun's fetch with the
 * cluster CA, client certificate and key passed as `tls` — client-node's own HTTP stack drops them
 * under Bun. Bearer tokens come from the kubeconfig user or the service-account token file (re-read
 * per request, so rotation is picked up).
 */
import { readFileSync } from "node:fs";
import { inClusterKubeconfig, readKubeconfig } from "./kubeconfig-file.ts";
import { tracedFetch } from "../../telemetry/client-spans.ts";

export interface KubeConnection {
  server: string;
  /** Bun fetch `tls` options: ca, cert, key, rejectUnauthorized. */
  tls: Record<string, unknown>;
  token: () => string | undefined;
  /** Where `token` reads from, when a file (a source's worker re-reads it too, D413). */
  tokenFile?: string;
}

function fileOrData(data: string | undefined, file: string | undefined): string | undefined {
  if (data) return Buffer.from(data, "base64").toString("utf8");
  if (file) return readFileSync(file, "utf8");
  return undefined;
}

export interface ConnectionOptions {
  inCluster: boolean | undefined;
  kubeconfig: string | undefined;
  /** A kubeconfig context to use instead of the current one. */
  context?: string;
}

export function loadKubeConnection(options: ConnectionOptions): KubeConnection {
  const inPod = process.env.KUBERNETES_SERVICE_HOST !== undefined;
  const useCluster = options.inCluster === true || (options.inCluster === undefined && !options.kubeconfig && inPod);
  const config = useCluster ? inClusterKubeconfig() : readKubeconfig(options.kubeconfig);
  const contextName = options.context ?? config.currentContext;
  const context = config.contexts.find((candidate) => candidate.name === contextName);
  if (!context) throw new Error(`kubeconfig has no context ${JSON.stringify(contextName)}`);
  const cluster = config.clusters.find((candidate) => candidate.name === context.cluster);
  if (!cluster?.server)
    throw new Error(`kubeconfig context ${JSON.stringify(contextName)} has no cluster with a server`);
  const user = config.users.find((candidate) => candidate.name === context.user);
  const tls: Record<string, unknown> = {};
  const ca = fileOrData(cluster.caData, cluster.caFile);
  if (ca) tls.ca = ca;
  if (cluster.skipTLSVerify) tls.rejectUnauthorized = false;
  const cert = fileOrData(user?.certData, user?.certFile);
  const key = fileOrData(user?.keyData, user?.keyFile);
  if (cert && key) {
    tls.cert = cert;
    tls.key = key;
  }
  const tokenFile = user?.tokenFile;
  const staticToken = user?.token;
  const token = () => {
    if (staticToken) return staticToken;
    if (tokenFile) return readFileSync(tokenFile, "utf8").trim();
    return undefined;
  };
  return {
    server: cluster.server.replace(/\/+$/, ""),
    tls,
    token,
    ...(tokenFile && !staticToken ? { tokenFile } : {}),
  };
}

/**
 * A request to the API server through Bun's fetch; a client span when it runs inside one (the
 * enricher's reads under an incident), never for the informers' background lists and watches.
 */
export function kubeFetch(connection: KubeConnection, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = connection.token();
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (!headers.has("accept")) headers.set("accept", "application/json");
  return tracedFetch(`${connection.server}${path}`, { ...init, headers, tls: connection.tls } as RequestInit, {
    parentRequired: true,
  });
}

/** An HTTP error with the status code client-node's ListWatch looks for (410 means re-list). */
export class KubeHttpError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
  }
}
