/**
 * The expiry detector (D384-D385): told each scan's answer of the expiry polls (TLS
 * Secrets, service-account token Secrets, ServiceAccounts, validating and mutating webhook
 * configurations, cert-manager Certificates), it judges every certificate or token it finds:
 * `expiry.warning` at warning within the horizon (`--expiry-warn`, 14d), critical within 72h, once
 * expired, or when cert-manager's renewal failed. Level-triggered: the first scan reports what is
 * already close. A finding pages once, and once more only when it escalates to critical; it is
 * forgotten (and may fire again) once renewed past the horizon or gone. Certificates are parsed by
 * the `parse` of its settings (Bun's X.509 in the host, a fake in unit tests). Pure.
 */
import { goDuration, rfc3339 } from "../go-time.ts";
import type { OpenCondition } from "../open-conditions.ts";
import type { Severity, Signal } from "../signal.ts";
import type { Detector, KubeObject } from "../source-spec.ts";

export const EXPIRY_CRITICAL_MS = 72 * 3600_000;
export const EXPIRY_KIND = "expiry.warning";

export interface ParsedCertificate {
  notAfter: number;
  subject: string;
}

/** PEM text (one or more certificates) → each certificate, or why it could not be read. */
export type CertificateParser = (pem: string) => ParsedCertificate[] | { error: string };

export interface ExpirySettings {
  /** Warning horizon (`--expiry-warn`; at least 72h). */
  warnMs: number;
  /** Scan interval (`--expiry-interval`). */
  intervalMs: number;
  /** `--expiry-namespaces`; empty: cluster-wide. */
  namespaces: readonly string[];
  parse: CertificateParser;
  /** cert-manager Certificates are scanned: the TLS Secrets they manage are judged through them (D385). */
  certManager: boolean;
}

/** One thing that expires, as read from an object. */
interface Finding {
  key: string;
  namespace: string;
  kindOfObject: string;
  name: string;
  uid: string;
  /** What expires, for the message (`TLS certificate in Secret shop/web (tls.crt)`). */
  what: string;
  notAfter?: number;
  /** cert-manager's renewal failed: its condition or failure time, for the message. */
  renewalFailed?: string;
}

interface Verdict {
  severity: Severity;
  reason: string;
  message: string;
}

const RANK: Record<Severity, number> = { info: 0, warning: 1, critical: 2 };

type Meta = { name?: string; namespace?: string; uid?: string; annotations?: Record<string, string> };

function meta(object: KubeObject): Meta {
  return (object.metadata ?? {}) as Meta;
}

function items(body: unknown): KubeObject[] {
  const list = (body as { items?: unknown } | undefined)?.items;
  return Array.isArray(list) ? (list as KubeObject[]) : [];
}

function decodeBase64(text: unknown): string | undefined {
  if (typeof text !== "string" || text === "") return undefined;
  try {
    return atob(text);
  } catch {
    return undefined;
  }
}

function qualified(object: KubeObject): string {
  const { namespace, name } = meta(object);
  return namespace ? `${namespace}/${name}` : String(name);
}

export class ExpiryDetector implements Detector {
  /** Severity already paged per finding key, and the poll whose answer owns it. */
  readonly #paged = new Map<string, { poll: string; rank: number; uid: string; reasons: string[] }>();
  /** Live ServiceAccounts per namespace, from the last answer (D385: orphan token Secrets are skipped). */
  #serviceAccounts: Map<string, Set<string>> | undefined;

  constructor(private readonly settings: ExpirySettings) {}

  observe(): Signal[] {
    return [];
  }

