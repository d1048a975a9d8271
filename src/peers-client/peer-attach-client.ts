/**
 * PeerAttachClient: what `call_peer` does against another spar agent's attach listener, every
 * request through the outbound guard (the peer's URL comes from the hub, supplied by whoever
 * registered it: the operator's `outbound.allow` alone opens private addresses, D365). One call:
 * POST /sessions (a fresh session; 501 means the peer is single-session), GET its /events (open,
 * and its first frame read, before the inject), POST its /inject, then the frames until the
 * turn's end (peer-turn.ts). The caller's signal is the one deadline over all of it; on a
 * deadline the peer's turn is interrupted (best effort, 2 s). The bearer goes on every request to
 * the peer (the guard drops it on a redirect to another origin); each request carries the W3C
 * trace context (the guard's client spans). Outcomes are data; only an abort rejects.
 */
import type { OutboundAnswer, OutboundGuard } from "../net/outbound-guard.ts";
import { redactUrl } from "../net/redact-url.ts";
import { PeerTurn } from "./peer-turn.ts";
import { readFrames } from "./sse-reader.ts";

/** The largest JSON answer read from a peer's /sessions or /inject (they are a few hundred bytes). */
const MAX_SMALL_ANSWER = 64 * 1024;

export type PeerCallOutcome =
  | { ok: true; sessionId: string; text: string; truncated: boolean }
  | { ok: false; error: string; sessionId?: string; status?: number; text?: string; truncated?: boolean };

export interface PeerCallRequest {
  /** The peer's attach base URL (its registration's endpoint). */
  endpoint: string;
  bearer: string | undefined;
  prompt: string;
  maxResponseBytes: number;
  signal: AbortSignal;
  /** Filled as the call goes, so a caller whose deadline fired can still name the session. */
  progress: { sessionId?: string; path?: string };
}

class StepError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** `base` + `path`, keeping a base path (`https://host/agent` + `/sessions`). */
export function peerUrl(base: string, path: string): string {
  return `${base.replace(/\/+$/, "")}${path}`;
}

async function smallJson(response: Response, what: string): Promise<Record<string, unknown>> {
  const text = await response.text();
  if (text.length > MAX_SMALL_ANSWER)
    throw new StepError(`${what}: the answer is larger than ${MAX_SMALL_ANSWER} bytes`);
  try {
    const parsed = JSON.parse(text) as unknown;
    if (typeof parsed === "object" && parsed !== null && !Array.isArray(parsed))
      return parsed as Record<string, unknown>;
  } catch {
    // Reported below.
  }
  throw new StepError(`${what}: the answer is not a JSON object`);
}

/** The peer's `{error}` sentence of a refused request, cut short. */
async function refusalText(response: Response): Promise<string> {
  const text = (await response.text().catch(() => "")).slice(0, 2000);
  try {
    const error = (JSON.parse(text) as { error?: unknown }).error;
    if (typeof error === "string") return `: ${error.slice(0, 300)}`;
  } catch {
    // Not JSON: no sentence.
  }
  return "";
}

/** The response of a request that went through, or why it is of no use. */
async function usable(answer: OutboundAnswer, what: string): Promise<Response> {
  if (!answer.ok) throw new StepError(answer.message);
  const response = answer.response;
  if (response.ok) return response;
  const detail = await refusalText(response);
  if (response.status === 401 || response.status === 403)
    throw new StepError(
      `${what}: the peer refused the credentials (HTTP ${response.status}); check the bearer tools.call_peer.token_env names${detail}`,
      response.status,
    );
  throw new StepError(`${what}: HTTP ${response.status} from ${redactUrl(answer.url)}${detail}`, response.status);
}

export class PeerAttachClient {
  readonly #guard: OutboundGuard;

  constructor(guard: OutboundGuard) {
    this.#guard = guard;
  }

