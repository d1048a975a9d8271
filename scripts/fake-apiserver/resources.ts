/**
 * The resource registry of the fake apiserver: which group/version/resource triples it serves,
 * their kinds, scope, verbs and short names, and the discovery documents built from them
 * (`/api`, `/apis`, `/api/v1`, `/apis/<group>/<version>`). It owns no state; the store and the
 * router look resources up here. `events.k8s.io/v1` events share the core `events` storage (as in a
 * real cluster, one object seen through two representations).
 */

export interface ResourceInfo {
  /** API group, `""` for the core group. */
  group: string;
  version: string;
  /** Plural resource name as it appears in paths, e.g. `pods`. */
  resource: string;
  kind: string;
  namespaced: boolean;
  verbs: readonly string[];
  shortNames?: readonly string[];
  /** Storage key shared by every representation of the same objects (`events` for both event APIs). */
  storage: string;
  /** Set for resources that are only created (review objects), never stored. */
  virtual?: boolean;
}

const READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"] as const;

function resource(
  group: string,
  version: string,
  name: string,
  kind: string,
  namespaced: boolean,
  extra: Partial<ResourceInfo> = {},
): ResourceInfo {
  return {
    group,
    version,
    resource: name,
    kind,
    namespaced,
    verbs: READ_WRITE,
    storage: group === "" ? name : `${name}.${group}`,
    ...extra,
  };
}

/** Every resource the fake serves. Adding a line here adds its discovery entry, list, watch and get. */
export const RESOURCES: readonly ResourceInfo[] = [
  resource("", "v1", "pods", "Pod", true, { shortNames: ["po"] }),
  resource("", "v1", "nodes", "Node", false, { shortNames: ["no"] }),
  resource("", "v1", "events", "Event", true, { shortNames: ["ev"] }),
  resource("", "v1", "namespaces", "Namespace", false, { shortNames: ["ns"] }),
  resource("", "v1", "services", "Service", true, { shortNames: ["svc"] }),
  resource("", "v1", "configmaps", "ConfigMap", true, { shortNames: ["cm"] }),
  resource("", "v1", "secrets", "Secret", true),
  resource("", "v1", "serviceaccounts", "ServiceAccount", true, { shortNames: ["sa"] }),
  resource("apps", "v1", "deployments", "Deployment", true, { shortNames: ["deploy"] }),
  resource("apps", "v1", "replicasets", "ReplicaSet", true, { shortNames: ["rs"] }),
  resource("apps", "v1", "statefulsets", "StatefulSet", true, { shortNames: ["sts"] }),
  resource("apps", "v1", "daemonsets", "DaemonSet", true, { shortNames: ["ds"] }),
  resource("batch", "v1", "jobs", "Job", true),
  resource("batch", "v1", "cronjobs", "CronJob", true, { shortNames: ["cj"] }),
  resource("events.k8s.io", "v1", "events", "Event", true, { shortNames: ["ev"], storage: "events" }),
  // The workload sources' reads (rollout, workload, autoscaling, degradation; D380-D383).
  resource("autoscaling", "v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler", true, { shortNames: ["hpa"] }),
  resource("discovery.k8s.io", "v1", "endpointslices", "EndpointSlice", true),
  resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews", "SelfSubjectAccessReview", false, {
    verbs: ["create"],
    virtual: true,
  }),
  resource("policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", true, { shortNames: ["pdb"] }),
  resource(
    "admissionregistration.k8s.io",
    "v1",
    "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration",
    false,
  ),
  resource(
    "admissionregistration.k8s.io",
    "v1",
    "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration",
    false,
  ),
  resource("cert-manager.io", "v1", "certificates", "Certificate", true, { shortNames: ["cert", "certs"] }),
  resource("gateway.networking.k8s.io", "v1", "gateways", "Gateway", true, { shortNames: ["gtw"] }),
  resource("gateway.networking.k8s.io", "v1", "httproutes", "HTTPRoute", true),
  // The quota source's read (D398).
  resource("", "v1", "resourcequotas", "ResourceQuota", true, { shortNames: ["quota"] }),
  // What deploy/ applies besides the kinds above (test/deploy/manifests.test.ts, D474).
  resource("", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", true, { shortNames: ["pvc"] }),
  resource("networking.k8s.io", "v1", "networkpolicies", "NetworkPolicy", true, { shortNames: ["netpol"] }),
  resource("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", false),
  resource("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", false),
  resource("rbac.authorization.k8s.io", "v1", "roles", "Role", true),
  resource("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", true),
  // metrics-server's PodMetrics (the saturation source): get and list, never a watch.
  resource("metrics.k8s.io", "v1beta1", "pods", "PodMetrics", true, { verbs: ["get", "list"] }),
  // compute-class reads GKE's ComputeClasses when discovery finds them (D411).
  resource("cloud.google.com", "v1", "computeclasses", "ComputeClass", false, { shortNames: ["cc"] }),
];

