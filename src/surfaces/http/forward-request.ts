/**
 * forwardRequest: serve one request a node:http parser read (behind the mTLS terminator) with a
 * fetch-style app in process. The body is read up to the listener's cap (a JSON 413 past it),
 * the Request built from the client's own method, path and headers, and the Response written
 * back: a finite body in one write with its length, an event stream frame by frame as it comes,
 * cut once more than `maxBacklogBytes` wait on a client that stopped reading (the app's
 * SseStream cannot see this socket, so the bound is kept here). A client that goes away
 * aborts the request's signal and cancels the response body. Never throws: every failure is a
 * JSON answer or a cut connection.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { SparError } from "../../core/errors.ts";
import { validHost } from "./request-url.ts";
import { errorResponse } from "./responses.ts";

export interface ForwardLimits {
  /** Largest request body accepted (Bun.serve's maxRequestBodySize on the other listeners). */
  maxRequestBodyBytes: number;
  /** Bytes an event stream may have waiting on a client that stopped reading before it is cut. */
  maxBacklogBytes: number;
}

export interface ForwardHooks {
  /** The app the request is handed to. */
  handle(request: Request): Promise<Response>;
  /** The body has been read: the request no longer waits on the client. */
  bodyRead(): void;
  /** Tag the Request before the app sees it (the connection's verified identity). */
  attach(request: Request): void;
}

const NO_BODY_METHODS = new Set(["GET", "HEAD"]);
const NO_BODY_STATUSES = new Set([204, 304]);
/** Stands in for a missing or invalid Host: the app sees a whole URL; the headers stay as sent. */
const PLACEHOLDER_ORIGIN = "https://localhost";

class BodyTooLarge extends Error {}

export async function forwardRequest(
  incoming: IncomingMessage,
  outgoing: ServerResponse,
  limits: ForwardLimits,
  hooks: ForwardHooks,
): Promise<void> {
  const abort = new AbortController();
  outgoing.once("close", () => abort.abort(new Error("client disconnected")));
  let response: Response;
  try {
    const request = await toRequest(incoming, limits.maxRequestBodyBytes, abort.signal);
    hooks.bodyRead();
    hooks.attach(request);
    response = await hooks.handle(request);
  } catch (error) {
    hooks.bodyRead();
    response = errorResponse(failureOf(error, limits.maxRequestBodyBytes));
    // The rest of the body (if any) was not read: this connection cannot carry another request.
    outgoing.shouldKeepAlive = false;
  }
  try {
    await writeResponse(response, incoming.method ?? "GET", outgoing, limits.maxBacklogBytes, abort.signal);
  } catch {
    outgoing.destroy();
  }
}

function failureOf(error: unknown, maxBytes: number): unknown {
  if (error instanceof BodyTooLarge)
    return new SparError("payload_too_large", `request body over the listener's ${maxBytes}-byte limit`);
  if (error instanceof TypeError) return new SparError("bad_request", `malformed request: ${error.message}`);
  return error;
}

async function toRequest(incoming: IncomingMessage, maxBytes: number, signal: AbortSignal): Promise<Request> {
  const target = incoming.url ?? "/";
  // Origin form only (RFC 9112 3.2.1): an absolute-form target would let a client name another origin.
  if (!target.startsWith("/")) throw new SparError("bad_request", "the request target must be a path (origin form)");
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i] as string, raw[i + 1] as string);
  const host = validHost(incoming.headers.host);
  const url = `${host === undefined ? PLACEHOLDER_ORIGIN : `https://${host}`}${target}`;
  const method = incoming.method ?? "GET";
  const body = NO_BODY_METHODS.has(method) ? undefined : await readBody(incoming, maxBytes);
  return new Request(url, { method, headers, signal, ...(body && body.byteLength > 0 ? { body } : {}) });
}

async function readBody(incoming: IncomingMessage, maxBytes: number): Promise<Uint8Array> {
  const declared = Number(incoming.headers["content-length"] ?? 0);
  if (declared > maxBytes) throw new BodyTooLarge();
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of incoming as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > maxBytes) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks);
}

function writeHead(response: Response, outgoing: ServerResponse): void {
  outgoing.statusCode = response.status;
  for (const [name, value] of response.headers) if (name !== "set-cookie") outgoing.setHeader(name, value);
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 0) outgoing.setHeader("set-cookie", cookies);
}

async function writeResponse(
  response: Response,
  method: string,
  outgoing: ServerResponse,
  maxBacklogBytes: number,
  signal: AbortSignal,
): Promise<void> {
  if (outgoing.destroyed) {
    await response.body?.cancel("client disconnected");
    return;
  }
  writeHead(response, outgoing);
  const body = response.body;
  if (body === null || method === "HEAD" || NO_BODY_STATUSES.has(response.status)) {
    await body?.cancel();
    outgoing.end();
    return;
  }
  if (!(response.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    // A finite body: one write with its length (no chunked framing, one TLS record at best).
    outgoing.end(new Uint8Array(await response.arrayBuffer()));
    return;
  }
  await writeStream(body, outgoing, maxBacklogBytes, signal);
}

/**
 * An event stream: headers now, then frames as they come. Read on while the socket is behind, so
 * the frames wait where they can be counted, and cut a client more than `maxBacklogBytes` behind.
 */
async function writeStream(
  body: ReadableStream<Uint8Array>,
  outgoing: ServerResponse,
  maxBacklogBytes: number,
  signal: AbortSignal,
): Promise<void> {
  outgoing.flushHeaders();
  const reader = body.getReader();
  const cancel = () => void reader.cancel("client disconnected").catch(() => {});
  signal.addEventListener("abort", cancel, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (outgoing.destroyed) return;
      if (!outgoing.write(value) && backlogOf(outgoing) > maxBacklogBytes) {
        outgoing.destroy();
        return;
      }
    }
    outgoing.end();
  } finally {
    signal.removeEventListener("abort", cancel);
    if (outgoing.destroyed) cancel();
  }
}

function backlogOf(outgoing: ServerResponse): number {
  return Math.max(outgoing.writableLength, outgoing.socket?.writableLength ?? 0);
}
