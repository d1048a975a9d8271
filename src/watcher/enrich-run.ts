/**
 * One enrichment run's reads and bookkeeping, shared by the pod, workload and node gatherers
 * (docs/watcher-pipeline.md#enrichment-bundle): which `--enrich-lists` resources this kind reads,
 * the optional access preflight, GETs bounded by --enrich-timeout, a 403 turned into a `skipped=`
 * note and any other failure into an `enrichment_error` trailer, the events (`delta`) and log
 * tail (`logs`) lines every kind shares, and the final render through the pure bundle writer.
 */
import type { AccessAnswer, AccessCheck } from "./core/access-plan.ts";
import { type BundleTarget, type EnrichStage, type SectionName, renderBundle } from "./core/enrichment-bundle.ts";
import { type LineEnvelope, logfmtLine } from "./core/logfmt.ts";
import { type KubeConnection, KubeHttpError, kubeFetch } from "./kube/kube-connection.ts";

/**
 * The resources the enrichers read, by their `--enrich-lists` names: pods (a pod's spec, a
 * workload's or node's pods), events (`delta`), logs (log tails), and the workload kinds and
 * nodes, each read for its own `spec` (D432) and by a pod's owner chain (replicasets too, D440).
 */
export const ENRICH_RESOURCES = [
  "pods",
  "events",
  "logs",
  "replicasets",
  "deployments",
  "statefulsets",
  "daemonsets",
  "jobs",
  "nodes",
] as const;
export type EnrichResource = (typeof ENRICH_RESOURCES)[number];

export interface EnricherSettings {
  capBytes: number;
  logLines: number;
  timeoutMs: number;
  /** `--enrich-lists`: default all. */
  lists?: { all: boolean; include: readonly string[]; exclude: readonly string[] };
  /** `--enrich-lists-preflight`: review each selected resource in the namespace first; denied ones are skipped. */
  preflight?: (check: AccessCheck) => Promise<AccessAnswer>;
  /**
   * A workload object already held in memory, by uid (the topology graph's ReplicaSets when storms
   * run): the owner chain reads it there instead of a GET (D440).
   */
  cachedOwner?: (uid: string) => Json | undefined;
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

export type Json = Record<string, unknown>;

export function selectedResources(lists: EnricherSettings["lists"]): EnrichResource[] {
  if (!lists) return [...ENRICH_RESOURCES];
  return ENRICH_RESOURCES.filter((resource) =>
    lists.all ? !lists.exclude.includes(resource) : lists.include.includes(resource),
  );
}

const GROUPS: Partial<Record<EnrichResource, string>> = {
  replicasets: "apps",
  deployments: "apps",
  statefulsets: "apps",
  daemonsets: "apps",
  jobs: "batch",
};

function accessCheck(resource: EnrichResource, namespace: string): AccessCheck {
  if (resource === "events") return { verb: "list", group: "", resource: "events", namespace };
  if (resource === "logs") return { verb: "get", group: "", resource: "pods", subresource: "log", namespace };
  if (resource === "nodes") return { verb: "get", group: "", resource: "nodes" };
  return { verb: "get", group: GROUPS[resource] ?? "", resource, namespace };
}

export class EnrichRun {
  readonly sections: Partial<Record<SectionName, string[]>> = {};
  readonly errors: Array<{ stage: EnrichStage; error: string }> = [];
  readonly skipped: string[] = [];
  readonly abort: AbortSignal;
  private readonly selected: Set<EnrichResource>;
  /** Resources already reviewed (or read without review): never reviewed or skipped twice. */
  private readonly reviewed = new Set<EnrichResource>();

  constructor(
    private readonly connection: KubeConnection,
    private readonly settings: EnricherSettings,
    reads: readonly EnrichResource[],
  ) {
    this.abort = AbortSignal.timeout(settings.timeoutMs);
    const chosen = selectedResources(settings.lists);
    this.selected = new Set(reads.filter((resource) => chosen.includes(resource)));
  }

  has(resource: EnrichResource): boolean {
    return this.selected.has(resource);
  }

  /** With --enrich-lists-preflight: access-review each selected resource; a denied one is skipped. */
  async preflight(namespace: string): Promise<void> {
    await this.review(namespace, [...this.selected]);
  }

