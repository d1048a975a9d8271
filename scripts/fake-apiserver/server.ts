/**
 * `startFakeApiserver(options)`: a fake kube-apiserver on Bun.serve speaking the real wire
 * protocol (see docs/fake-apiserver.md), for tests of Kubernetes clients.
 *
 *   const api = await startFakeApiserver({ tokens: { t0k3n: "watcher" } });
 *   api.url                                  // http://127.0.0.1:<port>
 *   api.scenario.createPod({ namespace: "shop", name: "web-1", node: "n1" });
 *   api.scenario.recordEvent({ involvedObject: pod, reason: "BackOff", message: "…" });
 *   api.faults.expireResourceVersions({ midStream: true });   // ERROR 410 on open watches
 *   api.faults.dropWatches("reset");  api.faults.failNext({ code: 503, count: 2 });
 *   await api.restart({ keepState: true });  // same port, same objects and history
 *   api.requests()                           // what clients asked, in order
 *   await api.stop();
 *
 * Options: `port` (0 picks one), `hostname`, `tls` ({cert, key, clientCa?} PEM text; with a
 * clientCa the server requires client certificates: mTLS), `tokens` (bearer token → user; unset
 * means no authentication), `clientCertificateUser`, `grants` (RBAC-like rules answering SSARs and
 * gating requests; unset allows all), `bookmarkIntervalMs`, `historyLimit` (changes kept for
 * watch replay), `expiredWatch` ("http" 410 or "event" ERROR for a too-old watch version),
 * `defaultWatchTimeoutSeconds`, `control` (serve the HTTP control surface under /_fake/, default on),
 * `withoutApis` (group/versions not served, as a cluster without those CRDs; `scenario.setApiServed`).
 */
import { AccessControl, type Grant } from "./access.ts";
import { KubeApi } from "./api.ts";
import { handleControl } from "./control.ts";
import { type FailRule, RequestFaults } from "./faults.ts";
import { PodLogs } from "./logs.ts";
import { NodeStats } from "./node-stats.ts";
import { Scenario } from "./scenario.ts";
import { ServedApis } from "./served-apis.ts";
import { failure, statusObject, statusResponse } from "./status.ts";
import { ObjectStore } from "./store.ts";
import { WatchHub } from "./watch.ts";

export interface FakeApiserverTls {
  /** Server certificate and key, PEM text. */
  cert: string;
  key: string;
  /** CA (PEM) that signs accepted client certificates; set means mTLS (a client certificate is required). */
  clientCa?: string;
}

export interface FakeApiserverOptions {
  port?: number;
  hostname?: string;
  tls?: FakeApiserverTls;
  tokens?: Record<string, string>;
  clientCertificateUser?: string;
  grants?: Grant[];
  bookmarkIntervalMs?: number;
  historyLimit?: number;
  initialResourceVersion?: number;
  expiredWatch?: "http" | "event";
  defaultWatchTimeoutSeconds?: number;
  control?: boolean;
  /** Group/versions not served (`gateway.networking.k8s.io/v1`): a cluster without those CRDs. */
  withoutApis?: string[];
}

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  status: number;
  user?: string;
}

export interface FaultControls {
  /** End every open watch: "close" is a clean server close, "reset" an aborted connection. Returns how many. */
  dropWatches(mode?: "close" | "reset"): number;
  /** Fail the next matching requests with a Status of `code`. */
  failNext(rule: FailRule): void;
  /**
   * Compact: every resourceVersion before now becomes too old, so a re-watch from one gets 410.
   * With `midStream`, open watches also get an ERROR event carrying a 410 Expired Status and end.
   */
  expireResourceVersions(options?: { midStream?: boolean }): number;
  /** Send an ERROR event with this Status to every open watch and end them. */
  watchError(code: number, message?: string): number;
  /** Disarm request faults. */
  clear(): void;
}

export interface FakeApiserver {
  readonly url: string;
  readonly port: number;
  readonly hostname: string;
  readonly scenario: Scenario;
  readonly faults: FaultControls;
  /** Number of watch streams open now. */
  openWatches(): number;
  /** Requests answered so far (control requests excluded), oldest first. */
  requests(): RecordedRequest[];
  clearRequests(): void;
  /** Stop and start again on the same port; `keepState: false` empties the cluster (versions keep counting, so old ones are 410). */
  restart(options?: { keepState?: boolean; downtimeMs?: number }): Promise<void>;
  stop(): Promise<void>;
}

const MAX_RECORDED = 10_000;

function serveOptions(options: FakeApiserverOptions): Record<string, unknown> {
  if (!options.tls) return {};
  const { cert, key, clientCa } = options.tls;
  return { tls: { cert, key, ...(clientCa ? { ca: clientCa, requestCert: true, rejectUnauthorized: true } : {}) } };
}

