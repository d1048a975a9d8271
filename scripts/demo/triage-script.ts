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
  /** The pod's uid, which the scenario gives it so the summary and the page can name it. */
  uid: string;
  image: string;
  cluster: string;
}

export type TriageStatus = "RESOLVED" | "UNRESOLVED";

/** What the summary and the page say about an image-pull incident, by outcome. */
function pullFindings(incident: PullIncident, status: TriageStatus) {
  const resolved = status === "RESOLVED";
  return {
    rootCause: resolved ? "a transient pull failure" : `the tag of ${incident.image} does not exist`,
    evidence: [
      "k8s__pods_get → waiting ImagePullBackOff: manifest unknown",
      `wait_and_verify(k8s__pods_get, phase: Running) → verified=${resolved}`,
    ],
    proposal: resolved ? "none — resolved" : "set the workload's image back to the last tag that ran",
  };
}

/** The INCIDENT SUMMARY block (the skill's router, D479) for an image-pull incident. */
export function pullSummary(incident: PullIncident, status: TriageStatus): string {
  const resolved = status === "RESOLVED";
  const { rootCause, evidence, proposal } = pullFindings(incident, status);
  return [
    "INCIDENT SUMMARY",
    "================",
    `Status: ${status}`,
    `Incident: ${incident.namespace}/${incident.name} (${incident.uid})`,
    "Reason: ErrImagePull",
    `Cluster: ${incident.cluster}`,
    "Reference used: references/ImagePullBackOff.md",
    `Root cause: ${rootCause}`,
    "Evidence:",
    ...evidence.map((line, index) => `  ${index + 1}. ${line}`),
    `Proposal: ${proposal}`,
    `Escalation: ${resolved ? "not sent (resolved by itself)" : "alert(oncall) sent"}`,
    `Final state: ${resolved ? "the pod runs" : "the pod still cannot pull its image"}`,
    "Session URL: unknown",
  ].join("\n");
}

/**
 * The page for an incident that did not clear, shaped as the skill's Step 4 asks: the status,
 * reason, object and root cause in the summary; the proposal and the evidence in the details.
 */
function pullAlert(incident: PullIncident, status: TriageStatus) {
  const { namespace, name, uid, cluster } = incident;
  const { rootCause, evidence, proposal } = pullFindings(incident, status);
  return call("alert", {
    target: "oncall",
    level: "critical",
    summary: `${status} ErrImagePull ${namespace}/${name}: ${rootCause}`,
    details: { cluster, namespace, name, uid, reason: "ErrImagePull", status, proposal, evidence, session: "unknown" },
  });
}

/** The model's calls for one incident; `timeoutSeconds` bounds its wait_and_verify. */
export function pullTriage(incident: PullIncident, outcome: TriageStatus, timeoutSeconds: number): object[] {
  const { namespace, name } = incident;
  const pod = { namespace, name };
  const plan = [
    `incident: ${namespace}/${name} (uid=${incident.uid})`,
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
    ...(outcome === "UNRESOLVED" ? [pullAlert(incident, outcome)] : []),
    say(pullSummary(incident, outcome)),
  ];
}
