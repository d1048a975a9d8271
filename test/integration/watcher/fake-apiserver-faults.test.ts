/**
 * The fake apiserver's authentication, authorization (grant set, SelfSubjectAccessReview, 403
 * bodies), HTTPS and mTLS modes, and the fault hooks a watcher test needs: failing the next
 * requests, dropping watches cleanly or abruptly, restarting on the same port with state kept or
 * reset, and the request log.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { type CertificateSet, WatchReader, generateCertificates, kubeTempDir } from "../../support/kube.ts";
import { waitFor } from "../../support/daemon.ts";

const TOKEN = "watcher-token";
let api: FakeApiserver;

beforeAll(async () => {
  api = await startFakeApiserver({
    tokens: { [TOKEN]: "watcher", "other-token": "intruder" },
    grants: [
      { users: ["watcher"], verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["events", "pods"] },
      { users: ["watcher"], verbs: ["get"], apiGroups: [""], resources: ["pods/log"], namespaces: ["shop"] },
    ],
  });
});
afterAll(async () => {
  await api.stop();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const get = (path: string, init: RequestInit = {}) =>
  fetch(`${api.url}${path}`, { ...init, headers: { ...auth, ...(init.headers ?? {}) } });

function review(resource: string, verb: string, namespace = "", subresource = "", group = ""): Promise<Response> {
  const body = {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: { resourceAttributes: { group, resource, verb, namespace, subresource } },
  };
  return get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
    method: "POST",
    body: JSON.stringify(body),
    headers: { "content-type": "application/json" },
  });
}

async function allowed(resource: string, verb: string, namespace = "", subresource = "", group = ""): Promise<boolean> {
  const response = await review(resource, verb, namespace, subresource, group);
  expect(response.status).toBe(201);
  return ((await response.json()) as { status: { allowed: boolean } }).status.allowed;
}

describe("authentication and authorization", () => {
  test("a missing or unknown bearer token is a 401 Unauthorized Status", async () => {
    const missing = await fetch(`${api.url}/api/v1/events`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ kind: "Status", reason: "Unauthorized", code: 401 });
    expect((await fetch(`${api.url}/api/v1/events`, { headers: { authorization: "Bearer nope" } })).status).toBe(401);
    expect((await get("/api/v1/events")).status).toBe(200);
    expect((await fetch(`${api.url}/healthz`)).status).toBe(200);
  });

  test("requests outside the grant set get the apiserver's 403 Forbidden body", async () => {
    const denied = await get("/api/v1/nodes");
    expect(denied.status).toBe(403);
    const status = (await denied.json()) as { reason: string; message: string };
    expect(status.reason).toBe("Forbidden");
    expect(status.message).toBe(
      'nodes is forbidden: User "watcher" cannot list resource "nodes" in API group "" at the cluster scope',
    );
    expect((await fetch(`${api.url}/api/v1/events`, { headers: { authorization: "Bearer other-token" } })).status).toBe(
      403,
    );
    const logDenied = await get("/api/v1/namespaces/elsewhere/pods/x/log");
    expect(logDenied.status).toBe(403);
  });

  test("SelfSubjectAccessReview answers from the grant set, and a grant change shows at once", async () => {
    expect(await allowed("events", "watch")).toBe(true);
    expect(await allowed("pods", "get", "shop", "log")).toBe(true);
    expect(await allowed("pods", "get", "other", "log")).toBe(false);
    expect(await allowed("replicasets", "list", "", "", "apps")).toBe(false);
    const saved = [{ users: ["watcher"], verbs: ["list"], apiGroups: [""], resources: ["pods"] }];
    api.scenario.setGrants(saved);
    try {
      expect(await allowed("events", "watch")).toBe(false);
      expect((await get("/api/v1/events")).status).toBe(403);
    } finally {
      api.scenario.setGrants([
        { users: ["watcher"], verbs: ["get", "list", "watch"], apiGroups: [""], resources: ["events", "pods"] },
        { users: ["watcher"], verbs: ["get"], apiGroups: [""], resources: ["pods/log"], namespaces: ["shop"] },
      ]);
    }
    const invalid = await get("/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      method: "POST",
      body: JSON.stringify({ spec: {} }),
    });
    expect(invalid.status).toBe(422);
    expect(((await invalid.json()) as { kind: string }).kind).toBe("Status");
  });
});

describe("fault injection", () => {
  test("failNext fails exactly the next N matching requests with a Status of that code", async () => {
    api.faults.failNext({ code: 503, count: 2, path: "/api/v1/events", retryAfterSeconds: 1 });
    const first = await get("/api/v1/events");
    expect(first.status).toBe(503);
    expect(first.headers.get("retry-after")).toBe("1");
    expect(await first.json()).toMatchObject({ kind: "Status", code: 503, reason: "ServiceUnavailable" });
    expect((await get("/api/v1/pods")).status).toBe(200);
    expect((await get("/api/v1/events")).status).toBe(503);
    expect((await get("/api/v1/events")).status).toBe(200);
    api.faults.failNext({ code: 500, verb: "watch" });
    expect((await get("/api/v1/events")).status).toBe(200);
    expect((await get("/api/v1/events?watch=true")).status).toBe(500);
  });

  test("dropWatches('close') ends streams cleanly; 'reset' aborts them", async () => {
    const clean = new WatchReader(
      await get(`/api/v1/events?watch=true&resourceVersion=${api.scenario.resourceVersion}`),
    );
    expect(api.openWatches()).toBe(1);
    expect(api.faults.dropWatches("close")).toBe(1);
    await clean.end();
    expect(clean.error).toBeUndefined();
    const abrupt = new WatchReader(
      await get(`/api/v1/events?watch=true&resourceVersion=${api.scenario.resourceVersion}`),
    );
    await waitFor(() => (api.openWatches() === 1 ? true : undefined), 5000, "the watch registered");
    expect(api.faults.dropWatches("reset")).toBe(1);
    await abrupt.end();
    expect(abrupt.error).toBeDefined();
    expect(api.openWatches()).toBe(0);
  });

  test("restart keeps the port; with state kept an old version still replays, with state reset it is 410", async () => {
    const pod = api.scenario.createPod({ namespace: "shop", name: "survivor" });
    const before = api.scenario.resourceVersion - 1;
    const watch = new WatchReader(await get(`/api/v1/pods?watch=true&resourceVersion=${api.scenario.resourceVersion}`));
    await api.restart({ keepState: true, downtimeMs: 50 });
    await watch.end();
    const listed = (await (await get("/api/v1/namespaces/shop/pods")).json()) as {
      items: { metadata: { uid: string } }[];
    };
    expect(listed.items.map((item) => item.metadata.uid)).toContain(
      String((pod.metadata as Record<string, unknown>).uid),
    );
    const replay = new WatchReader(await get(`/api/v1/pods?watch=true&resourceVersion=${before}`));
    expect((await replay.next(1))[0]?.object.metadata?.name).toBe("survivor");
    await api.restart({ keepState: false });
    await replay.end();
    expect(
      ((await get("/api/v1/namespaces/shop/pods").then((response) => response.json())) as { items: unknown[] }).items,
    ).toEqual([]);
    expect((await get(`/api/v1/pods?watch=true&resourceVersion=${before}`)).status).toBe(410);
  });

  test("the request log records method, path, query, status and user", async () => {
    api.clearRequests();
    await get("/api/v1/events?fieldSelector=type%3DWarning&limit=5");
    const [entry] = api.requests();
    expect(entry).toEqual({
      method: "GET",
      path: "/api/v1/events",
      query: { fieldSelector: "type=Warning", limit: "5" },
      status: 200,
      user: "watcher",
    });
  });
});

describe("HTTPS and mTLS", () => {
  let certificates: CertificateSet;
  beforeAll(() => {
    certificates = generateCertificates(kubeTempDir("spar-fake-certs-"), { user: "watcher" });
  }, 20_000);

  test("HTTPS with a bearer token, verified against the generated CA", async () => {
    const secure = await startFakeApiserver({
      tls: { cert: certificates.serverCert, key: certificates.serverKey },
      tokens: { [TOKEN]: "watcher" },
    });
    try {
      expect(secure.url).toStartWith("https://");
      const response = await fetch(`${secure.url}/api/v1/events`, { headers: auth, tls: { ca: certificates.caCert } });
      expect(response.status).toBe(200);
      await expect(fetch(`${secure.url}/api/v1/events`, { headers: auth })).rejects.toThrow();
    } finally {
      await secure.stop();
    }
  });

  test("mTLS refuses a client without a certificate and serves one signed by the client CA as the certificate user", async () => {
    const mutual = await startFakeApiserver({
      tls: { cert: certificates.serverCert, key: certificates.serverKey, clientCa: certificates.caCert },
      clientCertificateUser: "watcher",
      grants: [{ users: ["watcher"], verbs: ["list"], resources: ["events"] }],
    });
    try {
      await expect(fetch(`${mutual.url}/api/v1/events`, { tls: { ca: certificates.caCert } })).rejects.toThrow();
      const withCertificate = {
        tls: { ca: certificates.caCert, cert: certificates.clientCert, key: certificates.clientKey },
      };
      expect((await fetch(`${mutual.url}/api/v1/events`, withCertificate)).status).toBe(200);
      expect((await fetch(`${mutual.url}/api/v1/pods`, withCertificate)).status).toBe(403);
      expect(mutual.requests()[0]?.user).toBe("watcher");
    } finally {
      await mutual.stop();
    }
  });
});
