/**
 * GET /sessions/.../events: the SSE stream. Checks run in the order of
 * docs/attach-api.md#stream-checks (session lookup, protocol negotiation, cursor, stream caps);
 * then boot frames (capabilities, status, usage), replay from `since` or Last-Event-ID, and live
 * publications, each exactly once and in order.
 */
import { SparError } from "../../core/errors.ts";
import type { Publication } from "../../core/events.ts";
import { negotiateProtocol } from "./attach-protocol.ts";
import type { FeedSink } from "../../runtime/session-feed.ts";
import { requestBaseUrl } from "../http/base-url.ts";
import type { SseStream } from "../http/sse-stream.ts";
import type { AttachContext } from "./attach-context.ts";
import type { AttachStreams } from "./attach-streams.ts";
import type { SessionTarget } from "../../runtime/session-service.ts";
import type { Caller } from "../http/caller-auth.ts";
import { requestUrl } from "../http/request-url.ts";
import { PROTOCOL_HEADER } from "./protocol-header.ts";
import { type PublicationEncoder, encodeLiveFrame, encodeWireFrame } from "./sse-frames.ts";
import { openingStatusFrame } from "./wire-frame.ts";

const INT64_MAX = 9_223_372_036_854_775_807n;

/**
 * The replay cursor: `since` query, else Last-Event-ID, else 0; any non-negative int64
 * (docs/attach-api.md#stream-checks). A cursor past the head replays nothing (live only, D32), so
 * values past what a number holds exactly are read as the largest one. Malformed or out-of-range
 * values are a 400.
 */
export function parseCursor(url: URL, request: Request): number {
  const raw = url.searchParams.get("since") ?? request.headers.get("last-event-id") ?? "0";
  const digits = raw.trim();
  if (!/^\d{1,19}$/.test(digits) || BigInt(digits) > INT64_MAX) {
    throw new SparError(
      "bad_request",
      `since must be a non-negative int64 event sequence, got ${JSON.stringify(raw.slice(0, 100))}`,
    );
  }
  return Math.min(Number(digits), Number.MAX_SAFE_INTEGER);
}

/** The client's declared protocol: the query wins; an empty value declares nothing. */
function declaredVersion(url: URL, request: Request): string | undefined {
  const declared = url.searchParams.get("protocol") || request.headers.get(PROTOCOL_HEADER) || "";
  return declared.trim() === "" ? undefined : declared;
}

class StreamSink implements FeedSink {
  readonly #stream: SseStream;
  readonly #encoder: PublicationEncoder;
  constructor(stream: SseStream, encoder: PublicationEncoder) {
    this.#stream = stream;
    this.#encoder = encoder;
  }
  deliver(publication: Publication): boolean {
    const bytes = this.#encoder.encode(publication);
    // A subagent's row encodes to nothing: not on this stream (D351).
    return bytes.byteLength === 0 ? !this.#stream.closed : this.#stream.write(bytes);
  }
  whenWritable(): Promise<void> {
    return this.#stream.whenWritable();
  }
  get replayBatch(): number {
    return this.#stream.lowWater;
  }
  get bytesDelivered(): number {
    return this.#stream.bytesWritten;
  }
  get closed(): boolean {
    return this.#stream.closed;
  }
  close(reason: string): void {
    this.#stream.close(reason);
  }
}

/** What the events route takes from its request. */
export interface EventsRequest {
  target: SessionTarget;
  caller: Caller;
  request: Request;
}

export async function eventsHandler(
  context: AttachContext,
  listener: AttachStreams,
  route: EventsRequest,
): Promise<Response> {
  const session = await context.sessions.subscribeAnywhere(route.target, route.caller);
  const url = requestUrl(route.request);
  const negotiation = negotiateProtocol(declaredVersion(url, route.request));
  if (!negotiation.accepted) {
    throw new SparError(negotiation.reason === "malformed" ? "bad_request" : "conflict", negotiation.message);
  }
  const since = parseCursor(url, route.request);
  const caller = route.caller;
  // The guard keeps the idle timeout lifted for an event stream (connection-deadlines.ts).
  const release = context.streams.admit(caller);
  let unsubscribe = () => {};
  const stream = listener.streams.open({
    ...context.subscriberBuffer,
    onClose: () => {
      release();
      unsubscribe();
    },
  });
  stream.write(listener.capabilities.encoded(context, caller, requestBaseUrl(route.request)));
  const opening = session.opening;
  stream.write(encodeWireFrame(openingStatusFrame(context.daemon.model, opening.turnInFlight ? "streaming" : "idle")));
  if (opening.usage !== undefined) stream.write(encodeLiveFrame(opening.usage));
  const subscription = await session.attach(new StreamSink(stream, listener.publications), since);
  unsubscribe = () => subscription.unsubscribe();
  // The client may have gone while a follower read the log's head (D488).
  if (stream.closed) subscription.unsubscribe();
  route.request.signal.addEventListener("abort", () => stream.close("client disconnected"), { once: true });
  return stream.response;
}
