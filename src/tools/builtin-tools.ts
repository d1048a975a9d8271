/**
 * The builtin tools as one set: their specs for the model (minus `tools.disable`), their
 * classes for the permission gate, and the runner that executes one call inside the tool host:
 * unknown or disabled tool, invalid input (valibot), timeout, cancel and output cap all end as a
 * result the model reads, never as a thrown error.
 */
import * as v from "valibot";
import type { ToolCall } from "../core/events.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ToolClass } from "../core/permission-policy.ts";
import { OutboundGuard } from "../net/outbound-guard.ts";
import { bashTool } from "./bash-tool.ts";
import type { BuiltinTool, ToolOutcome } from "./builtin-tool.ts";
import { fetchUrlTool } from "./fetch-url-tool.ts";
import { deleteFileTool, editFileTool, readFileTool, writeFileTool } from "./file-tools.ts";
import { toolInputSchema } from "./tool-input-schema.ts";

export const BUILTIN_TOOLS: readonly BuiltinTool[] = [
  bashTool,
  readFileTool,
  writeFileTool,
  editFileTool,
  deleteFileTool,
  fetchUrlTool,
] as readonly BuiltinTool[];

export const BUILTIN_TOOL_NAMES: readonly string[] = BUILTIN_TOOLS.map((tool) => tool.name);

/** Each tool's JSON Schema for the model, derived once from its valibot input. */
const MODEL_SCHEMAS: ReadonlyMap<string, Record<string, unknown>> = new Map(
  BUILTIN_TOOLS.map((tool) => [tool.name, toolInputSchema(tool.input)]),
);

/** Whole results larger than this (serialized) are replaced by an error: a last guard over the per-tool caps. */
export const MAX_RESULT_BYTES = 1024 * 1024;
/** A tool that ignores its abort signal is cut this long after it. */
const ABORT_GRACE_MS = 3000;

export interface BuiltinSettings {
  /** Absolute real path of the workspace root. */
  root: string;
  /** Tool names turned off by `tools.disable`. */
  disabled: ReadonlySet<string>;
  /** Environment for child processes (default: the process's). */
  env?: Record<string, string | undefined>;
  /** The outbound guard of fetch_url (default: no allow list, every special range refused). */
  outbound?: OutboundGuard;
}

/** Made on first use when the settings bring no guard. */
let defaultGuard: OutboundGuard | undefined;

/** The process environment without the named variables (the daemon's own secrets). */
export function childEnvironment(hidden: readonly string[]): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const name of hidden) delete env[name];
  return env;
}

export function builtinTool(name: string): BuiltinTool | undefined {
  return BUILTIN_TOOLS.find((tool) => tool.name === name);
}

/** The specs the model is offered. */
export function builtinSpecs(disabled: ReadonlySet<string>): ToolSpec[] {
  return BUILTIN_TOOLS.filter((tool) => !disabled.has(tool.name)).map((tool) => ({
    name: tool.name,
    description: tool.description,
    inputSchema: MODEL_SCHEMAS.get(tool.name) ?? toolInputSchema(tool.input),
  }));
}

export function builtinClass(name: string): ToolClass | undefined {
  return builtinTool(name)?.toolClass;
}

const failure = (error: string, extra: Record<string, unknown> = {}): ToolOutcome => ({
  output: { error, ...extra },
  isError: true,
});

function invalidInput(tool: string, issues: readonly v.BaseIssue<unknown>[]): ToolOutcome {
  const issue = issues[0];
  const path = issue ? v.getDotPath(issue) : null;
  return failure(`invalid input for ${tool}: ${path ? `${path}: ` : ""}${issue?.message ?? "invalid"}`);
}

/** Resolves after the signal fired plus a grace period: the backstop for tools that ignore it. */
function afterAbort(signal: AbortSignal, timeoutMs: number): { promise: Promise<ToolOutcome>; clear(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const onAbort = () => {
    timer = setTimeout(
      () =>
        resolve(
          failure(
            signal.reason instanceof DOMException && signal.reason.name === "TimeoutError"
              ? `timed out after ${timeoutMs / 1000} s`
              : "stopped: the turn was cancelled",
          ),
        ),
      ABORT_GRACE_MS,
    );
  };
  let resolve!: (outcome: ToolOutcome) => void;
  const promise = new Promise<ToolOutcome>((done) => (resolve = done));
  signal.addEventListener("abort", onAbort, { once: true });
  return {
    promise,
    clear: () => {
      signal.removeEventListener("abort", onAbort);
      if (timer) clearTimeout(timer);
    },
  };
}

/** Execute one approved call of a builtin tool. */
export async function runBuiltin(call: ToolCall, settings: BuiltinSettings, cancel: AbortSignal): Promise<ToolOutcome> {
  const tool = builtinTool(call.name);
  if (!tool) return failure(`tool ${JSON.stringify(call.name)} is not available in this session`);
  if (settings.disabled.has(tool.name))
    return failure(`tool ${JSON.stringify(call.name)} is not available in this session (disabled by tools.disable)`);
  const parsed = v.safeParse(tool.input, call.args);
  if (!parsed.success) return invalidInput(tool.name, parsed.issues);
  const timeoutMs = Math.min(tool.timeoutFor?.(parsed.output) ?? tool.timeoutMs, tool.maxTimeoutMs ?? tool.timeoutMs);
  const signal = AbortSignal.any([cancel, AbortSignal.timeout(timeoutMs)]);
  const backstop = afterAbort(signal, timeoutMs);
  let outcome: ToolOutcome;
  try {
    const outbound = settings.outbound ?? (defaultGuard ??= new OutboundGuard());
    outcome = await Promise.race([
      tool.run(parsed.output, {
        root: settings.root,
        signal,
        capBytes: tool.capBytes,
        timeoutMs,
        env: settings.env ?? process.env,
        outbound,
      }),
      backstop.promise,
    ]);
  } catch (error) {
    outcome = failure(`${tool.name} failed: ${error instanceof Error ? error.message : String(error)}`);
  } finally {
    backstop.clear();
  }
  const size = Buffer.byteLength(JSON.stringify(outcome.output), "utf8");
  return size > MAX_RESULT_BYTES
    ? failure(`${tool.name} produced ${size} bytes of output, more than the ${MAX_RESULT_BYTES}-byte cap`)
    : outcome;
}
