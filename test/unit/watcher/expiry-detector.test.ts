/**
 * The expiry detector (D384-D385) with a fake certificate parser: a TLS Secret, a webhook CA
 * bundle, a service-account token and a cert-manager Certificate each page at the 14d horizon
 * (warning), once more at 72h (critical), not before and never twice; the first scan reports what
 * is already close (level-triggered); renewed past the horizon or deleted, it is forgotten and
 * may page again; a failed scan clears nothing; scoped scans keep their namespaces apart.
 */
import { describe, expect, test } from "bun:test";
import {
  type CertificateParser,
  ExpiryDetector,
  type ExpirySettings,
  tokenExpiry,
} from "../../../src/watcher/core/sources/expiry-detector.ts";
import { EXPIRY_SPEC } from "../../../src/watcher/core/sources/expiry-spec.ts";
import { specForSettings } from "../../../src/watcher/core/source-catalog.ts";

const HOUR = 3600_000;
const DAY = 24 * HOUR;
const NOW = Date.parse("2026-12-01T00:00:00Z");

/** Fake PEM: `fake:<notAfter ms>:<subject>` lines, one per certificate. */
const fakeParse: CertificateParser = (pem) => {
  const certificates = pem
    .split("\n")
    .filter((line) => line.startsWith("fake:"))
    .map((line) => {
      const [, notAfter, subject] = line.split(":");
      return { notAfter: Number(notAfter), subject: subject ?? "" };
    });
  return certificates.length > 0 ? certificates : { error: "not a certificate" };
};

function detector(extra: Partial<ExpirySettings> = {}): ExpiryDetector {
  return new ExpiryDetector({
    warnMs: 14 * DAY,
    intervalMs: HOUR,
    namespaces: [],
    parse: fakeParse,
    certManager: false,
    ...extra,
  });
}

const pem = (...certificates: [number, string][]) =>
  btoa(certificates.map(([notAfter, subject]) => `fake:${notAfter}:${subject}`).join("\n"));

function tlsSecret(name: string, notAfter: number, annotations: Record<string, string> = {}) {
  return {
    metadata: { namespace: "shop", name, uid: `uid-${name}`, annotations },
    type: "kubernetes.io/tls",
    data: { "tls.crt": pem([notAfter, `CN=${name}`]) },
  };
}

const list = (...items: unknown[]) => ({ kind: "List", items });

