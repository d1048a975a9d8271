/**
 * The write gate's spans (issue 18 item 2, D302): a parked call is a `gate park <tool>` span
 * under the call's own span, and its context is written into the durable interrupt row; the
 * operator's answer, maybe hours and restarts later and from another request's trace, is a
 * `gate verdict <tool>` span under that request with a link back to the park. With telemetry off
 * neither starts anything and no context is stored.
 */
import { type Link, ROOT_CONTEXT, SpanKind, context, propagation, trace } from "@opentelemetry/api";
import type { TraceCarrier } from "../core/session-store.ts";
import { validTraceCarrier } from "../core/trace-carrier.ts";
import { activeTracer } from "./telemetry.ts";

export interface GateSpanInfo {
  tool: string;
  interruptId: string;
  sessionId: string;
  agent: string;
}

/** The park as a span under the active context; its context to store with the question. */
export function gateParkSpan(info: GateSpanInfo): TraceCarrier | undefined {
  const tracer = activeTracer();
  if (tracer === undefined) return undefined;
  const span = tracer.startSpan(`gate park ${info.tool}`, {
    kind: SpanKind.INTERNAL,
    attributes: attributesOf(info),
  });
  const headers: Record<string, string> = {};
  propagation.inject(trace.setSpan(context.active(), span), headers);
  span.end();
  return validTraceCarrier(headers);
}

/** The answer as a span under the active context (the operator's request), linked to the park. */
export function gateVerdictSpan(info: GateSpanInfo & { outcome: string }, park: TraceCarrier | undefined): void {
  const tracer = activeTracer();
  if (tracer === undefined) return;
  const parked = park === undefined ? undefined : trace.getSpanContext(propagation.extract(ROOT_CONTEXT, park));
  const links: Link[] = parked === undefined ? [] : [{ context: parked, attributes: { "spar.link": "gate-park" } }];
  tracer
    .startSpan(`gate verdict ${info.tool}`, {
      kind: SpanKind.INTERNAL,
      links,
      attributes: { ...attributesOf(info), "spar.gate.outcome": info.outcome },
    })
    .end();
}

function attributesOf(info: GateSpanInfo) {
  return {
    "gen_ai.tool.name": info.tool,
    "gen_ai.conversation.id": info.sessionId,
    "gen_ai.agent.name": info.agent,
    "spar.gate.interrupt_id": info.interruptId,
  };
}
