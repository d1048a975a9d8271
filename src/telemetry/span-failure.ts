/**
 * How a span records the failure that ended it (one rule for every span spar makes): the
 * exception as an event, the status error. The caller ends the span.
 */
import { type Context, type Span, SpanStatusCode, context, trace } from "@opentelemetry/api";

export function markFailed(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/** A tool that answered with an error (it ran; its result says it failed). */
export function markToolError(span: Span): void {
  span.setAttribute("error.type", "tool_error");
  span.setStatus({ code: SpanStatusCode.ERROR });
}

/**
 * Run `work` with `span` active under `parent`: `settle` records its result on the span, a throw
 * marks it failed, and the span ends either way.
 */
export async function runInSpan<T>(
  span: Span,
  parent: Context,
  work: () => Promise<T>,
  settle: (result: T) => void,
): Promise<T> {
  try {
    const result = await context.with(trace.setSpan(parent, span), work);
    settle(result);
    return result;
  } catch (error) {
    markFailed(span, error);
    throw error;
  } finally {
    span.end();
  }
}
