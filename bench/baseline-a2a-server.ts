/**
 * The A2A benchmark's baseline (bench/a2a.ts): the SDK's own server, `@a2a-js/sdk` 0.3.14's
 * DefaultRequestHandler with an InMemoryTaskStore and an echo executor (submitted task, a working
 * status update with the echo, the result artifact, final completed), behind its
 * JsonRpcTransportHandler under Bun.serve. Nothing is durable. Prints `listening on http://...`.
 */
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

const echo: AgentExecutor = {
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    const text = textOf(context.userMessage);
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
process.stderr.write(`baseline A2A listening on http://127.0.0.1:${server.port}\n`);
