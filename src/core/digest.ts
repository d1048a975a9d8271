/**
 * Tool-output digests (D352, D353): what a large tool result becomes before the model reads it,
 * and what the result row records about it. The structural strategy reduces each large field of
 * a result by its kind (JSON, a table, a log, plain text) and wraps the result as
 * `{digest, method, raw_bytes, call_id, digest_meta, ...the small fields}`; the agentic strategy
 * wraps a model's summary the same way; passthrough leaves the result as it was. Sizes are the
 * UTF-8 bytes of the result's JSON (what a provider sends the model), tokens estimated at
 * ceil(chars / 4). Pure: no clocks, no I/O; the runtime applies it (src/runtime/tool-digest.ts).
 */
import { type JsonElisions, digestJson } from "./digest-json.ts";
import { type TextElisions, digestLog, digestTable, tableHeader } from "./digest-text.ts";
import type { DigestMethod } from "./digest-tally.ts";
import type { TokenUsage, TurnCost } from "./usage.ts";

export type DigestKind = "json" | "table" | "log" | "text";

/** Fields of a result smaller than this stay as they are; larger ones are digested. */
export const FIELD_DIGEST_CHARS = 1024;

/** The budget a digest aims for: a quarter of what it reduces, at least 2 KiB, at most 12 KiB. */
export function digestBudget(chars: number): number {
  return Math.max(2048, Math.min(12 * 1024, Math.floor(chars / 4)));
}

/** The strategy and threshold a daemon digests tool results with (D352). */
export interface DigestSettings {
  strategy: DigestMethod;
  /** Results whose JSON is at most this many bytes reach the model unchanged. */
  thresholdBytes: number;
  /** Tools whose results always pass through (counted): a tool server's `no_digest` (D388). */
  exempt?: (tool: string) => boolean;
}

/** What a tool-result row records about its digest (D353). */
export interface DigestRecord {
  method: DigestMethod;
  /** The result as the tool returned it; present when the model read a digest instead. */
  raw?: Record<string, unknown>;
  rawBytes: number;
  digestBytes: number;
  rawTokensEst: number;
  digestTokensEst: number;
  /** Agentic: the summary call's model, usage and cost (counted into the session's usage). */
  subagent?: { model: string; usage: TokenUsage; cost: TurnCost };
}

/** The UTF-8 length of a string, without encoding it. */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) continue;
    if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 2; // a surrogate pair: 4 bytes for its 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}

/** Chars and UTF-8 bytes of a string as JSON text (quotes and escapes included), without encoding it. */
function stringSize(text: string, size: { chars: number; bytes: number }): void {
  let chars = text.length + 2;
  let bytes = text.length + 2;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code >= 0x20 && code < 0x7f && code !== 0x22 && code !== 0x5c) continue;
    if (
      code === 0x22 ||
      code === 0x5c ||
      code === 0x08 ||
      code === 0x0c ||
      code === 0x0a ||
      code === 0x0d ||
      code === 0x09
    ) {
      chars++;
      bytes++;
    } else if (code < 0x20) {
      chars += 5;
      bytes += 5;
    } else if (code < 0x80) continue;
    else if (code < 0x800) bytes += 1;
    else if (code >= 0xd800 && code <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 2; // a surrogate pair: 4 bytes for its 2 units
      i++;
    } else if (code >= 0xd800 && code <= 0xdfff) {
      chars += 5; // a lone surrogate is written \uXXXX
      bytes += 5;
    } else bytes += 2;
  }
  size.chars += chars;
  size.bytes += bytes;
}

function valueSize(value: unknown, size: { chars: number; bytes: number }): void {
  if (typeof value === "string") return stringSize(value, size);
  if (value === null || typeof value !== "object") {
    const text = JSON.stringify(value) ?? "null";
    size.chars += text.length;
    size.bytes += utf8Length(text);
    return;
  }
  if (typeof (value as { toJSON?: unknown }).toJSON === "function") {
    const text = JSON.stringify(value) ?? "null";
    size.chars += text.length;
    size.bytes += utf8Length(text);
    return;
  }
  size.chars += 2;
  size.bytes += 2;
  let first = true;
  const separator = () => {
    if (!first) {
      size.chars++;
      size.bytes++;
    }
    first = false;
  };
  if (Array.isArray(value)) {
    for (const item of value) {
      separator();
      valueSize(item === undefined || typeof item === "function" ? null : item, size);
    }
    return;
  }
  for (const [key, item] of Object.entries(value)) {
    if (item === undefined || typeof item === "function") continue;
    separator();
    stringSize(key, size);
    size.chars++;
    size.bytes++;
    valueSize(item, size);
  }
}

/** The size of a result as the model receives it (its JSON text), counted without writing it. */
export function measure(output: Record<string, unknown>): { bytes: number; tokens: number; chars: number } {
  const size = { chars: 0, bytes: 0 };
  valueSize(output, size);
  return { bytes: size.bytes, tokens: Math.ceil(size.chars / 4), chars: size.chars };
}

export interface TextReduction {
  text: string;
  kind: DigestKind;
  elisions: JsonElisions | TextElisions | { chars: number; elided_chars: number };
}

