/**
 * The A2A benchmark's baseline (bench/a2a.ts): the SDK's own server, `@a2a-js/sdk` 0.3.14's
 * DefaultRequestHandler with an InMemoryTaskStore and an echo executor (submitted task, a working
 * status update with the echo, the result artifact, final completed), behind its
 * JsonRpcTransportHandler under Bun.serve. Nothing is durable. Prints `listening on http://...`.
 *
 * `--durable=<sqlite file>` makes it the floor of what spar must do per task and nothing more: the
 * same handler and executor, but the task's session row and prompt row are committed (one group
 * commit per tick, WAL, synchronous=NORMAL, as spar's store) before the turn runs, the turn is one
 * round trip to a worker thread (bench/baseline-a2a-turn-worker.ts), and the answer row is
 * committed before the final events publish. What spar adds beyond it (the session actor, the
 * event log's frames, ACLs, the model stream) is not in it: its rate bounds what a durable,
 * worker-run task can reach on this machine. `--floor-parts=commits` (or `worker`) keeps only one
 * of the two, to price each.
 */
import { Database } from "bun:sqlite";
import type { AgentCard, Message } from "a2a03";
import {
  type AgentExecutor,
  DefaultRequestHandler,
  type ExecutionEventBus,
  InMemoryTaskStore,
  JsonRpcTransportHandler,
  type RequestContext,
} from "a2a03/server";

const card: AgentCard = {
  protocolVersion: "0.3.0",
  name: "baseline",
  description: "echo",
  url: "http://127.0.0.1/a2a",
  preferredTransport: "JSONRPC",
  version: "1",
  capabilities: { streaming: true },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "echo", description: "echo", tags: [] }],
};

function textOf(message: Message): string {
  return message.parts.map((part) => (part.kind === "text" ? part.text : "")).join("\n");
}

/** Rows queued this tick, committed in one transaction; each waiter resolves once its row is durable. */
class GroupCommit {
  readonly #insert;
  readonly #commit;
  #queued: Array<{ row: [string, string, string]; done: () => void }> = [];

  constructor(path: string) {
    const db = new Database(path, { create: true });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = NORMAL");
    db.exec("CREATE TABLE IF NOT EXISTS rows (seq INTEGER PRIMARY KEY, task TEXT, kind TEXT, body TEXT)");
    this.#insert = db.prepare("INSERT INTO rows (task, kind, body) VALUES (?, ?, ?)");
    this.#commit = db.transaction((rows: Array<[string, string, string]>) => {
      for (const row of rows) this.#insert.run(...row);
    });
  }

  write(task: string, kind: string, body: unknown): Promise<void> {
    return new Promise((done) => {
      if (this.#queued.length === 0) setImmediate(() => this.#flush());
      this.#queued.push({ row: [task, kind, JSON.stringify(body)], done });
    });
  }

  #flush(): void {
    const batch = this.#queued;
    this.#queued = [];
    this.#commit(batch.map((entry) => entry.row));
    for (const entry of batch) entry.done();
  }
}

/** One worker thread; each turn a message there and back. */
class TurnWorker {
  readonly #worker = new Worker(new URL("./baseline-a2a-turn-worker.ts", import.meta.url));
  readonly #waiting = new Map<number, (reply: string) => void>();
  #next = 0;

  constructor() {
    this.#worker.onmessage = (event: MessageEvent<{ id: number; reply: string }>) => {
      this.#waiting.get(event.data.id)?.(event.data.reply);
      this.#waiting.delete(event.data.id);
    };
  }

  turn(text: string): Promise<string> {
    const id = ++this.#next;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#worker.postMessage({ id, text });
    });
  }
}

const durablePath = process.argv.find((arg) => arg.startsWith("--durable="))?.slice("--durable=".length);
/** `--floor-parts=commits` or `worker`: one of the floor's two costs alone (both by default). */
const parts = process.argv.find((arg) => arg.startsWith("--floor-parts="))?.slice("--floor-parts=".length) ?? "both";
const durable =
  durablePath === undefined
    ? undefined
    : {
        store: parts === "worker" ? undefined : new GroupCommit(durablePath),
        worker: parts === "commits" ? undefined : new TurnWorker(),
      };

const echo: AgentExecutor = {
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    let text = textOf(context.userMessage);
    if (durable !== undefined) {
      const { store, worker } = durable;
      if (store !== undefined)
        await Promise.all([
          store.write(taskId, "session", { contextId }),
          store.write(taskId, "prompt", context.userMessage),
        ]);
      if (worker !== undefined) text = await worker.turn(text);
      if (store !== undefined) await store.write(taskId, "answer", { text });
    }
    const now = () => new Date().toISOString();
    bus.publish({ kind: "task", id: taskId, contextId, status: { state: "submitted", timestamp: now() } });
    const reply = () => ({
      kind: "message" as const,
      messageId: crypto.randomUUID(),
      role: "agent" as const,
      parts: [{ kind: "text" as const, text }],
      taskId,
      contextId,
    });
    bus.publish({
      kind: "status-update",
      taskId,
      contextId,
      status: { state: "working", timestamp: now(), message: reply() },
      final: false,
    });
    bus.publish({
      kind: "artifact-update",
      taskId,
      contextId,
      artifact: { artifactId: "result", name: "result", parts: [{ kind: "text", text }] },
      lastChunk: true,
    });
    bus.publish({
      kind: "status-update",
      taskId,
      contextId,
      status: { state: "completed", timestamp: now() },
      final: true,
    });
    bus.finished();
  },
  async cancelTask(): Promise<void> {},
};

const transport = new JsonRpcTransportHandler(new DefaultRequestHandler(card, new InMemoryTaskStore(), echo));
const encoder = new TextEncoder();

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(request) {
    const answer = await transport.handle(await request.json());
    if (!(Symbol.asyncIterator in answer)) return Response.json(answer);
    const frames = answer as AsyncGenerator<unknown>;
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        for await (const frame of frames) controller.enqueue(encoder.encode(`data: ${JSON.stringify(frame)}\n\n`));
        controller.close();
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  },
});
process.stderr.write(
  `${durable === undefined ? "baseline" : "durable floor"} A2A listening on http://127.0.0.1:${server.port}\n`,
);
