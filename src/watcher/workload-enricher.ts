/**
 * Enrichment for incidents on workload kinds and nodes (docs/watcher-pipeline.md#enrichment-bundle;
 * D432), and the router that picks the gatherer by the incident's kind. A Deployment, StatefulSet,
 * DaemonSet or Job gets `spec` (its replica or completion counts, unhealthy conditions, template
 * images), `delta` (its events), `radius` (its pods by selector: a count line and each pod not
 * Ready) and `logs` (the tails of its first pod not Ready). A Node gets `spec` (Ready, abnormal
 * conditions, taints, allocatable), `delta` (its events by name) and `radius` (the pods bound to
 * it); a node has no logs. `edges` is never computed here. Any other kind gets no bundle.
 */
import { logfmtLine } from "./core/logfmt.ts";
import { isReady, labelSelector, podRadius } from "./core/pod-radius.ts";
import type { Signal } from "./core/signal.ts";
import { type EnrichResource, type EnricherSettings, EnrichRun, type Json } from "./enrich-run.ts";
import { containerLine, podEnricher } from "./enricher.ts";
import type { KubeConnection } from "./kube/kube-connection.ts";
import { WORKLOAD_KINDS } from "./owner-chain.ts";

type Gatherer = (signal: Signal) => Promise<string | undefined>;

/** The kinds with a workload bundle (a ReplicaSet's incidents get none). */
const WORKLOADS = Object.fromEntries(
  ["Deployment", "StatefulSet", "DaemonSet", "Job"].map((kind) => [kind, WORKLOAD_KINDS[kind]]),
) as Record<string, { resource: EnrichResource; api: string }>;

/** The gatherer for every kind that has one: pods, the workload kinds, nodes. */
export function incidentEnricher(connection: KubeConnection, settings: EnricherSettings): Gatherer {
  const pod = podEnricher(connection, settings);
  const workload = workloadEnricher(connection, settings);
  const node = nodeEnricher(connection, settings);
  return async (signal) => {
    if (signal.kindOfObject === "Pod") return pod(signal);
    if (signal.kindOfObject === "Node") return node(signal);
    return signal.kindOfObject in WORKLOADS ? workload(signal) : undefined;
  };
}

type Envelope = { namespace: string; kind_of_object: string; name: string };

/** Unhealthy when a bad condition is True or a good one is not. */
function conditionLines(object: Json, envelope: Envelope, good: readonly string[], critical: boolean): string[] {
  const conditions = ((object.status as Json | undefined)?.conditions as Json[] | undefined) ?? [];
  return conditions
    .filter((condition) =>
      good.includes(String(condition.type)) ? condition.status !== "True" : condition.status === "True",
    )
    .map((condition) =>
      logfmtLine(
        {
          kind: "spec.condition",
          severity: critical && condition.type === good[0] ? "critical" : "warning",
          ...envelope,
          reason: String(condition.reason ?? condition.type ?? ""),
          message: String(condition.message ?? ""),
        },
        [
          ["section", "spec"],
          ["condition", String(condition.type ?? "")],
          ["status", String(condition.status ?? "")],
        ],
      ),
    );
}

/** The counts a workload kind reports: replicas for the controllers, completions for a Job. */
function workloadCounts(kind: string, object: Json): Array<[string, string | number]> {
  const spec = (object.spec ?? {}) as Json;
  const status = (object.status ?? {}) as Json;
  const n = (value: unknown) => Number(value ?? 0);
  if (kind === "Job")
    return [
      ["completions", n(spec.completions ?? 1)],
      ["succeeded", n(status.succeeded)],
      ["failed", n(status.failed)],
      ["active", n(status.active)],
    ];
  if (kind === "DaemonSet")
    return [
      ["desired", n(status.desiredNumberScheduled)],
      ["ready", n(status.numberReady)],
      ["updated", n(status.updatedNumberScheduled)],
      ["available", n(status.numberAvailable)],
    ];
  return [
    ["desired", n(spec.replicas ?? 1)],
    ["ready", n(status.readyReplicas)],
    ["updated", n(status.updatedReplicas)],
    ["available", n(status.availableReplicas)],
  ];
}

function workloadSpec(kind: string, object: Json, envelope: Envelope): string[] {
  const template = ((object.spec as Json | undefined)?.template as Json | undefined)?.spec as Json | undefined;
  return [
    logfmtLine({ kind: "spec.resource", severity: "info", ...envelope }, [
      ["section", "spec"],
      ...workloadCounts(kind, object),
    ]),
    ...conditionLines(
      object,
      envelope,
      kind === "Job" ? ["Complete", "SuccessCriteriaMet"] : ["Available", "Progressing"],
      false,
    ),
    ...((template?.containers as Json[] | undefined) ?? []).map((container) => containerLine(envelope, container, {})),
  ];
}

