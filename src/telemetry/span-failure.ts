/**
 * How a span records the failure that ended it (one rule for every span spar makes): the
 * exception as an event, the status error. The caller ends the span.
 */
import { type Span, SpanStatusCode } from "@opentelemetry/api";

export function markFailed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR });
}
