/**
 * A pod's top workload and its pods, for the pod bundle (docs/watcher-pipeline.md#enrichment-bundle;
 * D440, D442). The chain follows controller ownerReferences through the workload kinds only: Pod
 * -> ReplicaSet -> Deployment, Pod -> Job -> CronJob, Pod -> StatefulSet or DaemonSet. Each kind
 * that may have an owner of its own, or whose selector the radius needs, is one GET through the
 * run (so it counts against --enrich-timeout, follows --enrich-lists and, on failure, leaves an
 * `enrichment_error stage=resolve` trailer) unless the run holds it already (the topology graph's
 * ReplicaSets when storms run); a CronJob is named from its Job's reference and never read. A failed read ends the walk where the references reached. The radius lists the pods of the
 * highest workload read by its `matchLabels`; a CronJob's are matched by owner through its Jobs.
 */
import { labelSelector } from "./core/pod-radius.ts";
import type { EnrichResource, EnrichRun, Json } from "./enrich-run.ts";

interface OwnerRef {
  kind?: string;
  name?: string;
  uid?: string;
  controller?: boolean;
}

/** The workload kinds that are read: the resource and API group path of each. */
export const WORKLOAD_KINDS: Record<string, { resource: EnrichResource; api: string }> = {
  ReplicaSet: { resource: "replicasets", api: "/apis/apps/v1" },
  Deployment: { resource: "deployments", api: "/apis/apps/v1" },
  StatefulSet: { resource: "statefulsets", api: "/apis/apps/v1" },
  DaemonSet: { resource: "daemonsets", api: "/apis/apps/v1" },
  Job: { resource: "jobs", api: "/apis/batch/v1" },
};

/** A CronJob tops its chain and is named from its Job's reference, never read. */
const isWorkloadKind = (kind: string) => kind in WORKLOAD_KINDS || kind === "CronJob";

/** No chain of workload kinds is longer than two owners above the pod; the bound only guards. */
const MAX_HOPS = 3;

/** One link of the chain: the object's identity, and the object itself when it was read. */
export interface ChainStep {
  kind: string;
  name: string;
  uid: string;
  object?: Json;
}

/** The controller reference (else the only reference) when its kind is a workload kind. */
export function workloadOwner(object: Json | undefined): ChainStep | undefined {
  const owners = ((object?.metadata as Json | undefined)?.ownerReferences as OwnerRef[] | undefined) ?? [];
  const owner = owners.find((candidate) => candidate.controller) ?? (owners.length === 1 ? owners[0] : undefined);
  if (!owner?.kind || !owner.name || !isWorkloadKind(owner.kind)) return undefined;
  return { kind: owner.kind, name: owner.name, uid: String(owner.uid ?? "") };
}

/**
 * The chain above `pod`, nearest first; empty for a bare pod (or one whose owner is no workload
 * kind). The last step is the top workload.
 */
export async function ownerChain(run: EnrichRun, namespace: string, pod: Json | undefined): Promise<ChainStep[]> {
  const chain: ChainStep[] = [];
  let next = workloadOwner(pod);
  while (next && chain.length < MAX_HOPS) {
    const step: ChainStep = next;
    chain.push(step);
    const known = WORKLOAD_KINDS[step.kind];
    if (!known) break;
    const { resource, api } = known;
    await run.extend(namespace, [resource]);
    const object =
      run.cached(resource, step.uid) ??
      (await run.read(resource, "resolve", `${api}/namespaces/${namespace}/${resource}/${step.name}`));
    if (!object) break;
    step.object = object;
    next = workloadOwner(object);
  }
  return chain;
}

/** The pods the radius covers: whose they are (the envelope's owner), the list, the kubectl that shows them. */
export interface ChainRadius {
  owner: ChainStep;
  pods: Json[];
  command: string;
}

function controllerUid(object: Json): string | undefined {
  const owners = ((object.metadata as Json | undefined)?.ownerReferences as OwnerRef[] | undefined) ?? [];
  return owners.find((owner) => owner.controller)?.uid;
}

/** A CronJob's pods: those whose controller is one of the Jobs the CronJob controls (D442). */
async function cronJobPods(run: EnrichRun, namespace: string, cronJob: ChainStep): Promise<ChainRadius | undefined> {
  await run.extend(namespace, ["jobs"]);
  const jobs = await run.read("jobs", "radius", `/apis/batch/v1/namespaces/${namespace}/jobs`);
  if (!jobs) return undefined;
  const owned = ((jobs.items as Json[] | undefined) ?? []).filter((job) => controllerUid(job) === cronJob.uid);
  const uids = new Set(owned.map((job) => String((job.metadata as Json | undefined)?.uid ?? "")));
  const names = owned.map((job) => String((job.metadata as Json | undefined)?.name ?? ""));
  const list = await run.read("pods", "radius", `/api/v1/namespaces/${namespace}/pods`);
  if (!list) return undefined;
  const pods = ((list.items as Json[] | undefined) ?? []).filter((pod) => uids.has(controllerUid(pod) ?? ""));
  const selector = names.length > 0 ? ` -l 'job-name in (${names.join(",")})'` : "";
  return { owner: cronJob, pods, command: `kubectl get pods -n ${namespace}${selector} -o wide` };
}

/**
 * The radius of the chain (D442): the CronJob's pods by owner when the top is a CronJob, else the
 * pods selected by the highest workload that was read (the top, or below it when the top's read
 * failed). Undefined for a bare pod, or when nothing could be listed.
 */
export async function chainRadius(
  run: EnrichRun,
  namespace: string,
  chain: readonly ChainStep[],
): Promise<ChainRadius | undefined> {
  const top = chain.at(-1);
  if (top?.kind === "CronJob") return cronJobPods(run, namespace, top);
  const owner = [...chain].reverse().find((step) => step.object && labelSelector(step.object));
  const selector = owner?.object ? labelSelector(owner.object) : undefined;
  if (!owner || !selector) return undefined;
  const list = await run.read(
    "pods",
    "radius",
    `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
  );
  if (!list) return undefined;
  return {
    owner,
    pods: (list.items as Json[] | undefined) ?? [],
    command: `kubectl get pods -n ${namespace} -l ${selector} -o wide`,
  };
}