/** Subresources listed in discovery (served by dedicated handlers). */
const SUBRESOURCES: readonly { group: string; name: string; kind: string; verbs: readonly string[] }[] = [
  { group: "", name: "pods/log", kind: "Pod", verbs: ["get"] },
  { group: "", name: "pods/status", kind: "Pod", verbs: ["get"] },
  { group: "", name: "nodes/status", kind: "Node", verbs: ["get"] },
  { group: "", name: "nodes/proxy", kind: "NodeProxyOptions", verbs: ["get"] },
];

/** `apiVersion` as written in objects: `v1` for core, `group/version` otherwise. */
export function apiVersionOf(info: Pick<ResourceInfo, "group" | "version">): string {
  return info.group === "" ? info.version : `${info.group}/${info.version}`;
}

export function findResource(group: string, version: string, name: string): ResourceInfo | undefined {
  return RESOURCES.find((info) => info.group === group && info.version === version && info.resource === name);
}

/** The resource for an object's `apiVersion` and `kind` (what the scenario API receives). */
export function resourceForKind(apiVersion: string, kind: string): ResourceInfo | undefined {
  return RESOURCES.find((info) => apiVersionOf(info) === apiVersion && info.kind === kind && !info.virtual);
}

/** The canonical (stored) representation of a storage key: the core one for events. */
export function storageResource(storage: string): ResourceInfo | undefined {
  return RESOURCES.find((info) => info.storage === storage);
}

/** Whether a group/version is served now (every one, unless a test took it away: served-apis.ts). */
export type ServedFilter = (group: string, version: string) => boolean;

const ALL_SERVED: ServedFilter = () => true;

function groupsInOrder(served: ServedFilter): { group: string; version: string }[] {
  const seen = new Map<string, string>();
  for (const info of RESOURCES)
    if (info.group !== "" && !seen.has(info.group) && served(info.group, info.version))
      seen.set(info.group, info.version);
  return [...seen].map(([group, version]) => ({ group, version }));
}

export function apiVersionsDocument(serverAddress: string): Record<string, unknown> {
  return {
    kind: "APIVersions",
    versions: ["v1"],
    serverAddressByClientCIDRs: [{ clientCIDR: "0.0.0.0/0", serverAddress }],
  };
}

export function apiGroupListDocument(served: ServedFilter = ALL_SERVED): Record<string, unknown> {
  return {
    kind: "APIGroupList",
    apiVersion: "v1",
    groups: groupsInOrder(served).map(({ group, version }) => apiGroupDocument(group, version)),
  };
}

export function apiGroupDocument(group: string, version: string): Record<string, unknown> {
  const groupVersion = { groupVersion: `${group}/${version}`, version };
  return { kind: "APIGroup", apiVersion: "v1", name: group, versions: [groupVersion], preferredVersion: groupVersion };
}

/** The APIResourceList for one group version, or undefined when the fake does not serve it. */
export function apiResourceListDocument(
  group: string,
  version: string,
  served: ServedFilter = ALL_SERVED,
): Record<string, unknown> | undefined {
  if (!served(group, version)) return undefined;
  const resources = RESOURCES.filter((info) => info.group === group && info.version === version);
  if (resources.length === 0) return undefined;
  const entries: Record<string, unknown>[] = resources.map((info) => ({
    name: info.resource,
    singularName: info.kind.toLowerCase(),
    namespaced: info.namespaced,
    kind: info.kind,
    verbs: info.verbs,
    ...(info.shortNames ? { shortNames: info.shortNames } : {}),
  }));
  for (const sub of SUBRESOURCES.filter((entry) => entry.group === group)) {
    entries.push({ name: sub.name, singularName: "", namespaced: true, kind: sub.kind, verbs: sub.verbs });
  }
  return {
    kind: "APIResourceList",
    apiVersion: "v1",
    groupVersion: apiVersionOf({ group, version }),
    resources: entries,
  };
}

export function versionDocument(): Record<string, unknown> {
  return {
    major: "1",
    minor: "32",
    gitVersion: "v1.32.0-spar-fake",
    gitCommit: "0000000000000000000000000000000000000000",
    gitTreeState: "clean",
    buildDate: "2026-01-01T00:00:00Z",
    goVersion: "go1.23.0",
    compiler: "gc",
    platform: "linux/amd64",
  };
}
