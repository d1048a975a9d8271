/**
 * A `message/stream` answer: `text/event-stream`, one JSON-RPC response per `data:` line carrying
 * the request's id (what the 0.3.14 client checks), closed once the run settles (the client reads
 * to EOF; the final status update is the last frame). A failure after the stream opened is one
 * JSON-RPC error frame, then the close. A client that goes away does not stop the task: its turn
 * is durable and runs on. `onEnd` runs once, when the run settles or the client goes (its
 * stream slot is given back).
 */
import { jsonRpcError } from "../../surfaces/http/json-rpc-errors.ts";
import type { RequestIdValue, StreamEvent } from "../../protocols/a2a/a2a-wire.ts";

export function jsonRpcStream(
  id: RequestIdValue,
  run: (emit: (event: StreamEvent) => void) => Promise<unknown>,
  onEnd: () => void = () => {},
): Response {
  const encoder = new TextEncoder();
  let open = true;
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    onEnd();
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      const write = (payload: Record<string, unknown>) => {
        if (!open) return;
        try {
          controller.enqueue(encoder.encode(`data: ${JSON.stringify({ jsonrpc: "2.0", id, ...payload })}\n\n`));
        } catch {
          open = false;
        }
      };
      run((result) => write({ result }))
        .catch((error: unknown) => write({ error: jsonRpcError(error) }))
        .finally(() => {
          end();
          if (!open) return;
          open = false;
          controller.close();
        });
    },
    cancel() {
      open = false;
      end();
    },
  });
  return new Response(stream, {
    status: 200,
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" },
  });
}
