/**
 * A stateless fake model for bench/gate.ts (run: `bun bench/gate-model-server.ts`): OpenAI
 * chat completions (`POST /v1/chat/completions`, streamed as the openai-compatible fixtures in
 * test/fixtures/providers/openai-compatible/ are) on 127.0.0.1 port 0, printing `listening on
 * http://127.0.0.1:<port>` to stderr. Each answer is decided from the request alone, so a
 * thousand svc sessions can talk to it at once without getting each other's lines (the scripted
 * model's cursor is process-wide and ordered):
 *
 * - the last user message starts `GATE ` (the specialist told its call's outcome): call
 *   `finish_task` {result};
 * - it starts `SPECIALIST ` (the coordinator told the specialist's result): plain text;
 * - the tools include `worker` and the last message is the incident (`INJECT ...`): call `worker`
 *   {request: "scale web to <N> replicas"}, N the trailing digits of the incident's uid;
 * - the tools include `blocker__apply_change` and no message starts `GATE `: call it {replicas: N},
 *   N read back from the request;
 * - anything else: plain text, counted as `unexpected`.
 *
 * `GET /stats` answers how many answers of each kind it gave.
 */

interface ChatMessage {
  role: string;
  content?: unknown;
}

interface ChatRequest {
  model?: string;
  messages?: ChatMessage[];
  tools?: Array<{ function?: { name?: string } }>;
}

type Answer = { kind: string; tool?: { name: string; args: Record<string, unknown> }; text?: string };

const stats: Record<string, number> = {};
let sequence = 0;

function textOf(message: ChatMessage | undefined): string {
  if (message === undefined) return "";
  if (typeof message.content === "string") return message.content;
  if (Array.isArray(message.content))
    return message.content.map((part) => (typeof part?.text === "string" ? part.text : "")).join("");
  return "";
}

function trailingNumber(text: string, pattern: RegExp): number {
  return Number(pattern.exec(text)?.[1] ?? 0);
}

/** The answer the request calls for (the rules of the header, in order). */
function decide(request: ChatRequest): Answer {
  const messages = request.messages ?? [];
  const tools = new Set((request.tools ?? []).map((tool) => tool.function?.name ?? ""));
  const users = messages.filter((message) => message.role === "user").map(textOf);
  const lastUser = users[users.length - 1] ?? "";
  const last = messages[messages.length - 1];
  if (lastUser.startsWith("GATE "))
    return { kind: "finish_task", tool: { name: "finish_task", args: { result: "applied" } } };
  if (lastUser.startsWith("SPECIALIST ")) return { kind: "text", text: "handled" };
  if (tools.has("worker") && last?.role === "user" && textOf(last).startsWith("INJECT ")) {
    const replicas = trailingNumber(textOf(last), /"uid":"[^"]*?(\d+)"/);
    return { kind: "worker", tool: { name: "worker", args: { request: `scale web to ${replicas} replicas` } } };
  }
  if (tools.has("blocker__apply_change") && !users.some((text) => text.startsWith("GATE "))) {
    const replicas = trailingNumber(users.join("\n"), /scale web to (\d+) replicas/);
    return { kind: "apply_change", tool: { name: "blocker__apply_change", args: { replicas } } };
  }
  return { kind: "unexpected", text: "nothing to do" };
}

function chunk(model: string, id: string, choice: Record<string, unknown> | undefined, extra = {}): string {
  const body = {
    id,
    object: "chat.completion.chunk",
    created: 1760000000,
    model,
    choices: choice ? [choice] : [],
    ...extra,
  };
  return `data: ${JSON.stringify(body)}\n\n`;
}

/** The streamed chat-completions body of an answer: delta(s), finish, usage, [DONE]. */
function streamBody(model: string, answer: Answer): string {
  const id = `chatcmpl-gate-${++sequence}`;
  const frames: string[] = [];
  if (answer.tool) {
    const call = {
      index: 0,
      id: `call_${sequence}`,
      type: "function",
      function: { name: answer.tool.name, arguments: JSON.stringify(answer.tool.args) },
    };
    frames.push(chunk(model, id, { index: 0, delta: { role: "assistant", content: null, tool_calls: [call] } }));
    frames.push(chunk(model, id, { index: 0, delta: {}, finish_reason: "tool_calls" }));
  } else {
    frames.push(chunk(model, id, { index: 0, delta: { role: "assistant", content: answer.text ?? "" } }));
    frames.push(chunk(model, id, { index: 0, delta: {}, finish_reason: "stop" }));
  }
  frames.push(chunk(model, id, undefined, { usage: { prompt_tokens: 200, completion_tokens: 20, total_tokens: 220 } }));
  frames.push("data: [DONE]\n\n");
  return frames.join("");
}

const gateModel = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  idleTimeout: 0,
  async fetch(request) {
    const url = new URL(request.url);
    if (request.method === "GET" && url.pathname === "/stats") return Response.json(stats);
    if (request.method !== "POST" || url.pathname !== "/v1/chat/completions")
      return new Response(`gate model: unexpected ${request.method} ${url.pathname}`, { status: 404 });
    let body: ChatRequest;
    try {
      body = (await request.json()) as ChatRequest;
    } catch {
      return new Response("gate model: the body is not JSON", { status: 400 });
    }
    const answer = decide(body);
    stats[answer.kind] = (stats[answer.kind] ?? 0) + 1;
    return new Response(streamBody(body.model ?? "gate-bench", answer), {
      headers: { "content-type": "text/event-stream", "cache-control": "no-cache" },
    });
  },
});

console.error(`gate model: listening on http://127.0.0.1:${gateModel.port}`);
process.on("SIGTERM", () => process.exit(0));
