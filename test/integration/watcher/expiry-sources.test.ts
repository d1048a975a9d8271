/**
 * The expiry source (D384-D386) against the fake apiserver, with real certificates made by
 * openssl and read by Bun's X.509: a paged scan judges TLS Secrets and webhook CA bundles (a 10d
 * certificate warns, a 2d one is critical, a 30d one is quiet); cert-manager Certificates are read
 * only when discovery serves the CRD; under `auto` a missing grant disables the source with one
 * line, in an explicit list it refuses startup naming the grant; `--expiry-namespaces` asks for
 * namespaced grants and lists only those namespaces.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { type FakeApiserver, startFakeApiserver } from "../../../scripts/fake-apiserver/server.ts";
import { watcherConfigFromArgv } from "../../../src/cli/watcher-config.ts";
import type { Signal } from "../../../src/watcher/core/signal.ts";
import { specForSettings } from "../../../src/watcher/core/source-catalog.ts";
import type { ExpirySettings } from "../../../src/watcher/core/sources/expiry-detector.ts";
import { EXPIRY_SPEC } from "../../../src/watcher/core/sources/expiry-spec.ts";
import { createLogger } from "../../../src/telemetry/logger.ts";
import { DetectorSource } from "../../../src/watcher/sources/detector-source.ts";
import { parseCertificates } from "../../../src/watcher/sources/x509.ts";
import { StartupRefusal, startWatcher } from "../../../src/watcher/watch-runner.ts";
import { waitFor } from "../../support/daemon.ts";
import { generateCertificates, kubeTempDir } from "../../support/kube.ts";

const DAY = 24 * 3600_000;
let api: FakeApiserver;
let dir: string;
const connection = () => ({ server: api.url, tls: {}, token: () => undefined });

/** A self-signed certificate valid for `days`, PEM text. */
function certificate(name: string, days: number): string {
  const result = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "ec",
      "-pkeyopt",
      "ec_paramgen_curve:prime256v1",
      "-nodes",
      "-keyout",
      `${name}.key`,
      "-out",
      `${name}.crt`,
      "-days",
      String(days),
      "-subj",
      `/CN=${name}`,
    ],
    { cwd: dir, stderr: "pipe", stdout: "ignore" },
  );
  if (result.exitCode !== 0) throw new Error(result.stderr.toString());
  return readFileSync(join(dir, `${name}.crt`), "utf8");
}

const tlsSecret = (namespace: string, name: string, pem: string) => ({
  apiVersion: "v1",
  kind: "Secret",
  type: "kubernetes.io/tls",
  metadata: { namespace, name },
  data: { "tls.crt": btoa(pem), "tls.key": btoa("key") },
});

beforeAll(async () => {
  dir = kubeTempDir("spar-expiry-");
  api = await startFakeApiserver({ withoutApis: ["cert-manager.io/v1"] });
  const fixture = generateCertificates(join(dir, "pki"));
  api.scenario.create(tlsSecret("shop", "soon", certificate("soon.shop", 10)));
  api.scenario.create(tlsSecret("shop", "far", certificate("far.shop", 30)));
  api.scenario.create(tlsSecret("shop", "close", fixture.serverCert));
  api.scenario.create(tlsSecret("ci", "ci-far", certificate("ci.far", 60)));
  api.scenario.create(tlsSecret("ci", "ci-soon", certificate("ci.soon", 5)));
  api.scenario.create({
    apiVersion: "v1",
    kind: "Secret",
    type: "Opaque",
    metadata: { namespace: "shop", name: "opaque" },
    data: { "tls.crt": btoa(certificate("opaque", 1)) },
  });
  api.scenario.create({
    apiVersion: "admissionregistration.k8s.io/v1",
    kind: "ValidatingWebhookConfiguration",
    metadata: { name: "policy" },
    webhooks: [{ name: "check.policy.io", clientConfig: { caBundle: btoa(fixture.caCert) } }],
  });
});
afterAll(() => api.stop());

function settings(extra: Partial<ExpirySettings> = {}): ExpirySettings {
  return {
    warnMs: 14 * DAY,
    intervalMs: 3600_000,
    namespaces: [],
    parse: parseCertificates,
    certManager: false,
    ...extra,
  };
}

describe("expiry", () => {
  test("a paged scan with real certificates: 10d warns, 2d is critical, 30d and non-TLS Secrets are quiet", async () => {
    const emitted: Signal[] = [];
    const base = specForSettings(EXPIRY_SPEC, settings());
    // Pages of two, so the five TLS Secrets take three pages.
    const spec = { ...base, polls: (base.polls ?? []).map((poll) => ({ ...poll, pageSize: 2 })) };
    api.clearRequests();
    const source = new DetectorSource({
      spec,
      settings: settings(),
      connection: connection(),
      emit: (signal) => emitted.push(signal),
      logger: createLogger("error"),
      onRestart: () => {},
      without: new Set(["certificates"]),
    });
    await source.start();
    try {
      expect(source.synced).toBe(true);
      await waitFor(() => (emitted.length >= 4 ? true : undefined), 8000, "the first scan's signals");
      const seen = emitted.map((one) => [one.kindOfObject, one.namespace, one.name, one.severity]).sort();
      expect(seen).toEqual([
        ["Secret", "ci", "ci-soon", "warning"],
        ["Secret", "shop", "close", "critical"],
        ["Secret", "shop", "soon", "warning"],
        ["ValidatingWebhookConfiguration", "", "policy", "critical"],
      ]);
      expect(emitted.find((one) => one.name === "soon")?.message).toContain("(tls.crt, CN=soon.shop) expires in 2");
      const tlsPages = api
        .requests()
        .filter(
          (request) => request.path === "/api/v1/secrets" && request.query.fieldSelector === "type=kubernetes.io/tls",
        );
      expect(tlsPages.map((request) => [request.query.limit, Boolean(request.query.continue)])).toEqual([
        ["2", false],
        ["2", true],
        ["2", true],
      ]);
      expect(api.requests().some((request) => request.path.includes("cert-manager.io"))).toBe(false);
      // No informer: nothing is watched.
      expect(api.requests().some((request) => request.query.watch === "true")).toBe(false);
    } finally {
      await source.stop();
    }
  });
});

