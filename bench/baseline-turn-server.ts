/**
 * Baseline for bench/turns.ts: raw Bun.serve with the least work a durable "turn" can do. POST
 * /sessions creates a session (201 {sessionID, url}); GET /sessions/<id>/events is an SSE stream;
 * POST /sessions/<id>/inject {"message"} does ONE autocommit sqlite insert (WAL,
 * synchronous=NORMAL, prepared statement), answers 200 {prompt_id}, then publishes one
 * `turn-complete` frame on that session's stream. No worker, no model, no framework.
 *
 * Run: bun bench/baseline-turn-server.ts --db=<path>; logs `listening on http://127.0.0.1:<port>`.
 */
import { Database } from "bun:sqlite";

const dbFlag = process.argv.find((arg) => arg.startsWith("--db="));
if (!dbFlag) {
  process.stderr.write("usage: bun bench/baseline-turn-server.ts --db=<path>\n");
  process.exit(2);
}
const db = new Database(dbFlag.slice("--db=".length), { create: true });
db.exec("PRAGMA journal_mode = WAL");
db.exec("PRAGMA synchronous = NORMAL");
db.exec(
  "CREATE TABLE IF NOT EXISTS events (session_id TEXT NOT NULL, seq INTEGER NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (session_id, seq)) WITHOUT ROWID",
);
const insert = db.prepare("INSERT INTO events (session_id, seq, payload) VALUES (?, ?, ?)");

interface Session {
  seq: number;
  subscribers: Set<ReadableStreamDefaultController<Uint8Array>>;
}

const sessions = new Map<string, Session>();
const encoder = new TextEncoder();
const HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};
let created = 0;

function publish(session: Session, name: string, payload: unknown): void {
  const bytes = encoder.encode(`event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
  for (const controller of session.subscribers) {
    try {
      controller.enqueue(bytes);
    } catch {
      session.subscribers.delete(controller);
    }
  }
}

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "POST" && url.pathname === "/sessions") {
      const body = (await request.json().catch(() => ({}))) as { sessionID?: string };
      const id = body.sessionID ?? `s${++created}`;
      if (!sessions.has(id)) sessions.set(id, { seq: 0, subscribers: new Set() });
      return Response.json({ sessionID: id, url: `http://${url.host}/sessions/${id}` }, { status: 201 });
    }
    const match = /^\/sessions\/([^/]+)\/(events|inject)$/.exec(url.pathname);
    const session = match?.[1] ? sessions.get(match[1]) : undefined;
    if (!match || !session) return new Response("not found", { status: 404 });
    if (request.method === "GET" && match[2] === "events") {
      let self: ReadableStreamDefaultController<Uint8Array> | undefined;
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          self = controller;
          controller.enqueue(encoder.encode(`event: status-update\ndata: {"turn_state":"idle"}\n\n`));
          session.subscribers.add(controller);
        },
        cancel() {
          if (self) session.subscribers.delete(self);
        },
      });
      request.signal.addEventListener("abort", () => self && session.subscribers.delete(self), { once: true });
      return new Response(stream, { headers: HEADERS });
    }
    if (request.method === "POST" && match[2] === "inject") {
      const started = performance.now();
      const { message } = (await request.json()) as { message: string };
      const promptId = crypto.randomUUID();
      insert.run(match[1] ?? "", ++session.seq, JSON.stringify({ prompt_id: promptId, text: message }));
      setImmediate(() =>
        publish(session, "turn-complete", {
          prompt_id: promptId,
          model: "baseline",
          tokens_in: 0,
          tokens_out: 0,
          cost_usd: 0,
          latency_ms: Math.round(performance.now() - started),
        }),
      );
      return Response.json({ injected: true, session: match[1], woke: true, prompt_id: promptId });
    }
    return new Response("method not allowed", { status: 405 });
  },
});

process.stderr.write(`baseline-turn-server listening on http://127.0.0.1:${server.port}\n`);
process.on("SIGTERM", () => {
  void server.stop(true);
  db.close();
  process.exit(0);
});
