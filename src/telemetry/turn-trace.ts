/**
 * The spans of a turn (issue 18 item 2, D301), after the GenAI semantic conventions: the turn is
 * `invoke_agent <agent>`, each model call `chat <model>` (CLIENT), each tool call
 * `execute_tool <tool>`. The turn's parent is the trace context stored with the first prompt it
 * drains (the request that queued it, however long ago and across restarts), with that request's
 * baggage (D341); the other prompts' contexts are links. The turn worker names each model call's span (its id, a child of the turn's
 * context the worker was given, and its start) and its provider request carries it; the span is
 * recorded here once the call is over (D324). With telemetry off `TurnTrace.start` answers
 * undefined and nothing here runs.
 */
import { markToolError, runInSpan } from "./span-failure.ts";
import {
  type Context,
  type Link,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  context,
  propagation,
  trace,
} from "@opentelemetry/api";
import type { ToolCall } from "../core/events.ts";
import type { PromptTrace, TraceCarrier } from "../core/session-store.ts";
import { type ModelCallSpan, carrierOfSpan } from "../core/trace-carrier.ts";
import type { TokenUsage } from "../core/usage.ts";
import { activeTracer, injectContext, startSpanWithId } from "./telemetry.ts";

/** The active span's context as a carrier (the ids alone); undefined when off or no span is active. */
export function activeCarrier(): TraceCarrier | undefined {
  if (activeTracer() === undefined) return undefined;
  return carrierOf(context.active());
}

/**
 * What a prompt stores of the request queueing it (D301, D341): the active span's ids and the
 * request's W3C baggage, serialized by the propagator within the W3C limits; undefined when off
 * or no span is active.
 */
export function activePromptTrace(): PromptTrace | undefined {
  const carrier = activeCarrier();
  if (carrier === undefined) return undefined;
  const baggage = propagation.getBaggage(context.active());
  if (baggage === undefined || baggage.getAllEntries().length === 0) return carrier;
  const headers: Record<string, string> = {};
  injectContext(headers);
  return headers.baggage ? { ...carrier, baggage: headers.baggage } : carrier;
}

function carrierOf(from: Context): TraceCarrier | undefined {
  const span = trace.getSpanContext(from);
  return span === undefined || !trace.isSpanContextValid(span)
    ? undefined
    : carrierOfSpan(span, span.traceState?.serialize());
}

/**
 * A stored carrier (validated on its way in and out of the store) as the parent context; the
 * propagators only for a tracestate or baggage, which they parse (the baggage then rides the
 * turn's context to the calls that send it, D341).
 */
function contextOf(carrier: PromptTrace): Context {
  if (carrier.tracestate !== undefined || carrier.baggage !== undefined)
    return propagation.extract(ROOT_CONTEXT, carrier);
  const [, traceId = "", spanId = "", flags = "00"] = carrier.traceparent.split("-");
  return trace.setSpanContext(ROOT_CONTEXT, {
    traceId,
    spanId,
    traceFlags: Number.parseInt(flags, 16),
    isRemote: true,
  });
}

export interface TurnTraceStart {
  sessionId: string;
  app: string;
  agent: string;
  invocationId: string;
  promptId: string;
  /** `prompt` (drained inbox messages), `continue` (an armed continue turn) or `wake` (nothing drained). */
  kind: "prompt" | "continue" | "wake";
  /** The stored contexts of the prompts the turn drains, in arrival order. */
  prompts: readonly (PromptTrace | undefined)[];
}

export interface ToolSpanOutcome {
  isError: boolean;
  /** The permission gate's answer (`allowed`, `approved`, `refused`, `parked`, ...), when it had one. */
  permission?: string;
}

export class TurnTrace {
  readonly #span: Span;
  readonly #context: Context;

  private constructor(span: Span, parent: Context) {
    this.#span = span;
    this.#context = trace.setSpan(parent, span);
  }

