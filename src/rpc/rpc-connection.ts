/**
 * RpcConnection: one end of a channel over a transport (the MCP SDK's Protocol over Transport).
 * Requests carry an id per sender and settle with the peer's answer; notifications go one way; a
 * requester may cancel (the handler's abort signal fires) or abandon (stop waiting); the opener
 * sends `hello` with the channel version and the acceptor answers `ready` with its own, and a
 * mismatch is a fault; pings prove the peer's event loop runs (liveness-watch.ts decides when).
 * A fault (crash, close, version) is reported once to the owner, then the connection closes and
 * every pending request rejects. Knows no method: channel modules name them (rpc-channel.ts).
 */
import type { NotificationName, ParamsOf, RequestName, ResultOf, RpcChannel, RpcSide } from "./rpc-channel.ts";
import { RpcError, RpcVersionError, errorText } from "./rpc-error.ts";
import {
  type ControlMessage,
  type MethodMessage,
  RESERVED_PREFIX,
  type RpcMessage,
  isRpcMessage,
} from "./rpc-message.ts";
import type { RpcTransport } from "./rpc-transport.ts";
import { PendingRequest, type RequestOwner } from "./pending-request.ts";

export interface ConnectionOptions {
  /**
   * The peer crashed, the transport closed, or the handshake found another version. Close the
   * connection here to give your own reason; otherwise it closes with the error's message.
   */
  onFault?: (error: RpcError) => void;
  /** Opener only: the acceptor answered `hello` with the same version. */
  onReady?: () => void;
}

export interface AcceptOptions<Init> extends ConnectionOptions {
  /** The opener's init payload, before `ready` is sent (not called on a version mismatch). */
  onHello?: (init: Init) => void;
}

export interface RequestOptions {
  /** Aborting it cancels the request (the peer's handler stops; the result is still its answer). */
  signal?: AbortSignal;
  /** The handler's abort reason (a DOMException AbortError with this message); default: the platform's. */
  cancelReason?: string;
}

type Handler = (params: unknown, signal: AbortSignal) => unknown;

interface HandlerEntry {
  handler: Handler;
  cancelable: boolean;
}

/** A method name, refused when it is the layer's own (`rpc.` types would never reach the handler). */
function reserved(method: string): string {
  if (method.startsWith(RESERVED_PREFIX))
    throw new Error(`"${method}": methods starting with "${RESERVED_PREFIX}" are reserved`);
  return method;
}

/** The signal of a handler that cannot be canceled: shared, never aborts. */
const NEVER_ABORTED: AbortSignal = new AbortController().signal;

export class RpcConnection<Local extends RpcSide, Remote extends RpcSide, Init = undefined> {
  readonly #name: string;
  readonly #version: number;
  readonly #transport: RpcTransport;
  readonly #options: AcceptOptions<Init>;
  readonly #handlers = new Map<string, HandlerEntry>();
  readonly #notificationHandlers = new Map<string, (params: unknown) => void>();
  readonly #pending = new Map<number, PendingRequest<unknown>>();
  /** Abort controllers of cancelable requests the peer sent and a handler still works on. */
  readonly #incoming = new Map<number, AbortController>();
  readonly #owner: RequestOwner;
  #nextId = 1;
  #ready = false;
  #closed = false;
  #closeReason = "";
  #pingId = 0;
  #pingSentAt: number | undefined;

  /** The opener's end: starts the transport and sends `hello` with `init` at once. */
  static open<Opener extends RpcSide, Acceptor extends RpcSide, Init>(
    channel: RpcChannel<Opener, Acceptor, Init>,
    transport: RpcTransport,
    init: Init,
    options: ConnectionOptions = {},
  ): RpcConnection<Opener, Acceptor, Init> {
    const connection = new RpcConnection<Opener, Acceptor, Init>(channel, transport, options);
    connection.#send({ type: "rpc.hello", version: channel.version, init });
    return connection;
  }

  /** The acceptor's end: answers the opener's `hello` with `ready`. Register handlers before messages can arrive. */
  static accept<Opener extends RpcSide, Acceptor extends RpcSide, Init>(
    channel: RpcChannel<Opener, Acceptor, Init>,
    transport: RpcTransport,
    options: AcceptOptions<Init> = {},
  ): RpcConnection<Acceptor, Opener, Init> {
    return new RpcConnection<Acceptor, Opener, Init>(channel, transport, options);
  }

