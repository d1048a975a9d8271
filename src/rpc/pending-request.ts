/**
 * PendingRequest: one request a connection sent and has not had answered yet. Its `result`
 * settles with the peer's answer, or rejects when the connection closes. Two ways to stop it:
 * `cancel` asks the peer's handler to stop and still waits for its answer (the handler says how
 * it ended); `abandon` also stops waiting, so a later answer is ignored.
 */
import { RpcError } from "./rpc-error.ts";

/** What a pending request needs from its connection (one object per connection, not per request). */
export interface RequestOwner {
  /** Send `cancel` for request `id` (at most once per request; the request decides). */
  sendCancel(id: number, reason: string | undefined): void;
  /** Stop waiting for request `id`: a later answer finds nothing. */
  forget(id: number): void;
}

export class PendingRequest<Result> {
  readonly id: number;
  readonly result: Promise<Result>;
  readonly #owner: RequestOwner;
  #resolve!: (value: Result) => void;
  #reject!: (error: RpcError) => void;
  #cancelSent = false;
  #settled = false;

  constructor(id: number, owner: RequestOwner) {
    this.id = id;
    this.#owner = owner;
    this.result = new Promise<Result>((resolve, reject) => {
      this.#resolve = resolve;
      this.#reject = reject;
    });
  }

  /** `cancel` was sent for this request. */
  get cancelRequested(): boolean {
    return this.#cancelSent;
  }

  /**
   * Ask the peer's handler to stop (its abort signal fires, with `reason` as a DOMException
   * AbortError when given). The result still settles with the handler's answer.
   */
  cancel(reason?: string): void {
    if (this.#cancelSent || this.#settled) return;
    this.#cancelSent = true;
    this.#owner.sendCancel(this.id, reason);
  }

  /** Cancel and stop waiting: `result` rejects now with an `abandoned` RpcError; a later answer is ignored. */
  abandon(reason = "the request was abandoned"): void {
    if (this.#settled) return;
    this.cancel(reason);
    this.#owner.forget(this.id);
    this.fail(new RpcError("abandoned", reason));
  }

  /** Called by the connection with the peer's answer. */
  settle(value: unknown): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#resolve(value as Result);
  }

  /** Called by the connection with an error answer or its close. */
  fail(error: RpcError): void {
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
  }
}
