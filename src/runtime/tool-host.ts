/**
 * ToolHost: the main thread's side of the tool-host worker (ARCHITECTURE "Tool host worker").
 * Approved calls go to the worker, which runs them and owns their child processes, so a slow or
 * hung tool never blocks the HTTP loop. A call's abort signal (turn cancel) is forwarded as a
 * cancel; a worker that dies fails its calls and is started again on the next call. Also the
 * read model of what tools exist: the builtin specs the model is offered and GET /tools rows.
 *
 * Seam for MCP: a tool server's tools join `list()` / `specs()` (source `mcp`, `server` set) and
 * their classes join `classOf()`; the worker already runs anything it knows by name.
 */
import type { ToolCall } from "../core/events.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ToolClass } from "../core/permission-policy.ts";
import { BUILTIN_TOOLS, builtinClass, builtinSpecs } from "../tools/builtin-tools.ts";
import type { ToolRunResult } from "./channel.ts";
import { type FromToolHost, TOOL_HOST_VERSION, type ToToolHost, type ToolHostSettings, isFromToolHost } from "./tool-host-channel.ts";
import { workerUrl } from "./worker-urls.ts";

/** Runs approved calls (the permission gate's executor). */
export interface ToolRunner {
  /** A tool by this name exists and is enabled. */
  has(name: string): boolean;
  /** The tool's class for the permission gate, when the tool declares one. */
  classOf(name: string): ToolClass | undefined;
  run(call: ToolCall, signal: AbortSignal): Promise<ToolRunResult>;
}

/** GET /tools row. */
export interface ToolInfo {
  name: string;
  description: string;
  source: "builtin" | "mcp" | "skill" | "subagent" | "other";
  server?: string;
}

/** The tools a session has: what the model is offered and what GET /tools lists. */
export interface ToolCatalog {
  specs(): ToolSpec[];
  list(): ToolInfo[];
}

export type ToolHostFactory = () => Worker;

export const defaultToolHostFactory: ToolHostFactory = () => new Worker(workerUrl("tool-host"));

/** How long shutdown waits for the worker to kill its children before terminating it. */
const CLOSE_GRACE_MS = 3000;

interface Pending {
  resolve(result: ToolRunResult): void;
}

export class ToolHost implements ToolRunner, ToolCatalog {
  readonly #settings: ToolHostSettings;
  readonly #disabled: ReadonlySet<string>;
  readonly #factory: ToolHostFactory;
  readonly #log: (message: string) => void;
  readonly #pending = new Map<number, Pending>();
  #worker: Worker | undefined;
  #nextId = 1;
  #closed = false;
  #onClosed: (() => void) | undefined;

  constructor(settings: ToolHostSettings, options: { factory?: ToolHostFactory; log?: (message: string) => void } = {}) {
    this.#settings = settings;
    this.#disabled = new Set(settings.disabled);
    this.#factory = options.factory ?? defaultToolHostFactory;
    this.#log = options.log ?? (() => {});
  }

  get root(): string {
    return this.#settings.root;
  }

  has(name: string): boolean {
    return !this.#disabled.has(name) && BUILTIN_TOOLS.some((tool) => tool.name === name);
  }

  classOf(name: string): ToolClass | undefined {
    return builtinClass(name);
  }

  specs(): ToolSpec[] {
    return builtinSpecs(this.#disabled);
  }

  list(): ToolInfo[] {
    return this.specs().map((spec) => ({ name: spec.name, description: spec.description, source: "builtin" as const }));
  }

  run(call: ToolCall, signal: AbortSignal): Promise<ToolRunResult> {
    if (this.#closed) return Promise.resolve({ output: { error: "not run: the daemon is shutting down" }, isError: true });
    const worker = this.#ensureWorker();
    const id = this.#nextId++;
    return new Promise<ToolRunResult>((resolve) => {
      const onAbort = () => this.#send(worker, { type: "cancel", id });
      this.#pending.set(id, {
        resolve: (result) => {
          signal.removeEventListener("abort", onAbort);
          resolve(result);
        },
      });
      this.#send(worker, { type: "run", id, call });
      if (signal.aborted) onAbort();
      else signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** Shutdown step "tool-server child processes": the worker kills them, then it is terminated. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    const closed = new Promise<void>((resolve) => (this.#onClosed = resolve));
    this.#send(worker, { type: "shutdown" });
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, CLOSE_GRACE_MS))]);
    this.#failAll("not finished: the daemon shut down");
    worker.terminate();
    this.#worker = undefined;
  }

  #ensureWorker(): Worker {
    if (this.#worker) return this.#worker;
    const worker = this.#factory();
    worker.onmessage = (event: MessageEvent) => this.#onMessage(worker, event.data);
    worker.onerror = (event: ErrorEvent) => this.#lost(worker, `tool host crashed: ${event.message}`);
    this.#send(worker, { type: "hello", version: TOOL_HOST_VERSION, settings: this.#settings });
    this.#worker = worker;
    return worker;
  }

  #send(worker: Worker, message: ToToolHost): void {
    worker.postMessage(message);
  }

  #onMessage(worker: Worker, message: unknown): void {
    if (!isFromToolHost(message)) return;
    const data: FromToolHost = message;
    switch (data.type) {
      case "ready":
        if (data.version !== TOOL_HOST_VERSION) this.#lost(worker, `tool host speaks v${data.version}, the daemon v${TOOL_HOST_VERSION}`);
        return;
      case "result": {
        const pending = this.#pending.get(data.id);
        this.#pending.delete(data.id);
        pending?.resolve(data.result);
        return;
      }
      case "closed":
        this.#onClosed?.();
        return;
    }
  }

  /** The worker is gone: its calls fail (the model reads why) and the next call starts a new one. */
  #lost(worker: Worker, reason: string): void {
    if (this.#worker !== worker) return;
    this.#log(reason);
    this.#worker = undefined;
    worker.terminate();
    this.#failAll(`not finished: ${reason}`);
  }

  #failAll(reason: string): void {
    for (const [id, pending] of this.#pending) {
      this.#pending.delete(id);
      pending.resolve({ output: { error: reason }, isError: true });
    }
  }
}