export async function startFakeApiserver(options: FakeApiserverOptions = {}): Promise<FakeApiserver> {
  const hostname = options.hostname ?? "127.0.0.1";
  const store = new ObjectStore({
    ...(options.historyLimit !== undefined ? { historyLimit: options.historyLimit } : {}),
    ...(options.initialResourceVersion !== undefined ? { initialResourceVersion: options.initialResourceVersion } : {}),
  });
  const watches = new WatchHub(
    store,
    options.bookmarkIntervalMs !== undefined ? { bookmarkIntervalMs: options.bookmarkIntervalMs } : {},
  );
  const logs = new PodLogs();
  const clientCertificateUser = options.tls?.clientCa
    ? (options.clientCertificateUser ?? "client-cert-user")
    : undefined;
  const access = new AccessControl(options.tokens, options.grants, clientCertificateUser);
  const requestFaults = new RequestFaults();
  const served = new ServedApis(options.withoutApis);
  const stats = new NodeStats();
  const api = new KubeApi({
    served,
    stats,
    store,
    watches,
    logs,
    access,
    options: {
      expiredWatch: options.expiredWatch ?? "http",
      defaultWatchTimeoutSeconds: options.defaultWatchTimeoutSeconds ?? 1800,
    },
  });
  const scenario = new Scenario({ store, logs, watches, access, served, stats });
  let recorded: RecordedRequest[] = [];
  const record = (entry: RecordedRequest): void => {
    recorded.push(entry);
    if (recorded.length > MAX_RECORDED) recorded = recorded.slice(-MAX_RECORDED);
  };

  const faults: FaultControls = {
    dropWatches: (mode = "close") => watches.dropAll(mode),
    failNext: (rule) => requestFaults.failNext(rule),
    expireResourceVersions: ({ midStream = false } = {}) => {
      const oldest = store.compactedResourceVersion;
      store.compact();
      if (!midStream) return 0;
      return watches.errorAll(
        statusObject(410, "Expired", `too old resource version: ${oldest} (${store.compactedResourceVersion})`),
      );
    },
    watchError: (code, message) =>
      watches.errorAll(
        statusObject(code, code === 410 ? "Expired" : "InternalError", message ?? `injected watch error (${code})`),
      ),
    clear: () => requestFaults.clear(),
  };

  const handleKube = async (request: Request, url: URL): Promise<Response> => {
    const query = Object.fromEntries(url.searchParams);
    const injected = requestFaults.take(request.method, url);
    if (injected) {
      record({ method: request.method, path: url.pathname, query, status: injected.code });
      return statusResponse(injected);
    }
    const authentication = access.authenticate(request.headers.get("authorization"));
    if (!authentication.ok) {
      record({ method: request.method, path: url.pathname, query, status: 401 });
      return statusResponse(authentication.status);
    }
    let response: Response;
    try {
      response = await api.handle(request, url, authentication.user);
    } catch (error) {
      response = failure(
        500,
        `fake apiserver internal error: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    record({ method: request.method, path: url.pathname, query, status: response.status, user: authentication.user });
    return response;
  };

  let port = options.port ?? 0;
  const scheme = options.tls ? "https" : "http";
  const listen = () =>
    Bun.serve({
      hostname,
      port,
      idleTimeout: 0,
      ...serveOptions(options),
      fetch: async (request) => {
        const url = new URL(request.url);
        if (url.pathname.startsWith("/_fake/")) {
          if (options.control === false) return failure(404, "the server could not find the requested resource");
          return handleControl(request, url, { scenario, faults, server: fake });
        }
        if (["/healthz", "/livez", "/readyz"].includes(url.pathname))
          return new Response("ok", { headers: { "content-type": "text/plain" } });
        return handleKube(request, url);
      },
      error: (error) => failure(500, `fake apiserver internal error: ${error.message}`),
    });
  let server = listen();
  port = server.port ?? port;

  const fake: FakeApiserver = {
    url: `${scheme}://${hostname}:${port}`,
    port,
    hostname,
    scenario,
    faults,
    openWatches: () => watches.openCount,
    requests: () => recorded.map((entry) => ({ ...entry, query: { ...entry.query } })),
    clearRequests: () => {
      recorded = [];
    },
    restart: async ({ keepState = true, downtimeMs = 0 } = {}) => {
      watches.dropAll("reset");
      await server.stop(true);
      if (!keepState) {
        store.clear();
        logs.clear();
        stats.clear();
      }
      if (downtimeMs > 0) await Bun.sleep(downtimeMs);
      server = listen();
    },
    stop: async () => {
      watches.dropAll("reset");
      await server.stop(true);
    },
  };
  return fake;
}
