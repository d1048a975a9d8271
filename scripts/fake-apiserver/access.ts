/**
 * Authentication and authorization of the fake apiserver. Bearer tokens map to user names; under
 * mTLS a request without a token is the client-certificate user. Authorization is a grant set (an
 * RBAC rule list, optionally per user): undefined grants allow everything. The same grants answer
 * SelfSubjectAccessReviews and gate real requests (403 with the apiserver's message), so a test can
 * revoke a permission and see both the review and the request change.
 */
import { type KubeStatus, statusObject } from "./status.ts";

/** One RBAC-like rule. `*` is a wildcard in every list. */
export interface Grant {
  verbs: string[];
  /** Resource names, with subresources as `pods/log`. */
  resources: string[];
  /** API groups (`""` is core). Default: every group. */
  apiGroups?: string[];
  /** Namespaces the rule applies in. Default: every namespace and cluster scope. */
  namespaces?: string[];
  resourceNames?: string[];
  /** Users the rule applies to. Default: every authenticated user. */
  users?: string[];
}

export interface AccessAttributes {
  user: string;
  verb: string;
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export interface AuthOptions {
  /** Bearer token → user name. Unset: no authentication, every request is `defaultUser`. */
  tokens?: Record<string, string>;
  /** The grant set; unset allows everything. */
  grants?: Grant[];
  /** The user of a request authenticated by its client certificate (mTLS mode). */
  clientCertificateUser?: string;
}

export type Authentication = { ok: true; user: string } | { ok: false; status: KubeStatus };

const DEFAULT_USER = "system:admin";

function listed(list: readonly string[] | undefined, value: string): boolean {
  return list === undefined || list.includes("*") || list.includes(value);
}

export class AccessControl {
  private grants: Grant[] | undefined;

  constructor(
    private readonly tokens: Record<string, string> | undefined,
    grants: Grant[] | undefined,
    private readonly clientCertificateUser: string | undefined,
  ) {
    this.grants = grants === undefined ? undefined : structuredClone(grants);
  }

  /** Replace the grant set (undefined allows everything). */
  setGrants(grants: Grant[] | undefined): void {
    this.grants = grants === undefined ? undefined : structuredClone(grants);
  }

  currentGrants(): Grant[] | undefined {
    return this.grants === undefined ? undefined : structuredClone(this.grants);
  }

  authenticate(authorization: string | null): Authentication {
    const bearer = /^Bearer\s+(.+)$/i.exec(authorization ?? "")?.[1]?.trim();
    if (bearer !== undefined && this.tokens !== undefined) {
      const user = this.tokens[bearer];
      return user === undefined
        ? { ok: false, status: statusObject(401, "Unauthorized", "Unauthorized") }
        : { ok: true, user };
    }
    if (this.clientCertificateUser !== undefined) return { ok: true, user: this.clientCertificateUser };
    if (this.tokens === undefined) return { ok: true, user: DEFAULT_USER };
    return { ok: false, status: statusObject(401, "Unauthorized", "Unauthorized") };
  }

  allows(attributes: AccessAttributes): boolean {
    if (this.grants === undefined) return true;
    const resource = attributes.subresource ? `${attributes.resource}/${attributes.subresource}` : attributes.resource;
    return this.grants.some(
      (grant) =>
        listed(grant.users, attributes.user) &&
        listed(grant.verbs, attributes.verb) &&
        listed(grant.apiGroups, attributes.group) &&
        (listed(grant.resources, resource) ||
          (attributes.subresource !== "" && grant.resources.includes(`${attributes.resource}/*`))) &&
        (grant.namespaces === undefined ||
          (attributes.namespace !== "" && listed(grant.namespaces, attributes.namespace))) &&
        (grant.resourceNames === undefined || (attributes.name !== "" && listed(grant.resourceNames, attributes.name))),
    );
  }

  /** The 403 a real apiserver writes for a denied request. */
  forbidden(attributes: AccessAttributes): KubeStatus {
    const resource = attributes.subresource ? `${attributes.resource}/${attributes.subresource}` : attributes.resource;
    const subject = attributes.name ? `${attributes.resource} "${attributes.name}"` : attributes.resource;
    const scope = attributes.namespace ? ` in the namespace "${attributes.namespace}"` : " at the cluster scope";
    const message = `${subject}${attributes.group ? `.${attributes.group}` : ""} is forbidden: User "${attributes.user}" cannot ${attributes.verb} resource "${resource}" in API group "${attributes.group}"${scope}`;
    return statusObject(403, "Forbidden", message, {
      ...(attributes.name ? { name: attributes.name } : {}),
      group: attributes.group,
      kind: attributes.resource,
    });
  }
}

function stringField(object: Record<string, unknown>, key: string): string {
  const value = object[key];
  return typeof value === "string" ? value : "";
}

/**
 * Answer a SelfSubjectAccessReview body for `user`: the review echoed back with `status`.
 * Returns undefined when the body is not a review with resource or non-resource attributes.
 */
export function reviewAccess(access: AccessControl, user: string, body: unknown): Record<string, unknown> | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const review = body as Record<string, unknown>;
  const spec = review.spec as Record<string, unknown> | undefined;
  if (!spec) return undefined;
  let allowed: boolean;
  const resourceAttributes = spec.resourceAttributes as Record<string, unknown> | undefined;
  const nonResourceAttributes = spec.nonResourceAttributes as Record<string, unknown> | undefined;
  if (resourceAttributes) {
    allowed = access.allows({
      user,
      verb: stringField(resourceAttributes, "verb"),
      group: stringField(resourceAttributes, "group"),
      resource: stringField(resourceAttributes, "resource"),
      subresource: stringField(resourceAttributes, "subresource"),
      namespace: stringField(resourceAttributes, "namespace"),
      name: stringField(resourceAttributes, "name"),
    });
  } else if (nonResourceAttributes) {
    allowed = true;
  } else {
    return undefined;
  }
  const status = allowed
    ? { allowed: true, reason: `fake apiserver: allowed by the grant set to User "${user}"` }
    : { allowed: false };
  return {
    kind: "SelfSubjectAccessReview",
    apiVersion: "authorization.k8s.io/v1",
    metadata: { creationTimestamp: null },
    spec,
    status,
  };
}