  /** Every reason a finding paged under, until it is renewed past the horizon or gone (D437). */
  *open(): Iterable<OpenCondition> {
    for (const { uid, reasons } of this.#paged.values()) for (const reason of reasons) yield { uid, reason };
  }

  polled(poll: string, body: unknown, now: number, error?: string): Signal[] {
    // A failed scan judges nothing and clears nothing: the last verdicts stand until one answers.
    if (error !== undefined || body === undefined) return [];
    const family = poll.split("/")[0] ?? poll;
    if (family === "serviceaccounts") {
      this.#noteServiceAccounts(poll, items(body));
      return [];
    }
    const findings = this.#findings(family, items(body));
    const signals: Signal[] = [];
    const present = new Set<string>();
    for (const finding of findings) {
      const verdict = this.#judge(finding, now);
      if (!verdict) continue;
      present.add(finding.key);
      const before = this.#paged.get(finding.key);
      const rank = RANK[verdict.severity];
      if (before && before.rank >= rank) continue;
      this.#paged.set(finding.key, {
        poll,
        rank,
        uid: finding.uid,
        reasons: [...(before?.reasons ?? []), verdict.reason],
      });
      signals.push(this.#signal(finding, verdict, now));
    }
    // Renewed past the horizon, or gone: forgotten, so a later approach pages again.
    for (const [key, entry] of this.#paged) if (entry.poll === poll && !present.has(key)) this.#paged.delete(key);
    return signals;
  }

  /** Findings tracked now (bounded by what the last scans listed). */
  get size(): number {
    return this.#paged.size;
  }

  #noteServiceAccounts(poll: string, accounts: KubeObject[]): void {
    const scoped = poll.includes("/");
    const known = scoped ? (this.#serviceAccounts ?? new Map<string, Set<string>>()) : new Map<string, Set<string>>();
    if (scoped) known.delete(poll.slice(poll.indexOf("/") + 1));
    for (const account of accounts) {
      const { namespace = "", name = "" } = meta(account);
      const names = known.get(namespace) ?? new Set<string>();
      names.add(name);
      known.set(namespace, names);
    }
    this.#serviceAccounts = known;
  }

  #findings(family: string, objects: KubeObject[]): Finding[] {
    switch (family) {
      case "tls-secrets":
        return objects.flatMap((secret) => this.#tlsSecret(secret));
      case "token-secrets":
        return objects.flatMap((secret) => this.#tokenSecret(secret));
      case "validating-webhooks":
        return objects.flatMap((config) => this.#webhooks(config, "ValidatingWebhookConfiguration"));
      case "mutating-webhooks":
        return objects.flatMap((config) => this.#webhooks(config, "MutatingWebhookConfiguration"));
      case "certificates":
        return objects.flatMap((certificate) => certificateFinding(certificate));
      default:
        return [];
    }
  }

  /** The earliest notAfter of a PEM bundle (a chain or a CA bundle expires with its first member). */
  #earliest(pem: string | undefined): ParsedCertificate | undefined {
    if (pem === undefined) return undefined;
    const parsed = this.settings.parse(pem);
    // Unreadable certificate data cannot be judged (D385); the apiserver accepted it, nothing to page on.
    if (!Array.isArray(parsed) || parsed.length === 0) return undefined;
    return parsed.reduce((first, next) => (next.notAfter < first.notAfter ? next : first));
  }

  #tlsSecret(secret: KubeObject): Finding[] {
    const { namespace = "", name = "", uid = "", annotations = {} } = meta(secret);
    if (this.settings.certManager && annotations["cert-manager.io/certificate-name"]) return [];
    const data = (secret.data ?? {}) as Record<string, string>;
    const certificate = this.#earliest(decodeBase64(data["tls.crt"]));
    if (!certificate) return [];
    return [
      {
        key: `secret:${uid}`,
        namespace,
        kindOfObject: "Secret",
        name,
        uid,
        what: `TLS certificate in Secret ${namespace}/${name} (tls.crt, ${certificate.subject})`,
        notAfter: certificate.notAfter,
      },
    ];
  }

  #tokenSecret(secret: KubeObject): Finding[] {
    const { namespace = "", name = "", uid = "", annotations = {} } = meta(secret);
    const account = annotations["kubernetes.io/service-account.name"] ?? "";
    if (this.#serviceAccounts && !this.#serviceAccounts.get(namespace)?.has(account)) return [];
    const expires = tokenExpiry(decodeBase64(((secret.data ?? {}) as Record<string, string>).token));
    if (expires === undefined) return [];
    return [
      {
        key: `token:${uid}`,
        namespace,
        kindOfObject: "Secret",
        name,
        uid,
        what: `service-account token in Secret ${namespace}/${name} (ServiceAccount ${account || "unknown"})`,
        notAfter: expires,
      },
    ];
  }

  #webhooks(config: KubeObject, kindOfObject: string): Finding[] {
    const { name = "", uid = "" } = meta(config);
    const hooks = Array.isArray(config.webhooks) ? (config.webhooks as KubeObject[]) : [];
    return hooks.flatMap((hook) => {
      const hookName = String(hook.name ?? "");
      const bundle = (hook.clientConfig as { caBundle?: string } | undefined)?.caBundle;
      const certificate = this.#earliest(decodeBase64(bundle));
      if (!certificate) return [];
      return [
        {
          key: `webhook:${uid}/${hookName}`,
          namespace: "",
          kindOfObject,
          name,
          uid: `${uid}/${hookName}`,
          what: `CA bundle of webhook ${JSON.stringify(hookName)} in ${kindOfObject} ${name} (${certificate.subject})`,
          notAfter: certificate.notAfter,
        },
      ];
    });
  }

  #judge(finding: Finding, now: number): Verdict | undefined {
    const when =
      finding.notAfter === undefined
        ? ""
        : finding.notAfter <= now
          ? `expired ${goDuration(now - finding.notAfter)} ago (notAfter ${rfc3339(finding.notAfter)})`
          : `expires in ${goDuration(finding.notAfter - now)} (notAfter ${rfc3339(finding.notAfter)})`;
    if (finding.renewalFailed !== undefined)
      return {
        severity: "critical",
        reason: "renewal_failed",
        message: `${finding.what}: renewal failed (${finding.renewalFailed})${when ? `; ${when}` : ""}`,
      };
    if (finding.notAfter === undefined) return undefined;
    const left = finding.notAfter - now;
    if (left > this.settings.warnMs) return undefined;
    const severity: Severity = left <= EXPIRY_CRITICAL_MS ? "critical" : "warning";
    return { severity, reason: left <= 0 ? "cert_expired" : "cert_expiring", message: `${finding.what} ${when}` };
  }

