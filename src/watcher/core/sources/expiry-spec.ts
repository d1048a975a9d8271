/**
 * The expiry source's spec (D384): paged LISTs every `--expiry-interval`, never an
 * informer (Secrets are the most sensitive list a watcher holds; a scan an hour keeps none of them
 * in memory between scans). With `--expiry-namespaces` the Secret, ServiceAccount and Certificate
 * lists and their grants are per namespace; otherwise cluster-wide. cert-manager Certificates are
 * listed only when discovery finds the CRD at startup (checked, not access-probed). Pure.
 */
import type { AccessCheck } from "../access-check.ts";
import type { SourcePoll, SourceSpec } from "../source-spec.ts";
import { ExpiryDetector, type ExpirySettings } from "./expiry-detector.ts";

/** Items per page of each scan's lists. */
export const EXPIRY_PAGE_SIZE = 500;

const TLS = "fieldSelector=type%3Dkubernetes.io%2Ftls";
const TOKEN = "fieldSelector=type%3Dkubernetes.io%2Fservice-account-token";
const WEBHOOKS = "/apis/admissionregistration.k8s.io/v1";
const CERTIFICATES = { groupVersion: "cert-manager.io/v1", resource: "certificates" };

const list = (resource: string, group = "", namespace?: string): AccessCheck => ({
  verb: "list",
  group,
  resource,
  ...(namespace ? { namespace } : {}),
});

function expiryPolls(settings: Pick<ExpirySettings, "intervalMs" | "namespaces">): SourcePoll[] {
  const poll = (name: string, path: string, extra: Partial<SourcePoll> = {}): SourcePoll => ({
    name,
    path,
    everyMs: settings.intervalMs,
    pageSize: EXPIRY_PAGE_SIZE,
    ...extra,
  });
  const scopes = settings.namespaces.length > 0 ? settings.namespaces : [undefined];
  const perScope = scopes.flatMap((namespace) => {
    const at = namespace ? `/namespaces/${namespace}` : "";
    const suffix = namespace ? `/${namespace}` : "";
    return [
      poll(`tls-secrets${suffix}`, `/api/v1${at}/secrets?${TLS}`),
      poll(`serviceaccounts${suffix}`, `/api/v1${at}/serviceaccounts`),
      poll(`token-secrets${suffix}`, `/api/v1${at}/secrets?${TOKEN}`),
      poll(`certificates${suffix}`, `/apis/cert-manager.io/v1${at}/certificates`, { discovery: CERTIFICATES }),
    ];
  });
  return [
    ...perScope,
    poll("validating-webhooks", `${WEBHOOKS}/validatingwebhookconfigurations`),
    poll("mutating-webhooks", `${WEBHOOKS}/mutatingwebhookconfigurations`),
  ];
}

function expiryAccess(namespaces: readonly string[]): AccessCheck[] {
  const scopes = namespaces.length > 0 ? namespaces : [undefined];
  return [
    ...scopes.flatMap((namespace) => [list("secrets", "", namespace), list("serviceaccounts", "", namespace)]),
    list("validatingwebhookconfigurations", "admissionregistration.k8s.io"),
    list("mutatingwebhookconfigurations", "admissionregistration.k8s.io"),
  ];
}

const HOUR = 3600_000;

export const EXPIRY_SPEC: SourceSpec<ExpirySettings> = {
  name: "expiry",
  reasons: ["cert_expiring", "cert_expired", "renewal_failed"],
  scope: "cluster",
  required: expiryAccess([]),
  watches: [],
  polls: expiryPolls({ intervalMs: HOUR, namespaces: [] }),
  scoped: (settings) => ({ required: expiryAccess(settings.namespaces), polls: expiryPolls(settings) }),
  detector: (settings) => new ExpiryDetector(settings),
};
