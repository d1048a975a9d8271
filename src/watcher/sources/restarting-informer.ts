/**
 * A client-node ListWatch that does not give up: ListWatch stops on any error other than 410
 * (connection refused, reset, 5xx); this restarts it with exponential backoff (1 s doubling to
 * 30 s, reset once a start succeeds) until stopped. `synced` turns true after the first list that
 * succeeds; until then nothing counts as history replayed, so a failed first list replays nothing.
 * `lastError` holds the latest failure until a start succeeds (readiness names a failing watch).
 */
// The ListWatch module alone: the package index loads every generated API client (D140).
import { ListWatch } from "@kubernetes/client-node/dist/cache.js";
import type { Watch } from "@kubernetes/client-node/dist/watch.js";
import type { Logger } from "../../telemetry/logger.ts";
import { BunWatch, listFunction } from "../kube/bun-watch.ts";
import type { KubeConnection } from "../kube/kube-connection.ts";

export interface InformerHandlers {
  add?: (object: Record<string, unknown>, initial: boolean) => void;
  update?: (object: Record<string, unknown>) => void;
  remove?: (object: Record<string, unknown>) => void;
}

const BACKOFF_MIN_MS = 1000;
const BACKOFF_MAX_MS = 30_000;

export class RestartingInformer {
  private readonly listWatch: ListWatch<never>;
  private stopped = false;
  private backoffMs = BACKOFF_MIN_MS;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private initial = true;
  private failedWhileStarting = false;
  synced = false;
  /** The latest failure, cleared once a start succeeds. */
  lastError: string | undefined;

  constructor(
    readonly name: string,
    connection: KubeConnection,
    path: string,
    handlers: InformerHandlers,
    private readonly logger: Logger,
    private readonly onRestart: () => void,
    fieldSelector?: string,
  ) {
    const watch = new BunWatch(connection) as unknown as Watch;
    this.listWatch = new ListWatch<never>(
      path,
      watch,
      listFunction(connection, path, fieldSelector) as never,
      false,
      undefined,
      fieldSelector,
    );
    this.listWatch.on("add", (object: never) => handlers.add?.(object as Record<string, unknown>, this.initial));
    this.listWatch.on("update", (object: never) => handlers.update?.(object as Record<string, unknown>));
    this.listWatch.on("delete", (object: never) => handlers.remove?.(object as Record<string, unknown>));
    this.listWatch.on("error", (error: unknown) => this.scheduleRestart(error));
  }

  async start(): Promise<void> {
    // ListWatch.start() resolves even when its list fails (it reports the error to the error
    // handlers instead), so success is "no error reported while starting".
    this.failedWhileStarting = false;
    try {
      await this.listWatch.start();
      if (this.failedWhileStarting) return;
      if (!this.synced) logger(this.logger, `${this.name}: synced`);
      this.synced = true;
      this.lastError = undefined;
      this.initial = false;
      this.backoffMs = BACKOFF_MIN_MS;
    } catch (error) {
      this.scheduleRestart(error);
    }
  }

  private scheduleRestart(error: unknown): void {
    this.failedWhileStarting = true;
    this.lastError = error instanceof Error ? error.message : String(error);
    if (this.stopped || this.timer) return;
    const delay = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, BACKOFF_MAX_MS);
    this.logger.warn(`${this.name}: watch failed (${this.lastError}); restarting in ${delay}ms`);
    this.onRestart();
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.start();
    }, delay);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.listWatch.stop();
  }
}

function logger(target: Logger, message: string): void {
  target.info(message);
}