  private constructor(
    channel: { name: string; version: number },
    transport: RpcTransport,
    options: AcceptOptions<Init>,
  ) {
    this.#name = channel.name;
    this.#version = channel.version;
    this.#transport = transport;
    this.#options = options;
    this.#owner = {
      sendCancel: (id, reason) =>
        this.#send(
          reason === undefined ? { type: "rpc.cancel", requestId: id } : { type: "rpc.cancel", requestId: id, reason },
        ),
      forget: (id) => this.#pending.delete(id),
    };
    transport.start({
      message: (data) => this.#receive(data),
      error: (message) => this.#fault(new RpcError("crashed", message)),
      closed: () => this.#fault(new RpcError("closed", `the ${this.#name} connection closed`)),
    });
  }

  /** The handshake completed: `ready` came back with this version (opener), or `hello` did (acceptor). */
  get ready(): boolean {
    return this.#ready;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Requests sent and not answered yet. */
  get pendingCount(): number {
    return this.#pending.size;
  }

  /**
   * Answer `method` with `handler`: its value (or its promise's) is the result, what it throws is
   * the error. Only a `cancelable` handler gets a live signal (one AbortController per request).
   */
  handle<Method extends RequestName<Local>>(
    method: Method,
    handler: (
      params: ParamsOf<Local, Method>,
      signal: AbortSignal,
    ) => ResultOf<Local, Method> | Promise<ResultOf<Local, Method>>,
    options: { cancelable?: boolean } = {},
  ): this {
    this.#handlers.set(reserved(method), { handler: handler as Handler, cancelable: options.cancelable === true });
    return this;
  }

  onNotification<Method extends NotificationName<Local>>(
    method: Method,
    handler: (params: Local["notifications"][Method]) => void,
  ): this {
    this.#notificationHandlers.set(reserved(method), handler as (params: unknown) => void);
    return this;
  }

  /** Send a request; the handle cancels or abandons it. On a closed connection it is already rejected. */
  call<Method extends RequestName<Remote>>(
    method: Method,
    params: ParamsOf<Remote, Method>,
  ): PendingRequest<ResultOf<Remote, Method>> {
    const id = this.#nextId++;
    const pending = new PendingRequest<ResultOf<Remote, Method>>(id, this.#owner);
    if (this.#closed) {
      pending.fail(new RpcError("closed", this.#closeReason));
      return pending;
    }
    // Flat: the params' fields beside the envelope's (rpc-message.ts says why).
    this.#transport.send({ ...params, type: method, requestId: id });
    this.#pending.set(id, pending);
    return pending;
  }

  /** Send a request and wait for its answer; `signal` cancels it (the answer still settles it). */
  request<Method extends RequestName<Remote>>(
    method: Method,
    params: ParamsOf<Remote, Method>,
    options: RequestOptions = {},
  ): Promise<ResultOf<Remote, Method>> {
    const pending = this.call(method, params);
    const { signal, cancelReason } = options;
    if (!signal) return pending.result;
    if (signal.aborted) {
      pending.cancel(cancelReason);
      return pending.result;
    }
    const onAbort = () => pending.cancel(cancelReason);
    signal.addEventListener("abort", onAbort, { once: true });
    return pending.result.finally(() => signal.removeEventListener("abort", onAbort));
  }

  notify<Method extends NotificationName<Remote>>(method: Method, params: Remote["notifications"][Method]): void {
    this.#send({ ...params, type: method });
  }

  /** Send a ping (liveness-watch.ts calls this); `pingAge` is its age until the pong arrives. */
  ping(now: number = performance.now()): void {
    if (this.#closed) return;
    this.#pingSentAt = now;
    this.#send({ type: "rpc.ping", id: ++this.#pingId });
  }

  /** Milliseconds since the unanswered ping was sent, or undefined when none is outstanding. */
  pingAge(now: number = performance.now()): number | undefined {
    return this.#pingSentAt === undefined ? undefined : now - this.#pingSentAt;
  }

  /** Abort every cancelable handler still working (e.g. on shutdown); each still answers. */
  abortIncoming(reason: unknown): void {
    for (const controller of this.#incoming.values()) controller.abort(reason);
  }

  /**
   * Close the transport (a worker is terminated) and reject every pending request with a `closed`
   * RpcError carrying `reason`; what still arrives is ignored. Idempotent.
   */
  close(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#closeReason = reason;
    this.#transport.close();
    const error = new RpcError("closed", reason);
    for (const pending of this.#pending.values()) pending.fail(error);
    this.#pending.clear();
    for (const controller of this.#incoming.values()) controller.abort(new DOMException(reason, "AbortError"));
    this.#incoming.clear();
  }

  #send(message: RpcMessage): void {
    if (!this.#closed) this.#transport.send(message);
  }

  #fault(error: RpcError): void {
    if (this.#closed) return;
    this.#options.onFault?.(error);
    this.close(error.message);
  }

  #receive(data: unknown): void {
    if (this.#closed || !isRpcMessage(data)) return;
    const message = data as ControlMessage;
    switch (message.type) {
      case "rpc.result":
        this.#settle(message.requestId, message.value, undefined);
        return;
      case "rpc.error":
        this.#settle(message.requestId, undefined, new RpcError("remote", message.message));
        return;
      case "rpc.cancel":
        this.#incoming
          .get(message.requestId)
          ?.abort(message.reason === undefined ? undefined : new DOMException(message.reason, "AbortError"));
        return;
      case "rpc.ping":
        this.#send({ type: "rpc.pong", id: message.id });
        return;
      case "rpc.pong":
        if (message.id === this.#pingId) this.#pingSentAt = undefined;
        return;
      case "rpc.hello":
        this.#hello(message.version, message.init as Init);
        return;
      case "rpc.ready":
        this.#readyAnswered(message.version);
        return;
      default:
        this.#dispatch(data as MethodMessage);
    }
  }

  /** A request (it has a `requestId`) or a notification: the message itself is the handler's params. */
  #dispatch(message: MethodMessage): void {
    const requestId = message.requestId;
    if (requestId === undefined) this.#notificationHandlers.get(message.type)?.(message);
    else this.#serve(requestId, message.type, message);
  }

  /** Opener: the acceptor's version decides whether the channel is up or faulted. */
  #readyAnswered(version: number): void {
    if (version !== this.#version) {
      this.#fault(new RpcVersionError(this.#name, this.#version, version));
      return;
    }
    this.#ready = true;
    this.#options.onReady?.();
  }

  /** Acceptor: answer `ready` with this side's version (also on a mismatch, so the opener can say so). */
  #hello(version: number, init: Init): void {
    if (version !== this.#version) {
      this.#send({ type: "rpc.ready", version: this.#version });
      this.#fault(new RpcVersionError(this.#name, this.#version, version));
      return;
    }
    this.#options.onHello?.(init);
    this.#ready = true;
    this.#send({ type: "rpc.ready", version: this.#version });
  }

  #settle(id: number, value: unknown, error: RpcError | undefined): void {
    const pending = this.#pending.get(id);
    if (!pending) return;
    this.#pending.delete(id);
    if (error) pending.fail(error);
    else pending.settle(value);
  }

  #serve(id: number, method: string, params: unknown): void {
    const entry = this.#handlers.get(method);
    if (!entry) {
      this.#answerError(id, `the ${this.#name} channel has no method "${method}"`);
      return;
    }
    let signal = NEVER_ABORTED;
    if (entry.cancelable) {
      const controller = new AbortController();
      this.#incoming.set(id, controller);
      signal = controller.signal;
    }
    let value: unknown;
    try {
      value = entry.handler(params, signal);
    } catch (error) {
      this.#incoming.delete(id);
      this.#answerError(id, errorText(error));
      return;
    }
    if (value instanceof Promise) {
      value.then(
        (resolved: unknown) => this.#answer(id, resolved),
        (error: unknown) => {
          this.#incoming.delete(id);
          this.#answerError(id, errorText(error));
        },
      );
    } else {
      this.#answer(id, value);
    }
  }

  #answer(id: number, value: unknown): void {
    this.#incoming.delete(id);
    if (this.#closed) return;
    try {
      this.#transport.send({ type: "rpc.result", requestId: id, value });
    } catch (error) {
      // The value could not be cloned: the requester must still hear back.
      this.#answerError(id, `the answer could not be sent: ${errorText(error)}`);
    }
  }

  #answerError(id: number, message: string): void {
    this.#send({ type: "rpc.error", requestId: id, message });
  }
}
