/**
 * A fake agent daemon for the watcher benches (bench/watcher-judgement.ts): the two routes the
 * daemon sink calls (src/watcher/sinks/daemon-sink.ts), `POST /sessions` (201 with a sessionID)
 * and `POST /sessions/{sid}/inject` (`{"message": "<payload JSON>"}`, 202), on 127.0.0.1 port 0.
 * It notes when each inject reaches it (on the shared clock, before any delay) under the name
 * and kind of the payload it carries, so the parent can compute event-to-inject latency.
 *
 * Slow mode: the first session created (the bench offers one incident alone first, so it is that
 * incident's) and every inject into it, or naming its object, are answered after `slowMs`; every
 * other request at once. Everything it is told is counted; nothing is kept but the counts and the
 * first arrival per object name.
 */
import { nowMs } from "./lib.ts";

export interface FakeDaemonOptions {
  /** Delay for the first session's requests (0: a healthy daemon). */
  slowMs: number;
}

export interface FakeDaemon {
  url: string;
  /** First inject arrival (nowMs) per payload object name, for payloads of `kind` cluster-event. */
  firstInject: Map<string, number>;
  counts: { creates: number; injects: number; slowAnswers: number; byKind: Map<string, number> };
  /** The object the slow session was opened for (its first inject's name), once known. */
  slowObject: string | undefined;
  stop(): Promise<void>;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

function payloadOf(body: unknown): { kind: string; name: string } {
  try {
    const message = (body as { message?: unknown }).message;
    const payload = JSON.parse(typeof message === "string" ? message : "{}") as { kind?: unknown; name?: unknown };
    return { kind: String(payload.kind ?? "?"), name: String(payload.name ?? "") };
  } catch {
    return { kind: "?", name: "" };
  }
}

export function startFakeDaemon(options: FakeDaemonOptions): FakeDaemon {
  let serial = 0;
  let slowSession: string | undefined;
  const daemon: FakeDaemon = {
    url: "",
    firstInject: new Map(),
    counts: { creates: 0, injects: 0, slowAnswers: 0, byKind: new Map() },
    slowObject: undefined,
    stop: async () => {
      await server.stop(true);
    },
  };
  const slow = async () => {
    daemon.counts.slowAnswers++;
    await sleep(options.slowMs);
  };
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 60,
    fetch: async (request) => {
      const url = new URL(request.url);
      if (request.method !== "POST") return Response.json({ error: "POST only" }, { status: 405 });
      if (url.pathname === "/sessions") {
        const id = `fake-${++serial}`;
        daemon.counts.creates++;
        if (options.slowMs > 0 && serial === 1) {
          slowSession = id;
          await slow();
        }
        return Response.json({ sessionID: id }, { status: 201 });
      }
      const match = /^\/sessions\/([^/]+)\/inject$/.exec(url.pathname);
      if (!match) return Response.json({ error: `no route ${url.pathname}` }, { status: 404 });
      const at = nowMs();
      const { kind, name } = payloadOf(await request.json().catch(() => ({})));
      daemon.counts.injects++;
      daemon.counts.byKind.set(kind, (daemon.counts.byKind.get(kind) ?? 0) + 1);
      const session = decodeURIComponent(match[1] ?? "");
      if (session === slowSession && daemon.slowObject === undefined) daemon.slowObject = name;
      if (kind === "cluster-event" && !daemon.firstInject.has(name)) daemon.firstInject.set(name, at);
      if (slowSession !== undefined && (session === slowSession || name === daemon.slowObject)) await slow();
      return Response.json({ ok: true }, { status: 202 });
    },
  });
  daemon.url = `http://127.0.0.1:${server.port}`;
  return daemon;
}
