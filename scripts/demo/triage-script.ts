/**
 * What the scripted model does in a local triage run (the demo and the end-to-end test): the
 * k8s-triage skill's steps for one image-pull incident, as recorded model calls (one line per
 * model call, the scripted provider's format). A cluster call before the plan (refused by
 * plan-first), record_plan, the skill's reference, a read through the Kubernetes tool server,
 * wait_and_verify on the pod, then for a failure that persists an alert to `oncall` and the
 * UNRESOLVED summary, or for one that clears the RESOLVED summary and no alert.
 */

/** One recorded model call answering with text. */
export const say = (text: string, extra: Record<string, unknown> = {}) => ({
  request: {},
  responses: [{ ...extra, content: { role: "model", parts: [{ text }] }, turnComplete: true }],
});

/** One recorded model call proposing a tool call (extra fields go on the response, e.g. usageMetadata). */
export const call = (name: string, args: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  request: {},
  responses: [{ ...extra, content: { role: "model", parts: [{ functionCall: { name, args } }] }, turnComplete: true }],
});

export interface PullIncident {
  namespace: string;
  name: string;
  image: string;
  cluster: string;
}

export type TriageStatus = "RESOLVED" | "UNRESOLVED";

/** The INCIDENT SUMMARY block (the skill's router, D479) for an image-pull incident. */
export function pullSummary(incident: PullIncident, status: TriageStatus): string {
  const resolved = status === "RESOLVED";
  return [
    "INCIDENT SUMMARY",
    "================",
    `Status: ${status}`,
    `Incident: ${incident.namespace}/${incident.name}`,
    "Reason: ErrImagePull",
    `Cluster: ${incident.cluster}`,
    "Reference used: references/ImagePullBackOff.md",
    `Root cause: ${resolved ? "a transient pull failure" : `the tag of ${incident.image} does not exist`}`,
    "Evidence:",
    "  1. k8s__pods_get → waiting ImagePullBackOff: manifest unknown",
    `  2. wait_and_verify(k8s__pods_get, phase: Running) → verified=${resolved}`,
    `Proposal: ${resolved ? "none — resolved" : "set the workload's image back to the last tag that ran"}`,
    `Escalation: ${resolved ? "not sent (resolved by itself)" : "alert(oncall) sent"}`,
    `Final state: ${resolved ? "the pod runs" : "the pod still cannot pull its image"}`,
    "Session URL: unknown",
  ].join("\n");
}

/** The model's calls for one incident; `timeoutSeconds` bounds its wait_and_verify. */
export function pullTriage(incident: PullIncident, outcome: TriageStatus, timeoutSeconds: number): object[] {
  const { namespace, name, image } = incident;
  const pod = { namespace, name };
  const plan = [
    `incident: ${namespace}/${name}`,
    "diagnosis: the kubelet cannot pull the image",
    "planned_checks:",
    "- k8s__pods_get: the container's waiting message",
    "verification: wait_and_verify on the pod (phase Running, every container ready)",
  ].join("\n");
  return [
    ...(outcome === "UNRESOLVED" ? [call("k8s__pods_get", pod)] : []),
    call("record_plan", { plan }),
    ...(outcome === "UNRESOLVED"
      ? [call("load_skill_resource", { skill_name: "k8s-triage", resource_path: "references/ImagePullBackOff.md" })]
      : []),
    call("k8s__pods_get", pod),
    call("wait_and_verify", {
      tool: "k8s__pods_get",
      args_json: JSON.stringify(pod),
      expect_contains: "phase: Running",
      expect_not_contains: "ready: false",
      interval_seconds: 1,
      timeout_seconds: timeoutSeconds,
    }),
    ...(outcome === "UNRESOLVED"
      ? [
          call("alert", {
            target: "oncall",
            level: "critical",
            summary: `${namespace}/${name} cannot pull ${image}`,
            details: { cluster: incident.cluster, namespace, name, reason: "ErrImagePull", status: "UNRESOLVED" },
          }),
        ]
      : []),
    say(pullSummary(incident, outcome)),
  ];
}
