/**
 * The enrichment gatherer for pod incidents (D103): `spec` from the pod (describe: phase, node,
 * each container's image, state and restarts), `delta` from the object's events, `logs` from the
 * tail of each container's previous (else current) log. One run is bounded by --enrich-timeout; a
 * failed read becomes an `enrichment_error` trailer and never blocks the inject. Rendered by the
 * pure bundle writer; dropped sections name the kubectl command that reproduces them.
 * `--enrich-lists` selects the resources read (pods, events, logs); with --enrich-lists-preflight
 * each selected one is access-reviewed in the namespace first. A denied resource (by the review or
 * a 403 on the read) becomes a `skipped=` note on the head line instead of an error trailer.
 * Each gathered bundle is reported to `observe` (the enrichment series, D434).
 */
import { type EnrichStage, type SectionName, renderBundle } from "./core/enrichment-bundle.ts";
import { logfmtLine } from "./core/logfmt.ts";
import type { Signal } from "./core/signal.ts";
import type { AccessAnswer, AccessCheck } from "./core/access-plan.ts";
import { type KubeConnection, KubeHttpError, kubeFetch } from "./kube/kube-connection.ts";

/**
 * The resources the enricher reads, by their `--enrich-lists` names: the pod (section `spec`; logs
 * need it too), its events (section `delta`), its log tails (docs/watcher-pipeline.md#enrichment-bundle).
 */
export const ENRICH_RESOURCES = ["pods", "events", "logs"] as const;
export type EnrichResource = (typeof ENRICH_RESOURCES)[number];

export interface EnricherSettings {
  capBytes: number;
  logLines: number;
  timeoutMs: number;
  /** `--enrich-lists`: default all. */
  lists?: { all: boolean; include: readonly string[]; exclude: readonly string[] };
  /** `--enrich-lists-preflight`: review each selected resource in the namespace first; denied ones are skipped. */
  preflight?: (check: AccessCheck) => Promise<AccessAnswer>;
  /** Told of every bundle gathered (the `watcher_enrichment*` series). */
  observe?: (report: EnrichmentReport) => void;
}

/**
 * What one enrichment run came to (D434): `ok` when no stage erred, `failed` when a stage erred
 * and no section was gathered, else `partial`; the bundle's bytes; whether the cap dropped a
 * section; the stages that erred (a denied read is a skipped resource, not a failure).
 */
export interface EnrichmentReport {
  outcome: "ok" | "partial" | "failed";
  bytes: number;
  truncated: boolean;
  failedStages: EnrichStage[];
}

export function enrichmentReport(
  rendered: { bundle: string; dropped: readonly string[] },
  gathered: number,
  errors: ReadonlyArray<{ stage: EnrichStage }>,
): EnrichmentReport {
  const outcome = errors.length === 0 ? "ok" : gathered === 0 ? "failed" : "partial";
  return {
    outcome,
    bytes: new TextEncoder().encode(rendered.bundle).length,
    truncated: rendered.dropped.length > 0,
    failedStages: errors.map((error) => error.stage),
  };
}

export function selectedResources(lists: EnricherSettings["lists"]): EnrichResource[] {
  if (!lists) return [...ENRICH_RESOURCES];
  return ENRICH_RESOURCES.filter((resource) =>
    lists.all ? !lists.exclude.includes(resource) : lists.include.includes(resource),
  );
}

function accessCheck(resource: EnrichResource, namespace: string): AccessCheck {
  if (resource === "pods") return { verb: "get", group: "", resource: "pods", namespace };
  if (resource === "events") return { verb: "list", group: "", resource: "events", namespace };
  return { verb: "get", group: "", resource: "pods", subresource: "log", namespace };
}

type Json = Record<string, unknown>;

async function getJson(connection: KubeConnection, path: string, signal: AbortSignal): Promise<Json> {
  const response = await kubeFetch(connection, path, { signal });
  if (!response.ok) throw new KubeHttpError(response.status, `GET ${path.split("?")[0]}: HTTP ${response.status}`);
  return (await response.json()) as Json;
}

