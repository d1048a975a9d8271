/**
 * The quota source's runner (D398): every `--quota-poll` it asks its QuotaProvider for every
 * quota's usage and hands them to the pure QuotaDetector, emitting what it answers. The portable
 * provider lists `v1 ResourceQuota` cluster-wide in pages of 500; a failed poll judges nothing
 * (a failure clears no page), is logged once until the provider answers again, and is tried at
 * the next turn. Built from the flag values and the context alone (source-runner.ts).
 */
import type { FlagValue } from "../../config/flag-spec.ts";
import { QUOTA_DEFAULTS, QuotaDetector, type QuotaSettings } from "../core/sources/quota-detector.ts";
import { type QuotaProvider, type QuotaUsage, resourceQuotaUsages } from "../core/sources/quota-usage.ts";
import { type KubeConnection, kubeFetch } from "../kube/kube-connection.ts";
import type { SourceRunner, SourceRunnerContext } from "./source-runner.ts";

const PAGE_SIZE = 500;

/** The portable provider: every ResourceQuota of the cluster, paged. */
export class ResourceQuotaProvider implements QuotaProvider {
  readonly name = "resourcequotas";
  readonly #connection: KubeConnection;

  constructor(connection: KubeConnection) {
    this.#connection = connection;
  }

  async usages(): Promise<QuotaUsage[]> {
    const items: unknown[] = [];
    let next = "";
    do {
      const query = `limit=${PAGE_SIZE}${next ? `&continue=${encodeURIComponent(next)}` : ""}`;
      const response = await kubeFetch(this.#connection, `/api/v1/resourcequotas?${query}`);
      if (!response.ok) throw new Error(`GET /api/v1/resourcequotas: HTTP ${response.status}`);
      const page = (await response.json()) as { items?: unknown[]; metadata?: { continue?: string } };
      items.push(...(page.items ?? []));
      next = page.metadata?.continue ?? "";
    } while (next !== "");
    return resourceQuotaUsages({ items });
  }
}

function number(values: ReadonlyMap<string, FlagValue>, name: string, fallback: number): number {
  const value = values.get(name);
  return typeof value === "number" ? value : fallback;
}

/** The detector's settings from the flag values (durations in ms). */
export function quotaSettings(values: ReadonlyMap<string, FlagValue>): QuotaSettings {
  return {
    ...QUOTA_DEFAULTS,
    pollMs: number(values, "quota-poll", QUOTA_DEFAULTS.pollMs),
    windowMs: number(values, "quota-window", QUOTA_DEFAULTS.windowMs),
    warnRatio: number(values, "quota-warn", QUOTA_DEFAULTS.warnRatio),
  };
}

export class QuotaSource implements SourceRunner {
  readonly name = "quota";
  /** A poller is ready at once (source-runner.ts). */
  readonly synced = true;
  #lastError: string | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;
  #stopped = false;
  readonly #detector: QuotaDetector;

  constructor(
    private readonly context: Pick<SourceRunnerContext, "emit" | "logger" | "now">,
    private readonly provider: QuotaProvider,
    private readonly settings: QuotaSettings,
  ) {
    this.#detector = new QuotaDetector(settings);
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  async start(): Promise<void> {
    const run = () => void this.poll();
    run();
    this.#timer = setInterval(run, this.settings.pollMs);
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    if (this.#timer) clearInterval(this.#timer);
  }

  /** One poll: the provider's usages judged, or its failure logged once. */
  async poll(): Promise<void> {
    let usages: QuotaUsage[];
    try {
      usages = await this.provider.usages();
    } catch (caught) {
      const error = caught instanceof Error ? caught.message : String(caught);
      if (this.#lastError === undefined)
        this.context.logger.warn(
          `source quota/${this.provider.name}: poll failed: ${error} (retried every ${this.settings.pollMs} ms)`,
        );
      this.#lastError = error;
      return;
    }
    if (this.#stopped) return;
    if (this.#lastError !== undefined)
      this.context.logger.info(`source quota/${this.provider.name}: poll answers again`);
    this.#lastError = undefined;
    for (const signal of this.#detector.judge(usages, (this.context.now ?? Date.now)())) this.context.emit(signal);
  }
}

/** The SOURCE_RUNNERS factory: the ResourceQuota provider over the watcher's connection. */
export function quotaRunner(context: SourceRunnerContext): SourceRunner {
  return new QuotaSource(context, new ResourceQuotaProvider(context.connection), quotaSettings(context.values));
}
