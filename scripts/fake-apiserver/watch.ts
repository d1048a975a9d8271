/**
 * Watch streams: chunked JSON lines (`{"type":…,"object":…}`), one per change, in resourceVersion
 * order. A stream starts with a lone newline because Bun.serve holds the response headers until the
 * first body byte and clients (client-node's informer, kubectl) wait for headers (D90). It replays
 * the history after the requested version (or synthesizes ADDED for the current state), then
 * follows the store live, turning objects that leave or enter the selector into DELETED or ADDED
 * the way the watch cache does. Bookmarks, timeoutSeconds and the fault hooks (drop every stream,
 * send an ERROR Status mid-stream) live here. The hub owns every open stream.
 */
import type { ResourceInfo } from "./resources.ts";
import type { KubeObject, Matcher } from "./selectors.ts";
import type { KubeStatus } from "./status.ts";
import type { Change, ObjectStore } from "./store.ts";

export type WatchEventType = "ADDED" | "MODIFIED" | "DELETED" | "BOOKMARK" | "ERROR";

export interface WatchSpec {
  info: ResourceInfo;
  /** Namespace scope, undefined for all namespaces or cluster-scoped resources. */
  namespace: string | undefined;
  match: Matcher;
  /** Replay changes after this version; undefined means "send the current state as ADDED first". */
  fromResourceVersion: number | undefined;
  allowBookmarks: boolean;
  /** With sendInitialEvents: the initial-events-end bookmark after the synthetic ADDED events. */
  sendInitialEventsEnd: boolean;
  timeoutSeconds: number;
  /** The stored (core) object → the wire object (kind, apiVersion, events.k8s.io conversion). */
  encode: (object: KubeObject) => KubeObject;
  /** Called once when the stream ends for any reason. */
  onClose?: () => void;
}

export interface WatchHubOptions {
  /** Interval of periodic bookmarks for watches that allow them. Default 60000 ms (about the apiserver's). */
  bookmarkIntervalMs?: number;
}

const encoder = new TextEncoder();

interface OpenWatch {
  spec: WatchSpec;
  send(type: WatchEventType, object: unknown): void;
  /** End the stream: `close` writes the final chunk (clean EOF), `reset` aborts the connection. */
  end(mode: "close" | "reset"): void;
}

function namespaceOf(object: KubeObject): string {
  return String(object.metadata?.namespace ?? "");
}

export class WatchHub {
  private readonly open = new Set<OpenWatch>();
  private readonly bookmarkIntervalMs: number;

  constructor(
    private readonly store: ObjectStore,
    options: WatchHubOptions = {},
  ) {
    this.bookmarkIntervalMs = options.bookmarkIntervalMs ?? 60_000;
  }

  get openCount(): number {
    return this.open.size;
  }

  /** Open a watch stream as a Response. The replay and the live subscription start in one tick, so no change falls between them. */
  stream(spec: WatchSpec, signal: AbortSignal): Response {
    let controller!: ReadableStreamDefaultController<Uint8Array>;
    const body = new ReadableStream<Uint8Array>({
      start: (streamController) => {
        controller = streamController;
      },
      cancel: () => watch.end("close"),
    });
    const timers: ReturnType<typeof setTimeout>[] = [];
    let unsubscribe = (): void => undefined;
    let ended = false;
    const watch: OpenWatch = {
      spec,
      send: (type, object) => {
        if (!ended) controller.enqueue(encoder.encode(`${JSON.stringify({ type, object })}\n`));
      },
      end: (mode) => {
        if (ended) return;
        ended = true;
        for (const timer of timers) clearTimeout(timer);
        unsubscribe();
        this.open.delete(watch);
        try {
          // An undefined reason aborts the connection without Bun logging an error (the client sees ECONNRESET).
          if (mode === "reset") controller.error(undefined);
          else controller.close();
        } catch {
          // The client already went away.
        }
        spec.onClose?.();
      },
    };
    controller.enqueue(encoder.encode("\n"));
    this.replay(watch);
    unsubscribe = this.store.subscribe((change) => this.deliver(watch, change));
    this.open.add(watch);
    timers.push(setTimeout(() => watch.end("close"), spec.timeoutSeconds * 1000));
    if (spec.allowBookmarks) {
      const tick = (): void => {
        this.bookmark(watch);
        timers.push(setTimeout(tick, this.bookmarkIntervalMs));
      };
      timers.push(setTimeout(tick, this.bookmarkIntervalMs));
    }
    signal.addEventListener("abort", () => watch.end("close"));
    return new Response(body, {
      headers: { "content-type": "application/json", "cache-control": "no-cache, private" },
    });
  }

  /** Send a BOOKMARK now to every open watch that allows bookmarks. */
  bookmarkAll(): number {
    let sent = 0;
    for (const watch of this.open) if (watch.spec.allowBookmarks) sent += this.bookmark(watch) ? 1 : 0;
    return sent;
  }

  /** Send an ERROR event carrying `status` to every open watch, then end each stream (as the apiserver does). */
  errorAll(status: KubeStatus): number {
    const watches = [...this.open];
    for (const watch of watches) {
      watch.send("ERROR", status);
      watch.end("close");
    }
    return watches.length;
  }

  /** End every open watch: `close` is a clean server-side close, `reset` an aborted connection. */
  dropAll(mode: "close" | "reset" = "close"): number {
    const watches = [...this.open];
    for (const watch of watches) watch.end(mode);
    return watches.length;
  }

  private bookmark(watch: OpenWatch, annotations?: Record<string, string>): boolean {
    const info = watch.spec.info;
    const metadata: Record<string, unknown> = {
      resourceVersion: String(this.store.resourceVersion),
      ...(annotations ? { annotations } : {}),
    };
    const apiVersion = info.group === "" ? info.version : `${info.group}/${info.version}`;
    watch.send("BOOKMARK", { kind: info.kind, apiVersion, metadata });
    return true;
  }

  private inScope(watch: OpenWatch, object: KubeObject): boolean {
    const namespace = watch.spec.namespace;
    return (namespace === undefined || namespaceOf(object) === namespace) && watch.spec.match(object);
  }

  private replay(watch: OpenWatch): void {
    const spec = watch.spec;
    if (spec.fromResourceVersion === undefined) {
      for (const object of this.store.list(spec.info.storage, spec.namespace)) {
        if (spec.match(object)) watch.send("ADDED", spec.encode(object));
      }
      if (spec.sendInitialEventsEnd) this.bookmark(watch, { "k8s.io/initial-events-end": "true" });
      return;
    }
    for (const change of this.store.changesSince(spec.info.storage, spec.fromResourceVersion) ?? [])
      this.deliver(watch, change);
  }

  private deliver(watch: OpenWatch, change: Change): void {
    if (change.storage !== watch.spec.info.storage) return;
    const before = change.previous !== undefined && this.inScope(watch, change.previous);
    const now = change.type !== "DELETED" && this.inScope(watch, change.object);
    let type: WatchEventType | undefined;
    if (change.type === "DELETED") type = before ? "DELETED" : undefined;
    else if (now) type = before ? "MODIFIED" : "ADDED";
    else if (before) type = "DELETED";
    if (type) watch.send(type, watch.spec.encode(change.object));
  }
}
