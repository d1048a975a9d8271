/**
 * DetectorSource: runs one source of the contract (core/source-spec.ts, D375): a restarting
 * list+watch per watch, a GET per poll every `everyMs`, the detector's tick every `tickMs`, and
 * every signal the detector answers emitted. Watches and polls whose optional grant was denied at
 * startup are left out (the plan said so, once). `synced` once every watch has listed once; a poll
 * that fails is told to the detector with its error, logged once until it answers again, and tried
 * again at its next turn. A paged poll follows `metadata.continue` and answers once with every
 * page's items (D384). After each, the detector's open conditions are diffed and every change
 * reported (`opened`, `cleared`) for recovery (D437).
 */
import type { Logger } from "../../telemetry/logger.ts";
import type { Detector, KubeObject, SeriesFamily, SourcePoll, SourceSpec } from "../core/source-spec.ts";
import { type ClearanceReport, OpenConditionDiff } from "../core/open-conditions.ts";
import type { Signal } from "../core/signal.ts";
import { type KubeConnection, kubeFetch } from "../kube/kube-connection.ts";
import { RestartingInformer } from "./restarting-informer.ts";
import type { SourceRunner } from "./source-runner.ts";

export interface DetectorSourceOptions<S> {
  spec: SourceSpec<S>;
  settings: S;
  connection: KubeConnection;
  emit(signal: Signal): void;
  logger: Logger;
  /** A watch restarted after a failure (counted). */
  onRestart(): void;
  /** Changes of the detector's open conditions, diffed after every observe, poll and tick (D437). */
  clearance?(report: ClearanceReport): void;
  /** Names of the watches and polls left out (their optional grant was denied). */
  without?: ReadonlySet<string>;
  now?: () => number;
}

export class DetectorSource<S = unknown> implements SourceRunner {
  readonly name: string;
  readonly #detector: Detector;
  readonly #informers: RestartingInformer[] = [];
  readonly #timers: Array<ReturnType<typeof setInterval>> = [];
  readonly #options: DetectorSourceOptions<S>;
  readonly #now: () => number;
  #stopped = false;
  readonly #failingPolls = new Set<string>();
  readonly #openDiff = new OpenConditionDiff();
  #diffQueued = false;
  #deleted = new Set<string>();

  constructor(options: DetectorSourceOptions<S>) {
    this.#options = options;
    this.name = options.spec.name;
    this.#now = options.now ?? Date.now;
    this.#detector = options.spec.detector(options.settings);
    for (const watch of options.spec.watches) {
      if (options.without?.has(watch.name)) continue;
      const observe = (change: "add" | "update" | "delete", object: Record<string, unknown>, initial: boolean) => {
        if (change === "delete") this.#noteDeleted(object);
        this.#emit(this.#detector.observe(watch.name, change, object as KubeObject, this.#now(), initial));
      };
      this.#informers.push(
        new RestartingInformer(
          `${this.name}/${watch.name}`,
          options.connection,
          watch.path,
          {
            add: (object, initial) => observe("add", object, initial),
            update: (object) => observe("update", object, false),
            remove: (object) => observe("delete", object, false),
          },
          options.logger,
          options.onRestart,
          watch.fieldSelector,
        ),
      );
    }
  }

  /** Every watch has listed once (a poll-only source is ready at once). */
  get synced(): boolean {
    return this.#informers.every((informer) => informer.synced);
  }

  /** The latest failure of a watch, until it recovers. */
  get lastError(): string | undefined {
    return this.#informers.find((informer) => informer.lastError !== undefined)?.lastError;
  }

  /** The detector's gauge series now (none when it reports none; D409). */
  series(): SeriesFamily[] {
    return this.#detector.series?.() ?? [];
  }

  async start(): Promise<void> {
    await Promise.all(this.#informers.map((informer) => informer.start()));
    const { spec } = this.#options;
    for (const poll of spec.polls ?? []) {
      if (this.#options.without?.has(poll.name)) continue;
      const run = () => void this.#poll(poll);
      run();
      this.#timers.push(setInterval(run, poll.everyMs));
    }
    const tick = this.#detector.tick?.bind(this.#detector);
    if (tick && spec.tickMs) this.#timers.push(setInterval(() => this.#emit(tick(this.#now())), spec.tickMs));
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    for (const timer of this.#timers) clearInterval(timer);
    await Promise.all(this.#informers.map((informer) => informer.stop()));
  }

  async #poll(poll: SourcePoll): Promise<void> {
    const polled = this.#detector.polled?.bind(this.#detector);
    if (!polled) return;
    let body: unknown;
    let error: string | undefined;
    try {
      body = poll.pageSize ? await this.#pages(poll.path, poll.pageSize) : await this.#get(poll.path);
    } catch (caught) {
      error = caught instanceof Error ? caught.message : String(caught);
    }
    if (this.#stopped) return;
    const key = `${this.name}/${poll.name}`;
    if (error !== undefined && !this.#failingPolls.has(key)) {
      this.#failingPolls.add(key);
      this.#options.logger.warn(`source ${key}: poll failed: ${error} (retried every ${poll.everyMs} ms)`);
    } else if (error === undefined && this.#failingPolls.delete(key))
      this.#options.logger.info(`source ${key}: poll answers again`);
    this.#emit(polled(poll.name, body, this.#now(), error));
  }

  async #get(path: string): Promise<unknown> {
    const response = await kubeFetch(this.#options.connection, path);
    if (!response.ok) throw new Error(`GET ${path}: HTTP ${response.status}`);
    return response.json();
  }

  /** Every page of a list, one `{…first page, items}` (a 410 mid-way fails the poll: the next turn starts over). */
  async #pages(path: string, pageSize: number): Promise<unknown> {
    const items: unknown[] = [];
    let first: Record<string, unknown> | undefined;
    let next = "";
    do {
      const query = `limit=${pageSize}${next ? `&continue=${encodeURIComponent(next)}` : ""}`;
      const page = (await this.#get(`${path}${path.includes("?") ? "&" : "?"}${query}`)) as {
        items?: unknown[];
        metadata?: { continue?: string };
      };
      first ??= page;
      items.push(...(page.items ?? []));
      next = page.metadata?.continue ?? "";
    } while (next !== "" && !this.#stopped);
    return { ...first, items };
  }

  /** Signals its detector answered to an input this host did not run (a runner's own poll), then its clearance diff. */
  deliver(signals: readonly Signal[]): void {
    this.#emit(signals);
  }

  #emit(signals: readonly Signal[]): void {
    if (this.#stopped) return;
    for (const signal of signals) this.#options.emit(signal);
    if (!this.#detector.open || !this.#options.clearance || this.#diffQueued) return;
    // One diff per turn of the event loop, so a list of thousands is diffed once, not per object.
    this.#diffQueued = true;
    queueMicrotask(() => this.#diffOpen());
  }

  #diffOpen(): void {
    this.#diffQueued = false;
    const open = this.#detector.open?.bind(this.#detector);
    const clearance = this.#options.clearance;
    const deleted = this.#deleted;
    this.#deleted = new Set();
    if (this.#stopped || !open || !clearance) return;
    for (const report of this.#openDiff.diff(open(), this.#now(), deleted)) clearance(report);
  }

  /** A deleted object's uid, until the next diff: a condition it clears was cleared by `object_deleted`. */
  #noteDeleted(object: Record<string, unknown>): void {
    if (!this.#detector.open || !this.#options.clearance) return;
    const uid = (object.metadata as { uid?: unknown } | undefined)?.uid;
    if (typeof uid === "string" && uid !== "") this.#deleted.add(uid);
  }
}
