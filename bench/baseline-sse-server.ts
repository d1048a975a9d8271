/**
 * Baseline for bench/sse-fanout.ts: a raw Bun.serve SSE fan-out with no framework and no turn
 * machinery. One default ReadableStream per subscriber; each event is encoded once and the same
 * bytes enqueued to every subscriber. POST /sessions/default/inject {"message"} publishes the
 * nine frames an echo turn publishes on spar, with the same shapes and sizes (the message text
 * appears in the user row, the text-delta and the model row), all at once.
 *
 * Run: bun bench/baseline-sse-server.ts [--port=0]; logs `listening on http://127.0.0.1:<port>`.
 */

const encoder = new TextEncoder();
const subscribers = new Set<ReadableStreamDefaultController<Uint8Array>>();
let seq = 0;
let turns = 0;
let tokensIn = 0;
let tokensOut = 0;

function frame(name: string, payload: unknown, id?: number): Uint8Array {
  return encoder.encode(`${id === undefined ? "" : `id: ${id}\n`}event: ${name}\ndata: ${JSON.stringify(payload)}\n\n`);
}

function publish(bytes: Uint8Array): void {
  for (const controller of subscribers) {
    try {
      controller.enqueue(bytes);
    } catch {
      subscribers.delete(controller);
    }
  }
}

function uuid(): string {
  return crypto.randomUUID();
}

function row(
  seqNo: number,
  text: string,
  role: "user" | "model",
  invocationId: string,
  extra: Record<string, unknown>,
): unknown {
  return {
    seq: seqNo,
    event: {
      Content: { parts: [{ text }], role },
      CitationMetadata: null,
      GroundingMetadata: null,
      UsageMetadata: role === "model" ? { promptTokenCount: 3, candidatesTokenCount: 3, totalTokenCount: 6 } : null,
      CustomMetadata: extra,
      LogprobsResult: null,
      ModelVersion: "",
      Partial: false,
      TurnComplete: role === "model",
      Interrupted: false,
      ErrorCode: "",
      ErrorMessage: "",
      FinishReason: "",
      AvgLogprobs: 0,
      ID: uuid(),
      Timestamp: new Date().toISOString(),
      InvocationID: invocationId,
      Branch: "",
      Author: role === "user" ? "user" : "spar",
      Actions: {
        StateDelta: {},
        ArtifactDelta: {},
        RequestedToolConfirmations: null,
        SkipSummarization: false,
        TransferToAgent: "",
        Escalate: false,
      },
      LongRunningToolIDs: null,
    },
  };
}

function usage(): Record<string, unknown> {
  return { tokens_in_total: tokensIn, tokens_out_total: tokensOut, cost_usd_total: 0, turns_total: turns };
}

/** The nine frames of one echo turn, in spar's order. */
function turnFrames(message: string): Uint8Array[] {
  const promptId = uuid();
  const invocationId = `e-${uuid()}`;
  const tokens = Math.ceil(message.length / 4);
  turns++;
  tokensIn += tokens;
  tokensOut += tokens;
  return [
    frame("inbox", { state: "queued", prompt_id: promptId, queued_at: new Date().toISOString() }),
    frame("inbox", { state: "dequeued", prompt_id: promptId, queued_at: "0001-01-01T00:00:00Z" }),
    frame("status-update", { turn_state: "streaming", model: "echo" }),
    frame("agent", row(++seq, message, "user", invocationId, { prompt_ids: [promptId] }), seq),
    frame("text-delta", { invocation_id: invocationId, text: message }),
    frame("agent", row(++seq, message, "model", invocationId, { cost_usd: 0 }), seq),
    frame("turn-complete", {
      prompt_id: promptId,
      model: "echo",
      tokens_in: tokens,
      tokens_out: tokens,
      cost_usd: 0,
      latency_ms: 0,
    }),
    frame("status-update", { turn_state: "idle" }),
    frame("usage-update", {
      ...usage(),
      by_model: { echo: { tokens_in: tokensIn, tokens_out: tokensOut, cost_usd: 0, turns } },
      last_turn: { tokens_in: tokens, tokens_out: tokens, cost_usd: 0, model: "echo" },
    }),
  ];
}

const CAPABILITIES = {
  protocol_version: "1.16.0",
  event_types: [
    "status-update",
    "usage-update",
    "inbox",
    "turn-complete",
    "turn-error",
    "pause",
    "wake",
    "guardrail-trip",
    "text-delta",
  ],
  server: "baseline/0",
  features: { multi_session: false, cross_daemon: false, cost_ceiling: false, guardrails: false, observer_mode: false },
  slash_commands: [],
  agent: {
    name: "spar",
    version: "0.1.0",
    description: "spar agent daemon",
    model: "echo",
    provider: "echo",
    url: "/sessions/spar/default",
  },
  caller_id: "local",
};

const HEADERS = {
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  connection: "keep-alive",
  "x-accel-buffering": "no",
};

const portFlag = /^--port=(\d+)$/.exec(process.argv.find((arg) => arg.startsWith("--port=")) ?? "");

const server = Bun.serve({
  hostname: "127.0.0.1",
  port: portFlag ? Number(portFlag[1]) : 0,
  idleTimeout: 0,
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/sessions/default/events") {
      let self: ReadableStreamDefaultController<Uint8Array> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          self = controller;
          controller.enqueue(frame("capabilities", CAPABILITIES));
          controller.enqueue(frame("status-update", { model: "echo", turn_state: "idle" }));
          controller.enqueue(frame("usage-update", usage()));
          subscribers.add(controller);
        },
        cancel() {
          if (self) subscribers.delete(self);
        },
      });
      request.signal.addEventListener("abort", () => self && subscribers.delete(self), { once: true });
      return new Response(body, { headers: HEADERS });
    }
    if (request.method === "POST" && url.pathname === "/sessions/default/inject") {
      const { message } = (await request.json()) as { message: string };
      for (const bytes of turnFrames(message)) publish(bytes);
      return Response.json({ injected: true, session: "default", woke: true, prompt_id: uuid() });
    }
    if (url.pathname === "/stats") return Response.json({ subscribers: subscribers.size, seq });
    return new Response("not found", { status: 404 });
  },
});

process.stderr.write(`baseline-sse-server listening on http://127.0.0.1:${server.port}\n`);
process.on("SIGTERM", () => {
  for (const controller of subscribers) {
    try {
      controller.close();
    } catch {
      // already closed
    }
  }
  void server.stop(true);
  process.exit(0);
});