export function workloadEnricher(connection: KubeConnection, settings: EnricherSettings): Gatherer {
  return async (incident) => {
    const kind = incident.kindOfObject;
    const known = WORKLOADS[kind];
    if (!known || incident.namespace === "") return undefined;
    const { namespace, name, uid } = incident;
    const envelope = { namespace, kind_of_object: kind, name };
    const run = new EnrichRun(connection, settings, [known.resource, "pods", "events", "logs"]);
    await run.preflight(namespace);
    const [object, events] = await Promise.all([
      run.read(known.resource, "resolve", `${known.api}/namespaces/${namespace}/${known.resource}/${name}`),
      run.read(
        "events",
        "delta",
        `/api/v1/namespaces/${namespace}/events?fieldSelector=${encodeURIComponent(`involvedObject.uid=${uid}`)}`,
      ),
    ]);
    const selector = object ? labelSelector(object) : undefined;
    const list = selector
      ? await run.read(
          "pods",
          "radius",
          `/api/v1/namespaces/${namespace}/pods?labelSelector=${encodeURIComponent(selector)}`,
        )
      : undefined;
    const pods = (list?.items as Json[] | undefined) ?? [];
    if (object) run.sections.spec = workloadSpec(kind, object, envelope);
    run.eventLines(events, envelope);
    if (list) run.sections.radius = podRadius(pods, envelope);
    const failing = pods.find((pod) => !isReady(pod));
    if (failing) {
      const statuses = ((failing.status as Json | undefined)?.containerStatuses as Json[] | undefined) ?? [];
      const podName = String((failing.metadata as Json | undefined)?.name ?? "");
      await run.logTails(namespace, podName, statuses, { namespace, kind_of_object: "Pod", name: podName });
    }
    const lower = kind.toLowerCase();
    return run.render(
      { namespace, kindOfObject: kind, name, workload: `${kind}/${namespace}/${name}`, pods: pods.length },
      {
        spec: `kubectl describe ${lower} -n ${namespace} ${name}`,
        delta: `kubectl get events -n ${namespace} --field-selector involvedObject.uid=${uid}`,
        edges: `kubectl get all -n ${namespace}`,
        radius: `kubectl get pods -n ${namespace} -l ${selector ?? ""} -o wide`,
        logs: `kubectl logs -n ${namespace} ${lower}/${name} --all-containers --tail=${settings.logLines}`,
      },
    );
  };
}

function nodeSpec(node: Json, envelope: Envelope): string[] {
  const spec = (node.spec ?? {}) as Json;
  const status = (node.status ?? {}) as Json;
  const allocatable = (status.allocatable ?? {}) as Json;
  const ready = ((status.conditions as Json[] | undefined) ?? []).find((condition) => condition.type === "Ready");
  const lines = [
    logfmtLine({ kind: "spec.resource", severity: "info", ...envelope }, [
      ["section", "spec"],
      ["ready", String(ready?.status ?? "Unknown")],
      ["unschedulable", String(spec.unschedulable === true)],
      ["kubelet", String(((status.nodeInfo as Json | undefined)?.kubeletVersion as string | undefined) ?? "")],
      ["cpu", String(allocatable.cpu ?? "")],
      ["memory", String(allocatable.memory ?? "")],
      ["max_pods", String(allocatable.pods ?? "")],
    ]),
    ...conditionLines(node, envelope, ["Ready"], true),
  ];
  for (const taint of (spec.taints as Json[] | undefined) ?? [])
    lines.push(
      logfmtLine({ kind: "spec.taint", severity: "info", ...envelope }, [
        ["section", "spec"],
        ["taint", `${String(taint.key ?? "")}${taint.value ? `=${String(taint.value)}` : ""}`],
        ["effect", String(taint.effect ?? "")],
      ]),
    );
  return lines;
}

export function nodeEnricher(connection: KubeConnection, settings: EnricherSettings): Gatherer {
  return async (incident) => {
    if (incident.kindOfObject !== "Node") return undefined;
    const { name } = incident;
    const envelope = { namespace: "", kind_of_object: "Node", name };
    const run = new EnrichRun(connection, settings, ["nodes", "pods", "events"]);
    await run.preflight("");
    const eventSelector = `involvedObject.kind=Node,involvedObject.name=${name}`;
    const podSelector = `spec.nodeName=${name}`;
    const [node, events, list] = await Promise.all([
      run.read("nodes", "resolve", `/api/v1/nodes/${name}`),
      run.read("events", "delta", `/api/v1/events?fieldSelector=${encodeURIComponent(eventSelector)}`),
      run.read("pods", "radius", `/api/v1/pods?fieldSelector=${encodeURIComponent(podSelector)}`),
    ]);
    const pods = (list?.items as Json[] | undefined) ?? [];
    if (node) run.sections.spec = nodeSpec(node, envelope);
    run.eventLines(events, envelope);
    if (list) run.sections.radius = podRadius(pods, envelope);
    return run.render(
      { namespace: "", kindOfObject: "Node", name, workload: `Node//${name}`, pods: pods.length },
      {
        spec: `kubectl describe node ${name}`,
        delta: `kubectl get events -A --field-selector ${eventSelector}`,
        edges: `kubectl get pods -A --field-selector ${podSelector}`,
        radius: `kubectl get pods -A --field-selector ${podSelector} -o wide`,
        logs: `kubectl describe node ${name}`,
      },
    );
  };
}
