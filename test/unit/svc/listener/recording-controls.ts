/** The operator's controls behind svc's main listener, in process: records what reached them, answers as told. */
import type { SparError } from "../../../../src/core/errors.ts";
import type { ResetOutcome } from "../../../../src/runtime/session-guards.ts";
import type { AbortRequest } from "../../../../src/svc/listener/abort-route.ts";
import type { GuardrailResetRequest } from "../../../../src/svc/listener/guardrails-route.ts";
import type { MainListenerControls } from "../../../../src/svc/listener/main-listener.ts";
import type { StopRequest } from "../../../../src/svc/listener/stop-route.ts";

export class RecordingControls implements MainListenerControls {
  readonly aborts: AbortRequest[] = [];
  readonly resets: GuardrailResetRequest[] = [];
  readonly stops: StopRequest[] = [];
  /** Thrown by the next abort or reset. */
  failWith: SparError | undefined;
  /** Thrown by the draining check (a 503 while set). */
  draining: SparError | undefined;

  refuseWhileDraining(): void {
    if (this.draining) throw this.draining;
  }

  async abort(request: AbortRequest): Promise<void> {
    if (this.failWith) throw this.failWith;
    this.aborts.push(request);
  }

  stop(request: StopRequest): number {
    this.stops.push(request);
    return 30_000;
  }

  async resetGuardrails(request: GuardrailResetRequest): Promise<ResetOutcome> {
    if (this.failWith) throw this.failWith;
    this.resets.push(request);
    return { reset: ["watchdog"], budget_added_usd: 0, guardrails: {} as ResetOutcome["guardrails"], message: "reset" };
  }
}