export function podEnricher(
  connection: KubeConnection,
  settings: EnricherSettings,
): (signal: Signal) => Promise<string | undefined> {
  return async (incident) => {
    if (incident.kindOfObject !== "Pod" || incident.namespace === "") return undefined;
    const abort = AbortSignal.timeout(settings.timeoutMs);
    const { namespace, name, uid } = incident;
    const envelope = { namespace, kind_of_object: "Pod", name };
    const sections: Partial<Record<SectionName, string[]>> = {};
    const errors: Array<{ stage: EnrichStage; error: string }> = [];
    const skipped: string[] = [];
    const fail = (stage: EnrichStage, resource?: EnrichResource) => (error: unknown) => {
      // A denied read is a skipped resource (a head-line note), not a failed bundle.
      if (resource && error instanceof KubeHttpError && error.statusCode === 403) skipped.push(resource);
      else errors.push({ stage, error: error instanceof Error ? error.message : String(error) });
    };
    const selected = new Set(selectedResources(settings.lists));
    if (settings.preflight) {
      const review = settings.preflight;
      const answers = await Promise.all(
        [...selected].map(async (resource) => [resource, await review(accessCheck(resource, namespace))] as const),
      );
      for (const [resource, answer] of answers) {
        if ("allowed" in answer && answer.allowed) continue;
        selected.delete(resource);
        if ("error" in answer)
          errors.push({ stage: "resolve", error: `access review of ${resource}: ${answer.error}` });
        else skipped.push(resource);
      }
    }
    // The pod and its events are independent reads: both in flight at once.
    const [pod, events] = await Promise.all([
      selected.has("pods")
        ? getJson(connection, `/api/v1/namespaces/${namespace}/pods/${name}`, abort).catch((error: unknown) => {
            fail("resolve", "pods")(error);
            return undefined;
          })
        : undefined,
      selected.has("events")
        ? getJson(
            connection,
            `/api/v1/namespaces/${namespace}/events?fieldSelector=${encodeURIComponent(`involvedObject.uid=${uid}`)}`,
            abort,
          ).catch((error: unknown) => {
            fail("delta", "events")(error);
            return undefined;
          })
        : undefined,
    ]);
    const owner = (
      (pod?.metadata as Json | undefined)?.ownerReferences as Array<{ kind?: string; name?: string }> | undefined
    )?.[0];
    const workload =
      owner?.kind && owner.name ? `${owner.kind}/${namespace}/${owner.name}` : `Pod/${namespace}/${name}`;
    const statuses = ((pod?.status as Json | undefined)?.containerStatuses as Json[] | undefined) ?? [];
    if (pod) {
      const status = (pod.status ?? {}) as Json;
      const spec = (pod.spec ?? {}) as Json;
      const lines = [
        logfmtLine({ kind: "spec.resource", severity: "info", ...envelope }, [
          ["section", "spec"],
          ["phase", String(status.phase ?? "")],
          ["node", String(spec.nodeName ?? "")],
        ]),
      ];
      for (const container of (spec.containers as Json[] | undefined) ?? []) {
        const state = statuses.find((candidate) => candidate.name === container.name) ?? {};
        const waiting = ((state.state as Json | undefined)?.waiting as Json | undefined)?.reason;
        lines.push(
          logfmtLine(
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
              ["restarts", String(state.restartCount ?? 0)],
            ],
          ),
        );
      }
      sections.spec = lines;
    }
    if (events) {
      sections.delta = ((events.items as Json[] | undefined) ?? []).slice(-20).map((event) =>
        logfmtLine(
          {
            kind: "event",
            severity: event.type === "Warning" ? "warning" : "info",
            ...envelope,
            reason: String(event.reason ?? ""),
            message: String(event.message ?? ""),
          },
          [
            ["section", "delta"],
            ["count", String(event.count ?? 1)],
          ],
        ),
      );
    }
    const logLines: string[] = [];
    for (const status of selected.has("logs") ? statuses : []) {
      const container = String(status.name ?? "");
      const previous = Number(status.restartCount ?? 0) > 0;
      const path = `/api/v1/namespaces/${namespace}/pods/${name}/log?container=${encodeURIComponent(container)}&tailLines=${settings.logLines}&limitBytes=${settings.capBytes}${previous ? "&previous=true" : ""}`;
      try {
        const response = await kubeFetch(connection, path, { signal: abort });
        if (!response.ok) throw new KubeHttpError(response.status, `logs of ${container}: HTTP ${response.status}`);
        for (const line of (await response.text()).split("\n").filter((text) => text.trim() !== "")) {
          logLines.push(
            logfmtLine({ kind: "log.line", severity: "info", ...envelope }, [
              ["section", "logs"],
              ["container", container],
              ["line", line.slice(0, 300)],
            ]),
          );
        }
      } catch (error) {
        fail("logs", "logs")(error);
        if (skipped.includes("logs")) break;
      }
    }
    if (logLines.length > 0) sections.logs = logLines;
    const commands: Record<SectionName, string> = {
      spec: `kubectl describe pod -n ${namespace} ${name}`,
      delta: `kubectl get events -n ${namespace} --field-selector involvedObject.uid=${uid}`,
      edges: `kubectl get all -n ${namespace}`,
      radius: `kubectl get pods -n ${namespace} -o wide`,
      logs: `kubectl logs -n ${namespace} ${name} --all-containers --previous --tail=${settings.logLines}`,
    };
    const rendered = renderBundle(
      {
        target: {
          namespace,
          kindOfObject: "Pod",
          name,
          workload,
          pods: pod ? 1 : 0,
          ...(skipped.length > 0 ? { skipped } : {}),
        },
        sections,
        errors,
        command: (section) => commands[section],
      },
      settings.capBytes,
    );
    settings.observe?.(enrichmentReport(rendered, Object.keys(sections).length, errors));
    return rendered.bundle;
  };
}