describe("expiry detector", () => {
  test("a TLS Secret: nothing beyond 14d, a warning inside it, critical at 72h, never twice", () => {
    const expiry = detector();
    const notAfter = NOW + 20 * DAY;
    const scan = (now: number) => expiry.polled("tls-secrets", list(tlsSecret("web-tls", notAfter)), now);
    expect(scan(NOW)).toEqual([]);
    expect(scan(notAfter - 14 * DAY - 1000)).toEqual([]);
    const warning = scan(notAfter - 14 * DAY + 1000);
    expect(warning).toHaveLength(1);
    expect(warning[0]).toMatchObject({
      kind: "expiry.warning",
      reason: "cert_expiring",
      severity: "warning",
      namespace: "shop",
      kindOfObject: "Secret",
      name: "web-tls",
      uid: "uid-web-tls",
      eventCount: 1,
      type: "",
    });
    expect(warning[0]?.message).toContain("TLS certificate in Secret shop/web-tls (tls.crt, CN=web-tls) expires in");
    expect(scan(notAfter - 10 * DAY)).toEqual([]);
    expect(scan(notAfter - 72 * HOUR - 1000)).toEqual([]);
    const critical = scan(notAfter - 72 * HOUR + 1000);
    expect(critical.map((one) => [one.severity, one.reason])).toEqual([["critical", "cert_expiring"]]);
    // Expired: still the same ongoing condition at critical, no second page.
    expect(scan(notAfter + HOUR)).toEqual([]);
    expect(expiry.size).toBe(1);
  });

  test("level-triggered: the first scan reports an expired certificate at once, critical", () => {
    const signals = detector().polled("tls-secrets", list(tlsSecret("old", NOW - 2 * HOUR)), NOW);
    expect(signals.map((one) => [one.severity, one.reason])).toEqual([["critical", "cert_expired"]]);
    expect(signals[0]?.message).toContain("expired 2h0m0s ago");
  });

  test("renewed past the horizon, it is forgotten and pages again when it next comes close", () => {
    const expiry = detector();
    expect(expiry.polled("tls-secrets", list(tlsSecret("web", NOW + 5 * DAY)), NOW)).toHaveLength(1);
    expect(expiry.polled("tls-secrets", list(tlsSecret("web", NOW + 90 * DAY)), NOW + HOUR)).toEqual([]);
    expect(expiry.size).toBe(0);
    expect(expiry.polled("tls-secrets", list(tlsSecret("web", NOW + 90 * DAY)), NOW + 80 * DAY)).toHaveLength(1);
  });

  test("a deleted Secret is forgotten; a failed scan clears nothing and pages nothing", () => {
    const expiry = detector();
    expect(expiry.polled("tls-secrets", list(tlsSecret("web", NOW + 5 * DAY)), NOW)).toHaveLength(1);
    expect(expiry.polled("tls-secrets", undefined, NOW + HOUR, "GET: HTTP 503")).toEqual([]);
    expect(expiry.size).toBe(1);
    expect(expiry.polled("tls-secrets", list(), NOW + 2 * HOUR)).toEqual([]);
    expect(expiry.size).toBe(0);
  });

  test("a chain expires with its earliest certificate; unreadable data is not judged", () => {
    const expiry = detector();
    const chain = {
      metadata: { namespace: "shop", name: "chain", uid: "uid-chain" },
      data: { "tls.crt": pem([NOW + 300 * DAY, "CN=leaf"], [NOW + 2 * DAY, "CN=intermediate"]) },
    };
    const broken = {
      metadata: { namespace: "shop", name: "broken", uid: "uid-broken" },
      data: { "tls.crt": btoa("junk") },
    };
    const signals = expiry.polled("tls-secrets", list(chain, broken), NOW);
    expect(signals.map((one) => [one.name, one.severity])).toEqual([["chain", "critical"]]);
    expect(signals[0]?.message).toContain("CN=intermediate");
  });

  test("webhook CA bundles: one finding per webhook, cluster-scoped, uid <config uid>/<webhook>", () => {
    const config = {
      metadata: { name: "policy", uid: "uid-policy" },
      webhooks: [
        { name: "a.policy.io", clientConfig: { caBundle: pem([NOW + 10 * DAY, "CN=ca"]) } },
        { name: "b.policy.io", clientConfig: { caBundle: pem([NOW + 100 * DAY, "CN=ca2"]) } },
        { name: "c.policy.io", clientConfig: { url: "https://x" } },
      ],
    };
    const signals = detector().polled("validating-webhooks", list(config), NOW);
    expect(signals).toHaveLength(1);
    expect(signals[0]).toMatchObject({
      namespace: "",
      kindOfObject: "ValidatingWebhookConfiguration",
      name: "policy",
      uid: "uid-policy/a.policy.io",
      severity: "warning",
    });
    expect(signals[0]?.message).toContain(
      'CA bundle of webhook "a.policy.io" in ValidatingWebhookConfiguration policy',
    );
    const mutating = detector().polled("mutating-webhooks", list(config), NOW);
    expect(mutating[0]?.kindOfObject).toBe("MutatingWebhookConfiguration");
  });

  test("service-account tokens: an exp claim is judged, a legacy token without one is not, an orphan is skipped", () => {
    const jwt = (claims: Record<string, unknown>) =>
      btoa(`e30.${btoa(JSON.stringify(claims)).replace(/=+$/, "").replace(/\+/g, "-").replace(/\//g, "_")}.sig`);
    const token = (name: string, account: string, claims: Record<string, unknown>) => ({
      metadata: {
        namespace: "ci",
        name,
        uid: `uid-${name}`,
        annotations: { "kubernetes.io/service-account.name": account },
      },
      type: "kubernetes.io/service-account-token",
      data: { token: jwt(claims) },
    });
    expect(tokenExpiry(atob(jwt({ exp: 1_900_000_000 })))).toBe(1_900_000_000_000);
    const expiry = detector();
    const tokens = list(
      token("deployer-token", "deployer", { exp: (NOW + 2 * DAY) / 1000 }),
      token("legacy-token", "legacy", { sub: "system:serviceaccount:ci:legacy" }),
      token("orphan-token", "gone", { exp: (NOW + 2 * DAY) / 1000 }),
    );
    expiry.polled("serviceaccounts", list({ metadata: { namespace: "ci", name: "deployer" } }), NOW);
    const signals = expiry.polled("token-secrets", tokens, NOW);
    expect(signals.map((one) => [one.name, one.severity])).toEqual([["deployer-token", "critical"]]);
    expect(signals[0]?.message).toContain(
      "service-account token in Secret ci/deployer-token (ServiceAccount deployer)",
    );
  });

  test("cert-manager: notAfter inside the horizon warns, a failed renewal is critical; its managed Secret is judged through it", () => {
    const certificate = (name: string, status: Record<string, unknown>) => ({
      metadata: { namespace: "shop", name, uid: `uid-${name}` },
      status,
    });
    const expiry = detector({ certManager: true });
    const signals = expiry.polled(
      "certificates",
      list(
        certificate("soon", { notAfter: new Date(NOW + 7 * DAY).toISOString() }),
        certificate("failing", {
          notAfter: new Date(NOW + 60 * DAY).toISOString(),
          lastFailureTime: "2026-11-30T00:00:00Z",
          conditions: [{ type: "Issuing", status: "False", reason: "Failed", message: "ACME order failed" }],
        }),
        certificate("fine", { notAfter: new Date(NOW + 60 * DAY).toISOString() }),
      ),
      NOW,
    );
    expect(signals.map((one) => [one.name, one.kindOfObject, one.severity, one.reason])).toEqual([
      ["soon", "Certificate", "warning", "cert_expiring"],
      ["failing", "Certificate", "critical", "renewal_failed"],
    ]);
    expect(signals[1]?.message).toContain("renewal failed (Issuing=False Failed: ACME order failed");
    const managed = tlsSecret("soon-tls", NOW + 7 * DAY, { "cert-manager.io/certificate-name": "soon" });
    expect(expiry.polled("tls-secrets", list(managed), NOW)).toEqual([]);
    expect(detector({ certManager: false }).polled("tls-secrets", list(managed), NOW)).toHaveLength(1);
  });

  test("scoped scans: one poll per namespace, each clearing only its own findings; grants per namespace", () => {
    const expiry = detector({ namespaces: ["a", "b"] });
    const inA = { ...tlsSecret("x", NOW + DAY), metadata: { namespace: "a", name: "x", uid: "uid-a-x" } };
    const inB = { ...tlsSecret("y", NOW + DAY), metadata: { namespace: "b", name: "y", uid: "uid-b-y" } };
    expect(expiry.polled("tls-secrets/a", list(inA), NOW)).toHaveLength(1);
    expect(expiry.polled("tls-secrets/b", list(inB), NOW)).toHaveLength(1);
    expect(expiry.polled("tls-secrets/b", list(), NOW + HOUR)).toEqual([]);
    expect(expiry.size).toBe(1);
    const scoped = specForSettings(EXPIRY_SPEC, {
      warnMs: 14 * DAY,
      intervalMs: 2 * HOUR,
      namespaces: ["a", "b"],
      parse: fakeParse,
      certManager: true,
    });
    expect(scoped.required.map((check) => `${check.verb} ${check.resource} ${check.namespace ?? "*"}`)).toEqual([
      "list secrets a",
      "list serviceaccounts a",
      "list secrets b",
      "list serviceaccounts b",
      "list validatingwebhookconfigurations *",
      "list mutatingwebhookconfigurations *",
    ]);
    expect(scoped.polls?.map((poll) => poll.path)).toContain(
      "/api/v1/namespaces/a/secrets?fieldSelector=type%3Dkubernetes.io%2Ftls",
    );
    expect(scoped.polls?.every((poll) => poll.everyMs === 2 * HOUR && poll.pageSize === 500)).toBe(true);
    expect(EXPIRY_SPEC.required.every((check) => check.namespace === undefined)).toBe(true);
  });
});
