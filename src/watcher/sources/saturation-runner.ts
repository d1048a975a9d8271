/**
 * The saturation source's runner (D391): a DetectorSource runs its fixed-path polls (the metrics
 * API, the pods list) with the detector this runner shares, and the runner runs the one poll a
 * fixed path cannot express: every `--saturation-interval` it lists the nodes and GETs each one's
 * kubelet stats summary (`/api/v1/nodes/<node>/proxy/stats/summary`, at most 8 at a time, each
 * bounded by a timeout), then tells the detector the whole round at once (a node that failed keeps
 * its claims). A round still running when the next is due is not doubled. Left out when the plan
 * denied `get nodes/proxy` (the source then has no PVC forecasts). A failing round is logged once
 * until one answers again.
 */
import type { Signal } from "../core/signal.ts";
import type { SourceSpec } from "../core/source-spec.ts";
import { specForSettings } from "../core/source-catalog.ts";
import { type NodeStats, SATURATION_POLLS, type SaturationSettings } from "../core/sources/saturation-detector.ts";
import { SATURATION_SPEC } from "../core/sources/saturation-spec.ts";
import { field, text } from "../core/sources/source-fields.ts";
import { kubeFetch } from "../kube/kube-connection.ts";
import { DetectorSource } from "./detector-source.ts";
import type { SourceRunner, SourceRunnerContext } from "./source-runner.ts";

/** Stats requests in flight at once. */
const PARALLEL = 8;
/** One node's stats request gives up after this long (or the interval, if shorter). */
const NODE_TIMEOUT_MS = 10_000;

export class SaturationRunner implements SourceRunner {
  readonly name = SATURATION_SPEC.name;
  readonly #inner: DetectorSource<SaturationSettings>;
  readonly #context: SourceRunnerContext;
  readonly #settings: SaturationSettings;
  readonly #polled: (poll: string, body: unknown, now: number, error?: string) => Signal[];
  readonly #now: () => number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #running = false;
  #failing = false;
  #stopped = false;

  /** `base` is the catalog's spec; a test may wrap its detector to see what it was told. */
  constructor(
    context: SourceRunnerContext,
    settings: SaturationSettings,
    base: SourceSpec<SaturationSettings> = SATURATION_SPEC,
  ) {
    this.#context = context;
    this.#settings = settings;
    this.#now = context.now ?? Date.now;
    const spec = specForSettings(base, settings);
    const detector = spec.detector(settings);
    this.#polled = (poll, body, now, error) => detector.polled?.(poll, body, now, error) ?? [];
    this.#inner = new DetectorSource({
      ...context,
      spec: {
        ...spec,
        polls: (spec.polls ?? []).filter((poll) => poll.name !== SATURATION_POLLS.stats),
        detector: () => detector,
      },
      settings,
    });
  }

  get synced(): boolean {
    return this.#inner.synced;
  }

  get lastError(): string | undefined {
    return this.#inner.lastError;
  }

  async start(): Promise<void> {
    await this.#inner.start();
    if (this.#context.without.has(SATURATION_POLLS.stats)) return;
    const run = () => void this.#round();
    run();
    this.#timer = setInterval(run, this.#settings.intervalMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
    await this.#inner.stop();
  }

  async #round(): Promise<void> {
    if (this.#running || this.#stopped) return;
    this.#running = true;
    try {
      let body: { nodes: NodeStats[] } | undefined;
      let error: string | undefined;
      let problem: string | undefined;
      try {
        const nodes = await this.#statsOfEveryNode();
        const failed = nodes.filter((node) => node.error !== undefined);
        // Every node failing is a failed poll (state kept); some failing keep their claims.
        if (failed.length > 0 && failed.length === nodes.length) error = failed[0]?.error;
        else body = { nodes };
        if (failed.length > 0)
          problem = `${failed.length} of ${nodes.length} nodes' stats failed (${failed[0]?.node}: ${failed[0]?.error})`;
      } catch (caught) {
        error = caught instanceof Error ? caught.message : String(caught);
        problem = error;
      }
      if (this.#stopped) return;
      this.#note(problem);
      // Through the inner host, so the detector's open conditions are diffed after the round too (D437).
      this.#inner.deliver(this.#polled(SATURATION_POLLS.stats, body, this.#now(), error));
    } finally {
      this.#running = false;
    }
  }

  /** A failing round (or some of its nodes) is logged once, until a round answers in full again. */
  #note(problem: string | undefined): void {
    const key = `${this.name}/${SATURATION_POLLS.stats}`;
    if (problem !== undefined && !this.#failing)
      this.#context.logger.warn(
        `source ${key}: poll failed: ${problem} (retried every ${this.#settings.intervalMs} ms)`,
      );
    else if (problem === undefined && this.#failing) this.#context.logger.info(`source ${key}: poll answers again`);
    this.#failing = problem !== undefined;
  }

  async #statsOfEveryNode(): Promise<NodeStats[]> {
    const nodes = await this.#get("/api/v1/nodes");
    const list = field(nodes, "items");
    const names = (Array.isArray(list) ? list : []).map((node) => text(field(node, "metadata", "name")));
    const results: NodeStats[] = [];
    let next = 0;
    const worker = async () => {
      while (next < names.length && !this.#stopped) {
        const node = names[next++] as string;
        try {
          results.push({
            node,
            summary: await this.#get(`/api/v1/nodes/${encodeURIComponent(node)}/proxy/stats/summary`),
          });
        } catch (caught) {
          results.push({ node, error: caught instanceof Error ? caught.message : String(caught) });
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, names.length) }, worker));
    return results;
  }

  async #get(path: string): Promise<unknown> {
    const timeout = AbortSignal.timeout(Math.min(NODE_TIMEOUT_MS, Math.max(this.#settings.intervalMs, 1000)));
    const response = await kubeFetch(this.#context.connection, path, { signal: timeout });
    if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`);
    return response.json();
  }
}
