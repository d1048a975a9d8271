/**
 * What a builtin tool declares: its name and description, the valibot schema its input is
 * validated with (the JSON Schema the model sees is derived from it: tool-input-schema.ts), its
 * class for the permission gate, a timeout and an output cap. Implementations live beside this
 * file; they run inside the tool-host worker.
 */
import type * as v from "valibot";
import type { ToolClass } from "../core/permission-policy.ts";
import type { OutboundGuard } from "../net/outbound-guard.ts";

export interface ToolContext {
  /** Absolute, real path of the workspace every file path is resolved against. */
  root: string;
  /** Aborted on timeout and on turn cancel: the tool stops and cleans up (children killed). */
  signal: AbortSignal;
  /** The tool's output cap in bytes (per stream for bash). */
  capBytes: number;
  /** The effective timeout, for messages. */
  timeoutMs: number;
  /** Environment for child processes: the daemon's, without its own secrets. */
  env: Record<string, string | undefined>;
  /** The only way a tool fetches a URL the model chose (the operator's allow list applied). */
  outbound: OutboundGuard;
}

/** What a run produced: the model reads `output`; `isError` marks a failed call. */
export interface ToolOutcome {
  output: Record<string, unknown>;
  isError: boolean;
}

export interface BuiltinTool<TSchema extends v.GenericSchema = v.GenericSchema> {
  name: string;
  description: string;
  /**
   * The arguments: a call that fails it never runs. Each field's `v.description` is what the
   * model reads about it (the model's JSON Schema is derived from this, D218).
   */
  input: TSchema;
  toolClass: ToolClass;
  /** Default timeout; a tool may let its input shorten or extend it up to `maxTimeoutMs`. */
  timeoutMs: number;
  maxTimeoutMs?: number;
  /** Output cap in bytes. */
  capBytes: number;
  /** The timeout a given input asks for (bash's `timeout_seconds`), else the default. */
  timeoutFor?(input: v.InferOutput<TSchema>): number;
  run(input: v.InferOutput<TSchema>, context: ToolContext): Promise<ToolOutcome>;
}

/** Keep at most `cap` bytes of UTF-8 text (cut on a character boundary). */
export function capText(text: string, cap: number): { text: string; truncated: boolean; bytes: number } {
  const bytes = Buffer.byteLength(text, "utf8");
  if (bytes <= cap) return { text, truncated: false, bytes };
  const cut = Buffer.from(text, "utf8")
    .subarray(0, cap)
    .toString("utf8")
    .replace(/\uFFFD$/, "");
  return { text: cut, truncated: true, bytes };
}