  /** The turn's span, or undefined when telemetry is off. */
  static start(info: TurnTraceStart): TurnTrace | undefined {
    const tracer = activeTracer();
    if (tracer === undefined) return undefined;
    const contexts = info.prompts.filter((carrier) => carrier !== undefined).map(contextOf);
    const [parent = ROOT_CONTEXT, ...others] = contexts;
    const links: Link[] = others
      .map((other) => trace.getSpanContext(other))
      .filter((linked) => linked !== undefined)
      .map((linked) => ({ context: linked, attributes: { "spar.link": "prompt" } }));
    const span = tracer.startSpan(
      `invoke_agent ${info.agent}`,
      {
        kind: SpanKind.INTERNAL,
        links,
        attributes: {
          "gen_ai.operation.name": "invoke_agent",
          "gen_ai.agent.name": info.agent,
          "gen_ai.conversation.id": info.sessionId,
          "spar.session.app": info.app,
          "spar.turn.invocation_id": info.invocationId,
          "spar.turn.prompt_id": info.promptId,
          "spar.turn.kind": info.kind,
        },
      },
      parent,
    );
    return new TurnTrace(span, parent);
  }

  /** The turn span's context, for the turn worker. */
  carrier(): TraceCarrier | undefined {
    return carrierOf(this.#context);
  }

  /** Run `work` with the turn's span active (a tool's outbound calls become its children). */
  within<T>(work: () => T): T {
    return context.with(this.#context, work);
  }

  /**
   * A model call's span, recorded when the call is over: the worker named it (its id and start,
   * D324) and its provider request carried it; ended now, with the response's attributes or as
   * failed.
   */
  modelCall(
    call: ModelCallSpan,
    model: { name: string; provider: string },
    response: { finishReason: string; usage: TokenUsage; messageId: string; model: string } | { failure: string },
  ): void {
    const span = startSpanWithId(
      call.spanId,
      `chat ${model.name}`,
      {
        kind: SpanKind.CLIENT,
        startTime: call.startedAtMs,
        attributes: {
          "gen_ai.operation.name": "chat",
          "gen_ai.provider.name": model.provider,
          "gen_ai.request.model": model.name,
        },
      },
      this.#context,
    );
    if (span === undefined) return;
    if ("failure" in response) {
      span.setAttribute("error.type", "model_call_failed");
      span.setStatus({ code: SpanStatusCode.ERROR, message: response.failure });
    } else
      span.setAttributes({
        "gen_ai.response.model": response.model,
        "gen_ai.response.finish_reasons": [response.finishReason],
        "gen_ai.usage.input_tokens": response.usage.inputTokens,
        "gen_ai.usage.output_tokens": response.usage.outputTokens,
        "spar.message.id": response.messageId,
      });
    span.end();
  }

  /** Run a tool call inside its span (child of the turn). */
  async toolCall<T>(call: ToolCall, run: () => Promise<T>, outcome: (result: T) => ToolSpanOutcome): Promise<T> {
    const tracer = activeTracer();
    if (tracer === undefined) return run();
    const span = tracer.startSpan(
      `execute_tool ${call.name}`,
      {
        kind: SpanKind.INTERNAL,
        attributes: {
          "gen_ai.operation.name": "execute_tool",
          "gen_ai.tool.name": call.name,
          "gen_ai.tool.call.id": call.callId,
        },
      },
      this.#context,
    );
    return runInSpan(span, this.#context, run, (result) => {
      const { isError, permission } = outcome(result);
      if (permission !== undefined) span.setAttribute("spar.permission.outcome", permission);
      if (isError) markToolError(span);
    });
  }

  /** The turn ended: its outcome, tokens and cost; a model call still open ends with it, failed. */
  end(outcome: {
    status: string;
    usage: TokenUsage;
    costUsd: number;
    error?: string;
    openCall?: { call: ModelCallSpan; model: { name: string; provider: string } };
  }): void {
    if (outcome.openCall !== undefined)
      this.modelCall(outcome.openCall.call, outcome.openCall.model, {
        failure: outcome.error ?? (outcome.status === "completed" ? "the turn ended" : outcome.status),
      });
    this.#span.setAttributes({
      "spar.turn.outcome": outcome.status,
      "gen_ai.usage.input_tokens": outcome.usage.inputTokens,
      "gen_ai.usage.output_tokens": outcome.usage.outputTokens,
      "spar.turn.cost_usd": outcome.costUsd,
    });
    if (outcome.status !== "completed") {
      this.#span.setAttribute("error.type", outcome.status);
      this.#span.setStatus({
        code: SpanStatusCode.ERROR,
        ...(outcome.error === undefined ? {} : { message: outcome.error }),
      });
    }
    this.#span.end();
  }
}