  /**
   * Reads decided mid-run (the owner chain's kinds, D440): kept when --enrich-lists selects them,
   * and with --enrich-lists-preflight access-reviewed before their first read, as at the start.
   */
  async extend(namespace: string, reads: readonly EnrichResource[]): Promise<void> {
    const chosen = selectedResources(this.settings.lists);
    const added = reads.filter(
      (resource) => chosen.includes(resource) && !this.selected.has(resource) && !this.reviewed.has(resource),
    );
    for (const resource of added) this.selected.add(resource);
    await this.review(namespace, added);
  }

  private async review(namespace: string, resources: readonly EnrichResource[]): Promise<void> {
    const review = this.settings.preflight;
    for (const resource of resources) this.reviewed.add(resource);
    if (!review) return;
    const answers = await Promise.all(
      resources.map(async (resource) => [resource, await review(accessCheck(resource, namespace))] as const),
    );
    for (const [resource, answer] of answers) {
      if ("allowed" in answer && answer.allowed) continue;
      this.selected.delete(resource);
      if ("error" in answer)
        this.errors.push({ stage: "resolve", error: `access review of ${resource}: ${answer.error}` });
      else this.skipped.push(resource);
    }
  }

  /** A denied read is a skipped resource (a head-line note), not a failed bundle. */
  fail(stage: EnrichStage, resource: EnrichResource | undefined, error: unknown): void {
    if (resource && error instanceof KubeHttpError && error.statusCode === 403) this.skipped.push(resource);
    else this.errors.push({ stage, error: error instanceof Error ? error.message : String(error) });
  }

  /** GET a JSON document; undefined when the resource is not selected or the read failed. */
  async read(resource: EnrichResource, stage: EnrichStage, path: string): Promise<Json | undefined> {
    if (!this.selected.has(resource)) return undefined;
    try {
      const response = await kubeFetch(this.connection, path, { signal: this.abort });
      if (!response.ok) throw new KubeHttpError(response.status, `GET ${path.split("?")[0]}: HTTP ${response.status}`);
      return (await response.json()) as Json;
    } catch (error) {
      this.fail(stage, resource, error);
      return undefined;
    }
  }

  /** A selected resource's object held in memory (`cachedOwner`), by uid; undefined when not held. */
  cached(resource: EnrichResource, uid: string): Json | undefined {
    return this.selected.has(resource) && uid !== "" ? this.settings.cachedOwner?.(uid) : undefined;
  }

  /** `delta`: the last 20 events of the object. */
  eventLines(events: Json | undefined, envelope: Omit<LineEnvelope, "kind">): void {
    if (!events) return;
    this.sections.delta = ((events.items as Json[] | undefined) ?? []).slice(-20).map((event) =>
      logfmtLine(
        {
          ...envelope,
          kind: "event",
          severity: event.type === "Warning" ? "warning" : "info",
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

  /** `logs`: the tail of each container of one pod, the previous run's after a restart. */
  async logTails(
    namespace: string,
    pod: string,
    statuses: readonly Json[],
    envelope: Omit<LineEnvelope, "kind">,
  ): Promise<void> {
    const lines: string[] = [];
    for (const status of this.selected.has("logs") ? statuses : []) {
      const container = String(status.name ?? "");
      const previous = Number(status.restartCount ?? 0) > 0;
      const path = `/api/v1/namespaces/${namespace}/pods/${pod}/log?container=${encodeURIComponent(container)}&tailLines=${this.settings.logLines}&limitBytes=${this.settings.capBytes}${previous ? "&previous=true" : ""}`;
      try {
        const response = await kubeFetch(this.connection, path, { signal: this.abort });
        if (!response.ok) throw new KubeHttpError(response.status, `logs of ${container}: HTTP ${response.status}`);
        for (const line of (await response.text()).split("\n").filter((text) => text.trim() !== ""))
          lines.push(
            logfmtLine({ ...envelope, kind: "log.line", severity: "info" }, [
              ["section", "logs"],
              ["container", container],
              ["line", line.slice(0, 300)],
            ]),
          );
      } catch (error) {
        this.fail("logs", "logs", error);
        if (this.skipped.includes("logs")) break;
      }
    }
    if (lines.length > 0) this.sections.logs = lines;
  }

  render(target: Omit<BundleTarget, "skipped">, commands: Record<SectionName, string>): string {
    const rendered = renderBundle(
      {
        target: { ...target, ...(this.skipped.length > 0 ? { skipped: this.skipped } : {}) },
        sections: this.sections,
        errors: this.errors,
        command: (section) => commands[section],
      },
      this.settings.capBytes,
    );
    this.settings.observe?.(enrichmentReport(rendered, Object.keys(this.sections).length, this.errors));
    return rendered.bundle;
  }
}
