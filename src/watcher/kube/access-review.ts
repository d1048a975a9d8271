/**
 * SelfSubjectAccessReview (authorization.k8s.io/v1): one POST per check; the answer quotes the
 * authorizer's reason. An HTTP or network failure is an error answer (fatal at startup).
 */
import type { AccessAnswer, AccessCheck } from "../core/access-plan.ts";
import { type KubeConnection, kubeFetch } from "./kube-connection.ts";

export async function reviewAccess(connection: KubeConnection, check: AccessCheck): Promise<AccessAnswer> {
  const body = {
    apiVersion: "authorization.k8s.io/v1",
    kind: "SelfSubjectAccessReview",
    spec: {
      resourceAttributes: {
        verb: check.verb,
        group: check.group,
        resource: check.resource,
        ...(check.subresource ? { subresource: check.subresource } : {}),
        ...(check.namespace ? { namespace: check.namespace } : {}),
        ...(check.name ? { name: check.name } : {}),
      },
    },
  };
  try {
    const response = await kubeFetch(connection, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) return { error: `HTTP ${response.status} ${(await response.text()).slice(0, 300)}` };
    const status =
      ((await response.json()) as { status?: { allowed?: boolean; reason?: string; evaluationError?: string } })
        .status ?? {};
    if (status.allowed === true) return { allowed: true };
    const reason = [status.reason, status.evaluationError].filter(Boolean).join("; ");
    return reason ? { allowed: false, reason } : { allowed: false };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}