  #signal(finding: Finding, verdict: Verdict, now: number): Signal {
    return {
      kind: EXPIRY_KIND,
      reason: verdict.reason,
      namespace: finding.namespace,
      kindOfObject: finding.kindOfObject,
      name: finding.name,
      uid: finding.uid,
      message: verdict.message,
      eventCount: 1,
      firstSeen: now,
      lastSeen: now,
      type: "",
      severity: verdict.severity,
    };
  }
}

/** A JWT's `exp` (epoch ms), when the token carries one (legacy tokens do not: D385). */
export function tokenExpiry(token: string | undefined): number | undefined {
  const payload = token?.split(".")[1];
  if (!payload) return undefined;
  try {
    const padded = payload
      .replace(/-/g, "+")
      .replace(/_/g, "/")
      .padEnd(Math.ceil(payload.length / 4) * 4, "=");
    const exp = (JSON.parse(atob(padded)) as { exp?: unknown }).exp;
    return typeof exp === "number" && Number.isFinite(exp) ? exp * 1000 : undefined;
  } catch {
    return undefined;
  }
}

/** A cert-manager Certificate: its status.notAfter, and a failed renewal (D385). */
function certificateFinding(certificate: KubeObject): Finding[] {
  const { namespace = "", name = "", uid = "" } = meta(certificate);
  const status = (certificate.status ?? {}) as {
    notAfter?: string;
    lastFailureTime?: string;
    conditions?: { type?: string; status?: string; reason?: string; message?: string }[];
  };
  const notAfter = status.notAfter ? Date.parse(status.notAfter) : Number.NaN;
  const issuing = (status.conditions ?? []).find((condition) => condition.type === "Issuing");
  const failedCondition = issuing?.status === "False" && issuing.reason === "Failed";
  const renewalFailed =
    failedCondition || status.lastFailureTime
      ? [
          failedCondition ? `Issuing=False ${issuing?.reason}: ${issuing?.message ?? ""}`.trim() : "",
          status.lastFailureTime ? `last failure ${status.lastFailureTime}` : "",
        ]
          .filter(Boolean)
          .join("; ")
      : undefined;
  if (Number.isNaN(notAfter) && renewalFailed === undefined) return [];
  return [
    {
      key: `certificate:${uid}`,
      namespace,
      kindOfObject: "Certificate",
      name,
      uid,
      what: `cert-manager Certificate ${qualified(certificate)}`,
      ...(Number.isNaN(notAfter) ? {} : { notAfter }),
      ...(renewalFailed !== undefined ? { renewalFailed } : {}),
    },
  ];
}
