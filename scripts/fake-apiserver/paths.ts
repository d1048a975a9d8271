/**
 * Parsing of Kubernetes resource paths: `/api/v1/...` and `/apis/<group>/<version>/...`, with
 * `namespaces/<ns>/` for namespaced resources, `<name>` and `<subresource>`, and the legacy
 * `/watch/` prefix. Subresources are `status` and pods' `log`. Pure; the router turns a parse
 * failure into a 404 Status.
 */
import { type ResourceInfo, findResource } from "./resources.ts";

export interface ResourcePath {
  info: ResourceInfo;
  /** The namespace in the path; undefined for all-namespaces or cluster-scoped requests. */
  namespace: string | undefined;
  name: string | undefined;
  subresource: string | undefined;
  /** The path used the legacy `/watch/` segment. */
  legacyWatch: boolean;
}

/** Group and version of an API path prefix plus the remaining segments, or undefined. */
function splitGroupVersion(segments: string[]): { group: string; version: string; rest: string[] } | undefined {
  if (segments[0] === "api" && segments[1]) return { group: "", version: segments[1], rest: segments.slice(2) };
  if (segments[0] === "apis" && segments[1] && segments[2])
    return { group: segments[1], version: segments[2], rest: segments.slice(3) };
  return undefined;
}

export function parseResourcePath(pathname: string): ResourcePath | undefined {
  const segments = pathname
    .split("/")
    .filter((segment) => segment !== "")
    .map(decodeURIComponent);
  const prefix = splitGroupVersion(segments);
  if (!prefix) return undefined;
  const { group, version } = prefix;
  let rest = prefix.rest;
  const legacyWatch = rest[0] === "watch";
  if (legacyWatch) rest = rest.slice(1);
  let namespace: string | undefined;
  if (rest[0] === "namespaces" && rest[1] !== undefined && rest[2] !== undefined) {
    const inner = findResource(group, version, rest[2]);
    if (inner?.namespaced) {
      namespace = rest[1];
      rest = rest.slice(2);
    }
  }
  const [resourceName, name, subresource, ...extra] = rest;
  if (resourceName === undefined || extra.length > 0) return undefined;
  const info = findResource(group, version, resourceName);
  if (!info) return undefined;
  if (namespace !== undefined && !info.namespaced) return undefined;
  if (subresource !== undefined && subresource !== "status" && !(subresource === "log" && info.resource === "pods"))
    return undefined;
  return { info, namespace, name, subresource, legacyWatch };
}