function parsedJson(text: string): { value: unknown } | undefined {
  const first = text.trimStart()[0];
  if (first !== "{" && first !== "[") return undefined;
  try {
    return { value: JSON.parse(text) };
  } catch {
    return undefined;
  }
}

/** The structural reduction of one text by its kind. */
export function reduceText(text: string, budgetChars = digestBudget(text.length)): TextReduction {
  const json = parsedJson(text);
  if (json !== undefined) {
    const digest = digestJson(json.value, budgetChars);
    return { text: digest.text, kind: "json", elisions: digest.elisions };
  }
  const lines = text.split("\n");
  if (lines.length > 3) {
    const header = tableHeader(lines);
    if (header !== undefined) {
      const digest = digestTable(lines, header, budgetChars);
      return { text: digest.text, kind: "table", elisions: digest.elisions };
    }
    const digest = digestLog(lines, budgetChars);
    return { text: digest.text, kind: "log", elisions: digest.elisions };
  }
  if (text.length <= budgetChars) return { text, kind: "text", elisions: { chars: text.length, elided_chars: 0 } };
  const head = Math.floor(budgetChars * 0.75);
  const tail = budgetChars - head;
  const elided = text.length - head - tail;
  return {
    text: `${text.slice(0, head)}…[${elided} chars elided]…${text.slice(text.length - tail)}`,
    kind: "text",
    elisions: { chars: text.length, elided_chars: elided },
  };
}

/** The structural reduction of any JSON value: a string by its kind, anything else as JSON. */
export function reduceValue(value: unknown, budgetChars: number): TextReduction {
  if (typeof value === "string") return reduceText(value, budgetChars);
  const digest = digestJson(value, budgetChars);
  return { text: digest.text, kind: "json", elisions: digest.elisions };
}

/** The fields of a result large enough to digest (largest first) and the rest, kept as they are. */
function splitFields(output: Record<string, unknown>): {
  large: [string, unknown, number][];
  small: Record<string, unknown>;
} {
  const large: [string, unknown, number][] = [];
  const small: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(output)) {
    const size = fieldText(value)?.length ?? JSON.stringify(value)?.length ?? 0;
    if (size > FIELD_DIGEST_CHARS) large.push([key, value, size]);
    else small[key] = value;
  }
  return { large, small };
}

/** What the model reads in place of a result (`digest` plus how to read it). */
export function wrapDigest(
  small: Record<string, unknown>,
  digest: string,
  method: DigestMethod,
  rawBytes: number,
  callId: string,
  meta: Record<string, unknown>,
): Record<string, unknown> {
  return {
    ...small,
    digest,
    method,
    raw_bytes: rawBytes,
    call_id: callId,
    digest_meta: {
      ...meta,
      note: "this result was reduced before you read it; the full result is kept by the daemon. If you need an elided part, call the tool again asking for less (a narrower path, filter, range or query).",
    },
  };
}

/** The text a field holds: a string, or the one string of a single-key object (MCP's `structured` echo). */
function fieldText(value: unknown): string | undefined {
  if (typeof value === "string") return value;
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const values = Object.values(value);
  return values.length === 1 && typeof values[0] === "string" ? values[0] : undefined;
}

/**
 * Large fields that repeat an earlier one (an MCP result's `structured` echoing its text `content`)
 * are named, not digested twice: `{field: the field it repeats}`.
 */
function dropRepeats(large: [string, unknown, number][]): {
  kept: [string, unknown, number][];
  repeats: Record<string, string>;
} {
  const kept: [string, unknown, number][] = [];
  const repeats: Record<string, string> = {};
  for (const field of large) {
    const text = fieldText(field[1]);
    const earlier = text === undefined ? undefined : kept.find(([, value]) => fieldText(value) === text);
    if (earlier) repeats[field[0]] = earlier[0];
    else kept.push(field);
  }
  return { kept, repeats };
}

/**
 * A result's structural digest: each large field reduced by its kind, the budget shared by their
 * sizes. One large field becomes `digest`; several become one text, each under a `## field`
 * heading. Undefined when no field is large (nothing to reduce).
 */
export function structuralDigest(
  output: Record<string, unknown>,
  callId: string,
  rawBytes: number,
): Record<string, unknown> | undefined {
  const split = splitFields(output);
  if (split.large.length === 0) return undefined;
  const { kept: large, repeats } = dropRepeats(split.large);
  const total = large.reduce((sum, [, , size]) => sum + size, 0);
  const budget = digestBudget(total);
  const parts = large.map(([key, value, size]) => ({
    key,
    reduced: reduceValue(value, Math.max(512, Math.floor((budget * size) / total))),
  }));
  const only = parts.length === 1 ? parts[0] : undefined;
  const text = only ? only.reduced.text : parts.map((part) => `## ${part.key}\n${part.reduced.text}`).join("\n\n");
  const meta: Record<string, unknown> = only
    ? { field: only.key, kind: only.reduced.kind, ...only.reduced.elisions }
    : {
        fields: Object.fromEntries(
          parts.map((part) => [part.key, { kind: part.reduced.kind, ...part.reduced.elisions }]),
        ),
      };
  if (Object.keys(repeats).length > 0) meta.repeats = repeats;
  return wrapDigest(split.small, text, "structural", rawBytes, callId, meta);
}