async function watcher(args: string[], lines: string[], printed: string[] = []) {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--kubeconfig=/nonexistent",
    "--cluster-name=expiry-test",
    "--storm=off",
    "--recovery-stable-for=0",
    // Warnings go to the watchboard (D418): a digest per warning, printed at once.
    "--watchboard-batch=1",
    "--access-recheck=0",
    ...args,
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  return startWatcher(
    parsed.value,
    createLogger("info", (line) => lines.push(line)),
    {
      connection: connection(),
      stdout: (text) => printed.push(text),
      env: {},
    },
  );
}

describe("expiry in the watcher", () => {
  test("auto without cert-manager: enabled, Certificates not read; with the CRD served, a failed renewal pages", async () => {
    const lines: string[] = [];
    const running = await watcher(["--sources=auto"], lines);
    try {
      expect(
        lines.some((line) =>
          line.includes("source expiry: enabled (cert-manager.io/v1 certificates not served: not read)"),
        ),
      ).toBe(true);
      const resolved = lines.find((line) => line.includes("sources: auto resolved → ")) ?? "";
      expect(resolved.split("→ ")[1]?.split(" ")[0]?.split(",") ?? []).toContain("expiry");
      expect(running.ready()).toBe(true);
    } finally {
      await running.stop();
    }
    api.scenario.setApiServed("cert-manager.io/v1", true);
    api.scenario.create({
      apiVersion: "cert-manager.io/v1",
      kind: "Certificate",
      metadata: { namespace: "shop", name: "web" },
      status: {
        notAfter: new Date(Date.now() + 50 * DAY).toISOString(),
        conditions: [{ type: "Issuing", status: "False", reason: "Failed", message: "ACME order failed" }],
      },
    });
    const printed: string[] = [];
    const again = await watcher(["--sources=cluster-events,expiry"], [], printed);
    try {
      const page = await waitFor(
        () => printed.find((text) => text.includes('"reason": "renewal_failed"')),
        8000,
        "the renewal failure's payload",
      );
      expect(page).toContain('"kind": "expiry.warning"');
      expect(page).toContain('"severity": "critical"');
      expect(page).toContain('"kind_of_object": "Certificate"');
    } finally {
      await again.stop();
      api.scenario.setApiServed("cert-manager.io/v1", false);
    }
  });

  test("its grant denied: auto disables it with one line; named, startup refuses naming the grant", async () => {
    const all = ["get", "list", "watch", "create"];
    api.scenario.setGrants([
      { verbs: all, resources: ["events", "selfsubjectaccessreviews", "serviceaccounts"] },
      { verbs: all, apiGroups: ["admissionregistration.k8s.io"], resources: ["*"] },
    ]);
    try {
      const lines: string[] = [];
      const running = await watcher(["--sources=auto"], lines);
      await running.stop();
      expect(lines.filter((line) => line.includes("source expiry:"))).toEqual([
        expect.stringContaining(
          'source expiry: disabled (missing "list secrets cluster-wide" — grant it, or name it in --sources to make this fatal)',
        ),
      ]);
      const refused = await watcher(["--sources=cluster-events,expiry"], []).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(StartupRefusal);
      expect(String((refused as Error).message)).toContain(
        'source "expiry" requires permission to "list secrets cluster-wide"',
      );
    } finally {
      api.scenario.setGrants(undefined);
    }
  });

  test("--expiry-namespaces: namespaced grants suffice, and only those namespaces are listed", async () => {
    const all = ["get", "list", "watch", "create"];
    api.scenario.setGrants([
      { verbs: all, resources: ["events", "selfsubjectaccessreviews"] },
      { verbs: ["list"], resources: ["secrets", "serviceaccounts"], namespaces: ["ci"] },
      { verbs: ["list"], apiGroups: ["admissionregistration.k8s.io"], resources: ["*"] },
    ]);
    const printed: string[] = [];
    const running = await watcher(["--sources=cluster-events,expiry", "--expiry-namespaces=ci"], [], printed);
    try {
      await waitFor(() => printed.find((text) => text.includes('"name": "policy"')), 8000, "the webhook's payload");
      await waitFor(() => printed.find((text) => text.includes('"name": "ci-soon"')), 8000, "the ci Secret's payload");
      await running.dispatcher.idle();
      expect(printed.some((text) => text.includes('"namespace": "shop"'))).toBe(false);
      expect(api.requests().filter((request) => request.path === "/api/v1/secrets" && request.status === 403)).toEqual(
        [],
      );
    } finally {
      await running.stop();
      api.scenario.setGrants(undefined);
    }
  });
});
