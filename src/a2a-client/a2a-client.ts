/**
 * A2aClient: spar's own A2A v0.3.0 client for the two calls a caller agent needs, `message/send`
 * and `tasks/get` over JSON-RPC 2.0 (D?: not the SDK's client, so every request goes through the
 * outbound guard and the project keeps no runtime dependency on a pinned pre-1.0 SDK line). One
 * `send` resolves a remote agent's JSON-RPC endpoint (given, or read from its agent card), sends
 * one text message (blocking), and, while the task is still `submitted` or `working`, polls
 * `tasks/get` until it completes, fails or waits for input; the caller's signal bounds all of it.
 * Every fetch, the card's and the endpoint's, goes through the OutboundGuard: the addresses are
 * checked and pinned, redirects re-checked, and the bearer dropped on a cross-origin hop.
 * Outcomes are data, never thrown, except an abort (the signal's reason).
 */
import * as v from "valibot";
import type { OutboundAnswer, OutboundGuard } from "../net/outbound-guard.ts";
import { redactUrl } from "../net/redact-url.ts";
import {
  AnswerCard,
  AnswerMessage,
  AnswerTask,
  type JsonRpcCall,
  JsonRpcResponse,
  type Message,
  type SendParams,
  TERMINAL_STATES,
  WAITING_STATES,
  jsonRpcUrl,
  partTexts,
} from "../protocols/a2a/a2a-wire.ts";

/** Where a remote agent is and how to authenticate to it. */
export interface A2aTarget {
  /** The JSON-RPC endpoint; when absent it is read from the card. */
  endpoint?: string;
  /** The agent card's full URL (no relative resolution: the per-workload card gotcha). */
  cardUrl?: string;
  /** The bearer, already read from its environment variable. */
  bearer?: string;
}

export interface A2aSendRequest {
  text: string;
  /** Continue a conversation (the remote's `contextId`). */
  contextId?: string;
  /** Answer a task that asked for input. */
  taskId?: string;
  signal: AbortSignal;
  /** Filled as the call goes, so a caller whose signal fired can still name the task. */
  progress?: { taskId?: string; contextId?: string };
}

/** What the remote agent answered. `text` is the answer, the question asked, or why it failed. */
export type A2aOutcome =
  | { kind: "completed"; text: string; taskId?: string; contextId?: string }
  | { kind: "waiting"; state: string; text: string; taskId: string; contextId?: string }
  | { kind: "failed"; state: string; text: string; taskId: string; contextId?: string }
  | { kind: "error"; message: string; status?: number };

export interface A2aClientOptions {
  /** Between two `tasks/get` of a task still working (default 500 ms). */
  pollIntervalMs?: number;
  /** The largest answer body read (default 1 MiB); a larger one is an error. */
  maxBodyBytes?: number;
  /**
   * The guard of an endpoint a card names on another origin than the agent's own (its card's):
   * the operator's `outbound.allow` alone, never the declared agent's own hosts. Default: the
   * client's guard.
   */
  offOriginGuard?: OutboundGuard;
}

const MAX_REMOTE_MESSAGE = 500;

class CallError extends Error {
  readonly status: number | undefined;
  constructor(message: string, status?: number) {
    super(message);
    this.status = status;
  }
}

/** A remote-supplied sentence, cut to a readable length. */
function clip(text: string): string {
  return text.length > MAX_REMOTE_MESSAGE ? `${text.slice(0, MAX_REMOTE_MESSAGE)}...` : text;
}

