/**
 * How the watcher reaches the API server (D20): `@kubernetes/client-node` reads the kubeconfig
 * (or the in-cluster service account), and every request goes through Bun's fetch with the
 * cluster CA, client certificate and key passed as `tls` — client-node's own HTTP stack drops them
 * under Bun. Bearer tokens come from the kubeconfig user or the service-account token file (re-read
 * per request, so rotation is picked up).
 */
import { readFileSync } from "node:fs";
import { KubeConfig } from "@kubernetes/client-node";

export interface KubeConnection {
  server: string;
  /** Bun fetch `tls` options: ca, cert, key, rejectUnauthorized. */
  tls: Record<string, unknown>;
  token: () => string | undefined;
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
  const config = new KubeConfig();
  const inPod = process.env.KUBERNETES_SERVICE_HOST !== undefined;
  if (options.inCluster === true || (options.inCluster === undefined && !options.kubeconfig && inPod)) config.loadFromCluster();
  else if (options.kubeconfig) config.loadFromFile(options.kubeconfig);
  else config.loadFromDefault();
  if (options.context) config.setCurrentContext(options.context);
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error("kubeconfig has no current cluster");
  const user = config.getCurrentUser();
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
  const tokenFile = (user?.authProvider as { name?: string; config?: { tokenFile?: string } } | undefined)?.config?.tokenFile;
  const staticToken = user?.token;
  const token = () => {
    if (staticToken) return staticToken;
    if (tokenFile) return readFileSync(tokenFile, "utf8").trim();
    return undefined;
  };
  return { server: cluster.server.replace(/\/+$/, ""), tls, token };
}

/** A request to the API server through Bun's fetch. */
export function kubeFetch(connection: KubeConnection, path: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = connection.token();
  if (token) headers.set("authorization", `Bearer ${token}`);
  if (!headers.has("accept")) headers.set("accept", "application/json");
  return fetch(`${connection.server}${path}`, { ...init, headers, tls: connection.tls } as RequestInit);
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