  /** Run one prompt in a fresh session of the peer. Rejects only when `request.signal` fires. */
  async call(request: PeerCallRequest): Promise<PeerCallOutcome> {
    const turn = new PeerTurn(request.maxResponseBytes);
    const sessionId = () => request.progress.sessionId;
    try {
      const session = await this.#createSession(request);
      request.progress.sessionId = session.id;
      request.progress.path = session.path;
      const events = await this.#openEvents(session.path, request);
      const frames = readFrames(events);
      // The stream's first frame (capabilities): the subscription exists before the prompt goes in.
      const first = await frames.next();
      if (first.done) throw new StepError("the peer closed its event stream at once");
      await this.#inject(session.path, request);
      for await (const frame of frames) {
        const end = turn.take(frame.event, parseData(frame.data));
        if (end === undefined) continue;
        const { text, truncated } = turn.answer();
        if (end.kind === "complete") return { ok: true, sessionId: session.id, text, truncated };
        return {
          ok: false,
          error: `the peer's turn ended ${end.errorKind}: ${end.message}`,
          sessionId: session.id,
          text,
          truncated,
        };
      }
      throw new StepError("the peer closed its event stream before the turn ended");
    } catch (error) {
      if (request.signal.aborted) {
        this.#interrupt(request, request.progress.path);
        throw request.signal.reason;
      }
      const id = sessionId();
      const partial = turn.answer();
      const where = {
        ...(id === undefined ? {} : { sessionId: id }),
        ...(partial.text === "" ? {} : { text: partial.text, truncated: partial.truncated }),
      };
      if (error instanceof StepError)
        return {
          ok: false,
          error: error.message,
          ...where,
          ...(error.status === undefined ? {} : { status: error.status }),
        };
      return {
        ok: false,
        error: `the peer is unreachable: ${redactUrl(error instanceof Error ? error.message : String(error))}`,
        ...where,
      };
    }
  }

  #headers(bearer: string | undefined, json: boolean): Record<string, string> {
    const headers: Record<string, string> = { accept: json ? "application/json" : "text/event-stream" };
    if (json) headers["content-type"] = "application/json";
    if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`;
    return headers;
  }

  async #createSession(request: PeerCallRequest): Promise<{ id: string; path: string }> {
    const url = peerUrl(request.endpoint, "/sessions");
    const answer = await this.#guard.fetch(url, {
      signal: request.signal,
      method: "POST",
      headers: this.#headers(request.bearer, true),
      body: "{}",
    });
    if (answer.ok && answer.response.status === 501) {
      await answer.response.body?.cancel().catch(() => {});
      throw new StepError(
        "the peer is not multi-session (POST /sessions answered 501): it cannot take delegated work; run it with --multi-session",
        501,
      );
    }
    const created = await smallJson(await usable(answer, "POST /sessions"), "POST /sessions");
    const id = created.sessionID;
    const app = created.app;
    if (typeof id !== "string" || id === "" || typeof app !== "string" || app === "")
      throw new StepError("POST /sessions: the answer names no app and sessionID");
    return { id, path: `/sessions/${encodeURIComponent(app)}/${encodeURIComponent(id)}` };
  }

  async #openEvents(path: string, request: PeerCallRequest): Promise<ReadableStream<Uint8Array>> {
    const answer = await this.#guard.fetch(peerUrl(request.endpoint, `${path}/events?since=0`), {
      signal: request.signal,
      headers: this.#headers(request.bearer, false),
    });
    const response = await usable(answer, "GET events");
    if (response.body === null) throw new StepError("GET events: the answer has no body");
    return response.body;
  }

  async #inject(path: string, request: PeerCallRequest): Promise<void> {
    const answer = await this.#guard.fetch(peerUrl(request.endpoint, `${path}/inject`), {
      signal: request.signal,
      method: "POST",
      headers: this.#headers(request.bearer, true),
      body: JSON.stringify({ message: request.prompt }),
    });
    await smallJson(await usable(answer, "POST inject"), "POST inject");
  }

  /** After the deadline: ask the peer to stop the turn (2 s, best effort, never awaited by the call). */
  #interrupt(request: PeerCallRequest, path: string | undefined): void {
    if (path === undefined) return;
    void this.#guard
      .fetch(peerUrl(request.endpoint, `${path}/interrupt`), {
        signal: AbortSignal.timeout(2000),
        method: "POST",
        headers: this.#headers(request.bearer, true),
        body: "{}",
      })
      .then((answer) => (answer.ok ? answer.response.body?.cancel() : undefined))
      .catch(() => {});
  }
}

function parseData(data: string): unknown {
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}
