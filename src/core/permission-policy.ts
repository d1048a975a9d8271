/**
 * Permission policy: the vocabulary of the permission gate (modes, tool classes, operator decisions)
 * and the mode table that says what a call does when no allow or deny pattern and no session grant
 * decides it. Also owns a call's "key", the string patterns and grants are matched against. Pure;
 * knows nothing about prompts, clocks or transports (see permission-gate.ts).
 *
 * Mode table (`decideByMode`):
 *
 * | mode          | read-only | edit   | shell  | mutating |
 * |---------------|-----------|--------|--------|----------|
 * | `ask`         | run       | ask    | ask    | ask      |
 * | `acceptEdits` | run       | run    | ask    | ask      |
 * | `plan`        | run       | refuse | refuse | refuse   |
 * | `yolo`        | run       | run    | run    | run      |
 * | `allow`       | run       | run    | run    | run      |
 *
 * `plan` refuses without prompting anyone. `allow` is config-only: POST /perms/mode cannot select it.
 * The caller classifies tools: `bash` is `shell`, file writes and edits are `edit`, tools known not
 * to change anything are `read-only`, anything unknown is `mutating`.
 */
import type { ToolCall } from "./events.ts";

export type PermissionMode = "ask" | "acceptEdits" | "plan" | "yolo" | "allow";

/** The modes POST /perms/mode accepts (`allow` is config-only). */
export const SETTABLE_MODES: readonly PermissionMode[] = ["ask", "acceptEdits", "plan", "yolo"];

export type ToolClass = "read-only" | "mutating" | "edit" | "shell";

/** The six answers to a prompt (attach wire 1.14). */
export type Decision =
  | "deny"
  | "allow-once"
  | "allow-session"
  | "allow-session-verb"
  | "allow-session-tool"
  | "allow-always";

export const DECISIONS: readonly Decision[] = [
  "deny",
  "allow-once",
  "allow-session",
  "allow-session-verb",
  "allow-session-tool",
  "allow-always",
];

/** What the mode says about a call nothing else decided. */
export type ModeVerdict = "run" | "ask" | "refuse";

/** Prompt frame `kind` values this gate emits (the wire also knows `path_scope`, which it never sends). */
export type PromptKind = "bash" | "file_write" | "generic";

export function isPermissionMode(value: unknown): value is PermissionMode {
  return value === "allow" || (typeof value === "string" && (SETTABLE_MODES as readonly string[]).includes(value));
}

export function isDecision(value: unknown): value is Decision {
  return typeof value === "string" && (DECISIONS as readonly string[]).includes(value);
}

/**
 * The mode table above. `call` is accepted so a future mode may look at the call itself; no mode
 * does today.
 */
export function decideByMode(
  mode: PermissionMode,
  _call: Pick<ToolCall, "name" | "args">,
  toolClass: ToolClass,
): ModeVerdict {
  if (toolClass === "read-only") return "run";
  switch (mode) {
    case "yolo":
    case "allow":
      return "run";
    case "plan":
      return "refuse";
    case "acceptEdits":
      return toolClass === "edit" ? "run" : "ask";
    case "ask":
      return "ask";
  }
}

/** Prompt kind by tool class: shell prompts are `bash`, edits `file_write`, the rest `generic`. */
export function promptKindFor(toolClass: ToolClass): PromptKind {
  if (toolClass === "shell") return "bash";
  if (toolClass === "edit") return "file_write";
  return "generic";
}

/**
 * A call's key: `command` for `bash`, `path` for a call with a string `path` argument (file
 * tools), else the JSON of the arguments with object keys sorted (so equal arguments give equal
 * keys whatever order the model wrote them in).
 */
export function callKey(call: Pick<ToolCall, "name" | "args">): string {
  const { command, path } = call.args;
  if (call.name === "bash" && typeof command === "string") return command;
  if (typeof path === "string") return path;
  return canonicalJson(call.args);
}

/** The first whitespace-separated word of a key (`git` of `git push origin`); "" for a blank key. */
export function firstWord(key: string): string {
  return key.trim().split(/\s+/u)[0] ?? "";
}

/** JSON with object keys sorted at every depth; identical arguments give identical text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(sortKeys(value)) ?? "null";
}

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== "object") return value;
  const sorted: Record<string, unknown> = {};
  for (const name of Object.keys(value).sort()) sorted[name] = sortKeys((value as Record<string, unknown>)[name]);
  return sorted;
}
