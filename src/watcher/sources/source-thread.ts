/**
 * SourceThread: one source run in its own worker (D413), seen from the main thread as a
 * SourceRunner. Signals, watch restarts and log lines come back over the source channel; its
 * readiness is the worker's last `state`. A worker that crashes, exits or stops answering pings
 * is replaced with backoff (500 ms doubling to 30 s, back to 500 ms once a worker has run a
 * minute), counted in `watcher_source_restarts_total{source}` and logged loudly; the other
 * sources never notice. Until its replacement has listed again it is not synced, and /readyz
 * names it `restarting`.
 */
import { LivenessWatch } from "../../rpc/liveness-watch.ts";
import { RpcConnection } from "../../rpc/rpc-connection.ts";
import type { RpcError } from "../../rpc/rpc-error.ts";
import { workerTransport } from "../../rpc/worker-port-transport.ts";
import { workerUrl } from "../../rpc/worker-urls.ts";
import type { KubeConnection } from "../kube/kube-connection.ts";
import type { SeriesFamily } from "../core/source-spec.ts";
import { SourceRefusal, type SourceRunner, type SourceRunnerContext } from "./source-runner.ts";
import {
  type ConnectionData,
  SOURCE_CHANNEL,
  type SourceMainSide,
  type SourceWorkerInit,
  type SourceWorkerSide,
} from "./source-channel.ts";

const BACKOFF_MIN_MS = 500;
const BACKOFF_MAX_MS = 30_000;
/** A worker that ran this long resets the backoff. */
const STABLE_MS = 60_000;
/** A worker whose event loop stays this long without answering a ping is replaced. */
const UNRESPONSIVE_MS = 30_000;
const STOP_GRACE_MS = 5000;

type SourceConnection = RpcConnection<SourceMainSide, SourceWorkerSide, SourceWorkerInit>;

export type SourceThreadState = "starting" | "running" | "restarting" | "stopped";

export interface SourceThreadOptions {
  /** Counted once per replaced worker. */
  onCrash?: (source: string) => void;
  /** Tests: another worker entrypoint. */
  workerFactory?: () => Worker;
  unresponsiveMs?: number;
}

/** The connection as data for the worker; a connection without a token file sends its token as it is now. */
export function connectionData(connection: KubeConnection): ConnectionData {
  const token = connection.tokenFile ? undefined : connection.token();
  return {
    server: connection.server,
    tls: connection.tls,
    ...(connection.tokenFile ? { tokenFile: connection.tokenFile } : {}),
    ...(token ? { token } : {}),
  };
}

export class SourceThread implements SourceRunner {
  readonly name: string;
  readonly #context: SourceRunnerContext;
  readonly #options: SourceThreadOptions;
  readonly #liveness: LivenessWatch;
  #connection: SourceConnection | undefined;
  #synced = false;
  #series: SeriesFamily[] = [];
  #lastError: string | undefined;
  #state: SourceThreadState = "starting";
  #restarts = 0;
  #backoffMs = BACKOFF_MIN_MS;
  #startedAt = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #started: (() => void) | undefined;
  #refused: ((error: SourceRefusal) => void) | undefined;

  constructor(name: string, context: SourceRunnerContext, options: SourceThreadOptions = {}) {
    this.name = name;
    this.#context = context;
    this.#options = options;
    this.#liveness = new LivenessWatch(options.unresponsiveMs ?? UNRESPONSIVE_MS);
  }

  get synced(): boolean {
    return this.#synced;
  }

  /** The gauge series the worker last reported (none while it is replaced). */
  series(): SeriesFamily[] {
    return this.#series;
  }

  get lastError(): string | undefined {
    return this.#lastError;
  }

  get state(): SourceThreadState {
    return this.#state;
  }

  /** Workers replaced after a crash since start. */
  get restarts(): number {
    return this.#restarts;
  }

  /**
   * Resolves once the first worker's source started (its watches listed once) or the worker was
   * lost; rejects with a SourceRefusal when the source refused its flags or environment.
   */
  start(): Promise<void> {
    const started = new Promise<void>((resolve, reject) => {
      this.#started = resolve;
      this.#refused = reject;
    });
    this.#spawn();
    return started;
  }

  /** Ends the worker as a crash would (tests: a source killed mid-run). */
  kill(): void {
    this.#connection?.close("killed");
    if (this.#connection) this.#lost(this.#connection, "killed");
  }

  async stop(): Promise<void> {
    this.#state = "stopped";
    this.#settleStart();
    clearTimeout(this.#timer);
    this.#liveness.stop();
    const connection = this.#connection;
    this.#connection = undefined;
    if (!connection) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      connection.request("stop", {}).catch(() => {}),
      new Promise((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS))),
    ]);
    clearTimeout(timer);
    connection.close("stopped");
  }

  #spawn(): void {
    const context = this.#context;
    const worker = this.#options.workerFactory?.() ?? new Worker(workerUrl("watcher-source"));
    this.#startedAt = performance.now();
    const connection: SourceConnection = RpcConnection.open(
      SOURCE_CHANNEL,
      workerTransport(worker),
      {
        name: this.name,
        values: [...context.values],
        env: { ...context.env },
        connection: connectionData(context.connection),
        without: [...context.without],
      },
      {
        onFault: (error: RpcError) => this.#lost(connection, error.message),
        onReady: () => {
          if (this.#state !== "stopped") this.#state = "running";
        },
      },
    )
      .onNotification("signal", ({ signal }) => context.emit(signal))
      .onNotification("restart", () => context.onRestart())
      .onNotification("clearance", (report) => context.clearance?.(report))
      .onNotification("log", ({ level, message }) => context.logger[level](message))
      .onNotification("series", ({ families }) => {
        this.#series = families;
      })
      .onNotification("started", () => this.#settleStart())
      .onNotification("refused", ({ message }) => {
        this.#refused?.(new SourceRefusal(message));
        this.#started = undefined;
        this.#refused = undefined;
        void this.stop();
      })
      .onNotification("state", (state) => {
        this.#synced = state.synced;
        this.#lastError = state.lastError;
      });
    this.#connection = connection;
    this.#liveness.watch(connection, {
      busy: () => true,
      onUnresponsive: (silentMs) => {
        connection.close("unresponsive");
        this.#lost(connection, `its event loop did not answer for ${Math.round(silentMs)} ms`);
      },
    });
  }

  #settleStart(): void {
    this.#started?.();
    this.#started = undefined;
    this.#refused = undefined;
  }

  /** The worker is gone: count it, say so, and start another after the backoff. */
  #lost(connection: SourceConnection, why: string): void {
    if (this.#connection !== connection || this.#state === "stopped") return;
    this.#connection = undefined;
    this.#liveness.unwatch(connection);
    connection.close(why);
    if (performance.now() - this.#startedAt >= STABLE_MS) this.#backoffMs = BACKOFF_MIN_MS;
    const delay = this.#backoffMs;
    this.#backoffMs = Math.min(this.#backoffMs * 2, BACKOFF_MAX_MS);
    this.#settleStart();
    this.#restarts += 1;
    this.#synced = false;
    this.#series = [];
    this.#lastError = `worker lost: ${why}`;
    this.#state = "restarting";
    this.#options.onCrash?.(this.name);
    this.#context.logger.error(
      `source ${this.name}: worker lost (${why}); restarting in ${delay} ms (restart ${this.#restarts}); the other sources go on`,
    );
    this.#timer = setTimeout(() => {
      if (this.#state === "restarting") this.#spawn();
    }, delay);
  }
}