async function readCapped(response: Response, cap: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return Buffer.concat(chunks).toString("utf8");
      size += value.byteLength;
      if (size > cap) throw new CallError(`the answer is larger than ${cap} bytes`);
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(done, ms);
    function done() {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }
    function onAbort() {
      clearTimeout(timer);
      reject(signal.reason);
    }
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

/** The guard and the bearer of the calls to one endpoint. */
interface CallRoute {
  guard: OutboundGuard;
  bearer: string | undefined;
}

/** A URL's origin (scheme, host and port), or undefined for none or an unparsable one. */
function originOf(url: string | undefined): string | undefined {
  return url === undefined || !URL.canParse(url) ? undefined : new URL(url).origin;
}

export class A2aClient {
  readonly #guard: OutboundGuard;
  readonly #offOriginGuard: OutboundGuard;
  readonly #pollIntervalMs: number;
  readonly #maxBodyBytes: number;
  #nextId = 1;

  constructor(guard: OutboundGuard, options: A2aClientOptions = {}) {
    this.#guard = guard;
    this.#offOriginGuard = options.offOriginGuard ?? guard;
    this.#pollIntervalMs = options.pollIntervalMs ?? 500;
    this.#maxBodyBytes = options.maxBodyBytes ?? 1024 * 1024;
  }

  /** Send one text message and wait for the task to settle. Rejects only when `request.signal` fires. */
  async send(target: A2aTarget, request: A2aSendRequest): Promise<A2aOutcome> {
    try {
      const endpoint = target.endpoint ?? (await this.#endpointFromCard(target.cardUrl, request.signal));
      const route = this.#route(target, endpoint);
      const message: Message = {
        kind: "message",
        messageId: crypto.randomUUID(),
        role: "user",
        parts: [{ kind: "text", text: request.text }],
        ...(request.contextId === undefined ? {} : { contextId: request.contextId }),
        ...(request.taskId === undefined ? {} : { taskId: request.taskId }),
      };
      const params: SendParams = { message, configuration: { blocking: true, acceptedOutputModes: ["text/plain"] } };
      const result = await this.#call(endpoint, route, "message/send", params, request.signal);
      const reply = v.safeParse(AnswerMessage, result);
      if (reply.success) return completedMessage(reply.output);
      let task = parseTask(result);
      for (;;) {
        if (request.progress) {
          request.progress.taskId = task.id;
          if (task.contextId !== undefined) request.progress.contextId = task.contextId;
        }
        const settled = settledOutcome(task);
        if (settled !== undefined) return settled;
        await sleep(this.#pollIntervalMs, request.signal);
        task = parseTask(await this.#call(endpoint, route, "tasks/get", { id: task.id }, request.signal));
      }
    } catch (error) {
      if (request.signal.aborted) throw request.signal.reason;
      if (error instanceof CallError)
        return {
          kind: "error",
          message: error.message,
          ...(error.status === undefined ? {} : { status: error.status }),
        };
      return { kind: "error", message: `the remote agent is unreachable: ${redactUrl(errorText(error))}` };
    }
  }

  async #endpointFromCard(cardUrl: string | undefined, signal: AbortSignal): Promise<string> {
    if (cardUrl === undefined) throw new CallError("the remote agent has neither an endpoint nor an agent card URL");
    const answer = await this.#guard.fetch(cardUrl, {
      signal,
      headers: { accept: "application/json" },
      baggage: true,
    });
    const response = usable(answer, "its agent card");
    const card = v.safeParse(AnswerCard, parseJson(await readCapped(response, this.#maxBodyBytes), "its agent card"));
    if (!card.success) throw new CallError("its agent card has no url (not an A2A v0.3 agent card)");
    const url = jsonRpcUrl(card.output);
    if (url === undefined) throw new CallError("its agent card offers no JSON-RPC interface");
    return url;
  }

  /**
   * How the calls to `endpoint` go (D332): on the agent's own origin (its declared endpoint's, else
   * its card's; an origin is scheme, host and port) with the client's guard and the bearer; on any
   * other origin, a `url` its card named, with the off-origin guard and never the bearer: an agent
   * with a bearer whose card points elsewhere is refused rather than called without it.
   */
  #route(target: A2aTarget, endpoint: string): CallRoute {
    const home = originOf(target.endpoint ?? target.cardUrl);
    if (originOf(endpoint) === home) return { guard: this.#guard, bearer: target.bearer };
    if (target.bearer !== undefined)
      throw new CallError(
        `its agent card names an endpoint on another origin (${originOf(endpoint) ?? "unparsable"}) than the card's own (${home ?? "unknown"}); its bearer goes only to that origin: declare the endpoint, or serve the card on the endpoint's origin`,
      );
    return { guard: this.#offOriginGuard, bearer: undefined };
  }

  async #call(
    endpoint: string,
    route: CallRoute,
    method: string,
    params: SendParams | { id: string },
    signal: AbortSignal,
  ): Promise<unknown> {
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (route.bearer !== undefined) headers.authorization = `Bearer ${route.bearer}`;
    const call: JsonRpcCall<typeof params> = { jsonrpc: "2.0", id: this.#nextId++, method, params };
    const body = JSON.stringify(call);
    const answer = await route.guard.fetch(endpoint, { signal, method: "POST", headers, body, baggage: true });
    const response = usable(answer, method);
    const envelope = v.safeParse(JsonRpcResponse, parseJson(await readCapped(response, this.#maxBodyBytes), method));
    if (!envelope.success) throw new CallError(`${method}: the answer is not a JSON-RPC 2.0 response`);
    const { error, result } = envelope.output;
    if (error !== undefined) {
      const retryable = (error.data as { retryable?: unknown } | undefined)?.retryable === true;
      throw new CallError(
        `${method}: the remote agent answered error ${error.code}: ${clip(error.message)}${retryable ? " (retryable)" : ""}`,
      );
    }
    if (result === undefined) throw new CallError(`${method}: the answer has neither result nor error`);
    return result;
  }
}

/** The response of a fetch that went through, or the reason it is of no use. */
function usable(answer: OutboundAnswer, what: string): Response {
  if (!answer.ok) throw new CallError(answer.message);
  const response = answer.response;
  if (response.status === 401 || response.status === 403) {
    void response.body?.cancel().catch(() => {});
    throw new CallError(
      `${what}: the remote agent refused the credentials (HTTP ${response.status}); check the bearer its auth.token_env names`,
      response.status,
    );
  }
  if (!response.ok) {
    void response.body?.cancel().catch(() => {});
    throw new CallError(`${what}: HTTP ${response.status} from ${redactUrl(answer.url)}`, response.status);
  }
  return response;
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new CallError(`${what}: the answer is not JSON`);
  }
}

function parseTask(result: unknown): AnswerTask {
  const task = v.safeParse(AnswerTask, result);
  if (!task.success) throw new CallError("the remote agent answered neither a Task nor a Message");
  return task.output;
}

function completedMessage(message: AnswerMessage): A2aOutcome {
  return {
    kind: "completed",
    text: messageText(message),
    ...(message.taskId === undefined ? {} : { taskId: message.taskId }),
    ...(message.contextId === undefined ? {} : { contextId: message.contextId }),
  };
}

/** The outcome of a task that will not move without us, else undefined (still submitted or working). */
function settledOutcome(task: AnswerTask): A2aOutcome | undefined {
  const state = task.status.state;
  const ids = { taskId: task.id, ...(task.contextId === undefined ? {} : { contextId: task.contextId }) };
  if (state === "completed") return { kind: "completed", text: taskText(task), ...ids };
  if (WAITING_STATES.has(state)) return { kind: "waiting", state, text: messageText(task.status.message), ...ids };
  if (TERMINAL_STATES.has(state) || state === "unknown")
    return { kind: "failed", state, text: clip(messageText(task.status.message)), ...ids };
  return undefined;
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The text parts of a message, joined by blank lines. */
function messageText(message: AnswerMessage | undefined): string {
  return message === undefined ? "" : partTexts(message.parts).join("\n\n");
}

/** A task's answer: its artifacts' text, else its status message, else the last agent message of its history. */
function taskText(task: AnswerTask): string {
  const artifacts = partTexts((task.artifacts ?? []).flatMap((artifact) => artifact.parts));
  if (artifacts.length > 0) return artifacts.join("\n\n");
  const status = messageText(task.status.message);
  if (status !== "") return status;
  const replies = (task.history ?? []).filter((message) => message.role === "agent");
  return messageText(replies[replies.length - 1]);
}
