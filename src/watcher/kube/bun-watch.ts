/**
 * The Watch and list halves that `ListWatch` of `@kubernetes/client-node` drives, over Bun's fetch
 * (D20: under Bun, client-node's own HTTP drops the kubeconfig's TLS settings, and its informer
 * asks for no bookmarks and takes no field selector, so ListWatch drives this Watch instead): a
 * watch is a streamed GET with `watch=true` and bookmarks, one JSON object per line; the stream's
 * end or failure is reported to `done` (a 410 as `statusCode`, so ListWatch re-lists).
 */
import { type KubeConnection, KubeHttpError, kubeFetch } from "./kube-connection.ts";

type WatchCallback = (phase: string, apiObject: unknown, watchObject?: unknown) => void;

export class BunWatch {
  constructor(
    private readonly connection: KubeConnection,
    private readonly timeoutSeconds = 300,
  ) {}

  async watch(
    path: string,
    queryParams: Record<string, string | number | boolean | undefined>,
    callback: WatchCallback,
    done: (error: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    const query = new URLSearchParams({
      watch: "true",
      allowWatchBookmarks: "true",
      timeoutSeconds: String(this.timeoutSeconds),
    });
    for (const [key, value] of Object.entries(queryParams))
      if (value !== undefined && value !== "") query.set(key, String(value));
    let finished = false;
    const finish = (error: unknown) => {
      if (finished) return;
      finished = true;
      done(error);
    };
    const response = await kubeFetch(this.connection, `${path}?${query}`, { signal: controller.signal }).catch(
      (error: unknown) => error as Error,
    );
    if (response instanceof Error) {
      queueMicrotask(() => finish(response));
      return controller;
    }
    if (!response.ok) {
      const text = await response.text().catch(() => "");
      queueMicrotask(() =>
        finish(new KubeHttpError(response.status, `watch ${path}: HTTP ${response.status} ${text.slice(0, 300)}`)),
      );
      return controller;
    }
    void this.pump(response, callback, controller).then(
      () => finish(null),
      (error: unknown) => finish(controller.signal.aborted ? null : error),
    );
    return controller;
  }

  private async pump(response: Response, callback: WatchCallback, controller: AbortController): Promise<void> {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of response.body ?? []) {
      buffered += decoder.decode(chunk as Uint8Array, { stream: true });
      let newline = buffered.indexOf("\n");
      while (newline !== -1) {
        const line = buffered.slice(0, newline).trim();
        buffered = buffered.slice(newline + 1);
        newline = buffered.indexOf("\n");
        if (line === "") continue;
        const parsed = JSON.parse(line) as { type?: string; object?: unknown };
        if (typeof parsed.type === "string") callback(parsed.type, parsed.object, parsed);
        if (controller.signal.aborted) return;
      }
    }
  }
}

/** The list function of a ListWatch: one GET of the collection (paged with limit/continue). */
export function listFunction(
  connection: KubeConnection,
  path: string,
  fieldSelector?: string,
): () => Promise<{ metadata: { resourceVersion?: string }; items: unknown[] }> {
  return async () => {
    const items: unknown[] = [];
    let resourceVersion: string | undefined;
    let continueToken: string | undefined;
    do {
      const query = new URLSearchParams({ limit: "500" });
      if (fieldSelector) query.set("fieldSelector", fieldSelector);
      if (continueToken) query.set("continue", continueToken);
      const response = await kubeFetch(connection, `${path}?${query}`);
      if (!response.ok)
        throw new KubeHttpError(
          response.status,
          `list ${path}: HTTP ${response.status} ${(await response.text()).slice(0, 300)}`,
        );
      const body = (await response.json()) as {
        metadata?: { resourceVersion?: string; continue?: string };
        items?: unknown[];
      };
      items.push(...(body.items ?? []));
      resourceVersion = body.metadata?.resourceVersion;
      continueToken = body.metadata?.continue || undefined;
    } while (continueToken);
    return { metadata: resourceVersion ? { resourceVersion } : {}, items };
  };
}
