/**
 * The enrichment gatherer for pod incidents (D103): `spec` from the pod (describe: phase, node,
 * each container's image, state and restarts), `delta` from the object's events, `radius` from
 * the pods of its top workload (D442; the head line's `workload=` is that top, found by walking
 * the owner chain in owner-chain.ts, D440), `logs` from the tail of each container's previous
 * (else current) log. One run is bounded by --enrich-timeout; a
 * failed read becomes an `enrichment_error` trailer and never blocks the inject. Rendered by the
 * pure bundle writer; dropped sections name the kubectl command that reproduces them.
 * `--enrich-lists` selects the resources read (pods, events, logs); with --enrich-lists-preflight
 * each selected one is access-reviewed in the namespace first. A denied resource (by the review or
 * a 403 on the read) becomes a `skipped=` note on the head line instead of an error trailer. The
 * reads and bookkeeping live in enrich-run.ts; workload kinds and nodes in workload-enricher.ts.
 * Each gathered bundle is reported to `observe` (the enrichment series, D434).
 */
import { logfmtLine } from "./core/logfmt.ts";
import { podRadius } from "./core/pod-radius.ts";
import type { Signal } from "./core/signal.ts";
import { type EnricherSettings, EnrichRun, type Json } from "./enrich-run.ts";
import type { KubeConnection } from "./kube/kube-connection.ts";
import { chainRadius, ownerChain } from "./owner-chain.ts";

export {
  ENRICH_RESOURCES,
  type EnrichResource,
  type EnricherSettings,
  type EnrichmentReport,
  enrichmentReport,
  selectedResources,
} from "./enrich-run.ts";

/** A container's spec line: image and restarts, critical with its waiting reason when waiting. */
export function containerLine(
  envelope: { namespace: string; kind_of_object: string; name: string },
  container: Json,
  status: Json,
): string {
  const waiting = ((status.state as Json | undefined)?.waiting as Json | undefined)?.reason;
  return logfmtLine(
    {
      kind: "spec.container",
      severity: waiting ? "critical" : "info",
      ...envelope,
      ...(waiting ? { reason: String(waiting) } : {}),
    },
    [
      ["section", "spec"],
      ["container", String(container.name ?? "")],
      ["image", String(container.image ?? "")],
      ["restarts", String(status.restartCount ?? 0)],
    ],
  );
}

/** `spec` of a pod: its phase and node, then each container's line. */
function podSpec(pod: Json, envelope: { namespace: string; kind_of_object: string; name: string }): string[] {
  const status = (pod.status ?? {}) as Json;
  const spec = (pod.spec ?? {}) as Json;
  const statuses = (status.containerStatuses as Json[] | undefined) ?? [];
  const lines = [
    logfmtLine({ kind: "spec.resource", severity: "info", ...envelope }, [
      ["section", "spec"],
      ["phase", String(status.phase ?? "")],
      ["node", String(spec.nodeName ?? "")],
    ]),
  ];
  for (const container of (spec.containers as Json[] | undefined) ?? []) {
    const state = statuses.find((candidate) => candidate.name === container.name) ?? {};
    lines.push(containerLine(envelope, container, state));
  }
  return lines;
}

export function podEnricher(
  connection: KubeConnection,
  settings: EnricherSettings,
): (signal: Signal) => Promise<string | undefined> {
  return async (incident) => {
    if (incident.kindOfObject !== "Pod" || incident.namespace === "") return undefined;
    const { namespace, name, uid } = incident;
    const envelope = { namespace, kind_of_object: "Pod", name };
    const run = new EnrichRun(connection, settings, ["pods", "events", "logs"]);
    await run.preflight(namespace);
    // The pod and its events are independent reads: both in flight at once.
    const [pod, events] = await Promise.all([
      run.read("pods", "resolve", `/api/v1/namespaces/${namespace}/pods/${name}`),
      run.read(
        "events",
        "delta",
        `/api/v1/namespaces/${namespace}/events?fieldSelector=${encodeURIComponent(`involvedObject.uid=${uid}`)}`,
      ),
    ]);
    // D440: the head line names the top of the owner chain; D442: the radius is its pods.
    const chain = await ownerChain(run, namespace, pod);
    const top = chain.at(-1);
    const radius = await chainRadius(run, namespace, chain);
    const statuses = ((pod?.status as Json | undefined)?.containerStatuses as Json[] | undefined) ?? [];
    if (pod) run.sections.spec = podSpec(pod, envelope);
    run.eventLines(events, envelope);
    if (radius)
      run.sections.radius = podRadius(radius.pods, {
        namespace,
        kind_of_object: radius.owner.kind,
        name: radius.owner.name,
      });
    await run.logTails(namespace, name, statuses, envelope);
    return run.render(
      {
        namespace,
        kindOfObject: "Pod",
        name,
        workload: top ? `${top.kind}/${namespace}/${top.name}` : `Pod/${namespace}/${name}`,
        pods: radius ? radius.pods.length : pod ? 1 : 0,
      },
      {
        spec: `kubectl describe pod -n ${namespace} ${name}`,
        delta: `kubectl get events -n ${namespace} --field-selector involvedObject.uid=${uid}`,
        edges: `kubectl get all -n ${namespace}`,
        radius: radius?.command ?? `kubectl get pods -n ${namespace} -o wide`,
        logs: `kubectl logs -n ${namespace} ${name} --all-containers --previous --tail=${settings.logLines}`,
      },
    );
  };
}
