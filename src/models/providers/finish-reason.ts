/**
 * The finish reason of one model call in the AI SDK's vocabulary, with one promise spar relies
 * on: `length` means the output-token cap was hit (auto-continue re-drives only then). The SDK
 * also reports `length` when Anthropic stops on a full context window
 * (`model_context_window_exceeded`); continuing cannot help there, so that becomes `other`. Pure.
 */
import type { FinishReason } from "ai";
import type { RemoteProvider } from "../../core/model.ts";

/** Raw provider reasons the SDK maps to `length` that are not the output cap. */
const NOT_OUTPUT_CAP: Readonly<Partial<Record<RemoteProvider, readonly string[]>>> = {
  anthropic: ["model_context_window_exceeded"],
};

export function normalizeFinishReason(
  provider: RemoteProvider,
  reason: FinishReason,
  raw: string | undefined,
): FinishReason {
  if (reason === "length" && raw !== undefined && NOT_OUTPUT_CAP[provider]?.includes(raw)) return "other";
  return reason;
}
