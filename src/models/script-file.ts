/**
 * Parser of scripted-model files (D15): JSON Lines of `{"request": {...}, "responses": [...]}`,
 * `#` lines are comments, blank lines skipped. Keys are accepted in lowerCamel or PascalCase.
 * Returns a Result; never throws on bad input.
 */
import { type Result, err, ok } from "../core/result.ts";

export interface ScriptedPart {
  text?: string;
  functionCall?: { id?: string; name: string; args: Record<string, unknown> };
}

export interface ScriptedUsage {
  promptTokenCount: number;
  candidatesTokenCount: number;
  totalTokenCount?: number;
  cachedContentTokenCount: number;
  /** spar extension: input tokens billed as cache writes. */
  cacheWriteTokenCount: number;
  thoughtsTokenCount: number;
  toolUsePromptTokenCount: number;
}

export interface ScriptedResponse {
  parts: ScriptedPart[];
  turnComplete: boolean;
  finishReason?: string;
  usage?: ScriptedUsage;
  /** spar extension: fail the model call with this error (status like "429" or "UNAVAILABLE"). */
  error?: { message: string; status?: string };
  /** spar extension: wait this long before yielding the response. */
  delayMs?: number;
  /** spar extension: crash the turn worker with an uncaught error (fault-injection tests). */
  crash?: boolean;
  /** spar extension: spin the turn worker's thread in a synchronous loop, forever (fault injection). */
  spin?: boolean;
}

export interface ScriptedTurn {
  line: number;
  /** Recorded request contents (genai shape), compared in strict mode; undefined when absent. */
  contents: unknown;
  responses: ScriptedResponse[];
}

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Look a key up in lowerCamel or PascalCase. */
function field(object: Json, key: string): unknown {
  if (key in object) return object[key];
  const pascal = key.charAt(0).toUpperCase() + key.slice(1);
  return object[pascal];
}

function num(value: unknown): number {
  return typeof value === "number" && Number.isFinite(value) && value >= 0 ? Math.floor(value) : 0;
}

function parsePart(raw: unknown): Result<ScriptedPart> {
  if (!isObject(raw)) return err("a part must be an object");
  const part: ScriptedPart = {};
  const text = field(raw, "text");
  if (typeof text === "string") part.text = text;
  const call = field(raw, "functionCall");
  if (call !== undefined) {
    if (!isObject(call)) return err("functionCall must be an object");
    const name = field(call, "name");
    if (typeof name !== "string" || name === "") return err("functionCall.name must be a non-empty string");
    const args = field(call, "args") ?? {};
    if (!isObject(args)) return err("functionCall.args must be an object");
    const id = field(call, "id");
    part.functionCall = typeof id === "string" && id !== "" ? { id, name, args } : { name, args };
  }
  return ok(part);
}

function parseUsage(raw: unknown): ScriptedUsage | undefined {
  if (!isObject(raw)) return undefined;
  const total = field(raw, "totalTokenCount");
  const usage: ScriptedUsage = {
    promptTokenCount: num(field(raw, "promptTokenCount")),
    candidatesTokenCount: num(field(raw, "candidatesTokenCount")),
    cachedContentTokenCount: num(field(raw, "cachedContentTokenCount")),
    cacheWriteTokenCount: num(field(raw, "cacheWriteTokenCount")),
    thoughtsTokenCount: num(field(raw, "thoughtsTokenCount")),
    toolUsePromptTokenCount: num(field(raw, "toolUsePromptTokenCount")),
  };
  if (typeof total === "number") usage.totalTokenCount = num(total);
  return usage;
}

function parseResponse(raw: unknown): Result<ScriptedResponse> {
  if (!isObject(raw)) return err("each response must be an object");
  const response: ScriptedResponse = { parts: [], turnComplete: field(raw, "turnComplete") === true };
  const content = field(raw, "content");
  if (content !== undefined && content !== null) {
    if (!isObject(content)) return err("content must be an object");
    const parts = field(content, "parts") ?? [];
    if (!Array.isArray(parts)) return err("content.parts must be an array");
    for (const rawPart of parts) {
      const part = parsePart(rawPart);
      if (!part.ok) return part;
      response.parts.push(part.value);
    }
  }
  const finishReason = field(raw, "finishReason");
  if (typeof finishReason === "string") response.finishReason = finishReason;
  const usage = parseUsage(field(raw, "usageMetadata"));
  if (usage) response.usage = usage;
  const error = field(raw, "error");
  if (error !== undefined) {
    if (!isObject(error) || typeof field(error, "message") !== "string") return err("error must be {message, status?}");
    const status = field(error, "status");
    response.error = {
      message: field(error, "message") as string,
      ...(typeof status === "string" || typeof status === "number" ? { status: String(status) } : {}),
    };
  }
  if (field(raw, "crash") === true) response.crash = true;
  if (field(raw, "spin") === true) response.spin = true;
  const delay = field(raw, "delayMs");
  if (typeof delay === "number" && delay > 0) response.delayMs = delay;
  return ok(response);
}

function parseTurn(line: string, lineNumber: number): Result<ScriptedTurn> {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch (error) {
    return err((error as Error).message);
  }
  if (!isObject(raw)) return err("a turn must be a JSON object");
  const responses = field(raw, "responses");
  if (!Array.isArray(responses)) return err("responses must be an array");
  const turn: ScriptedTurn = { line: lineNumber, contents: undefined, responses: [] };
  const request = field(raw, "request");
  if (isObject(request)) turn.contents = field(request, "contents");
  for (const rawResponse of responses) {
    const response = parseResponse(rawResponse);
    if (!response.ok) return response;
    turn.responses.push(response.value);
  }
  return ok(turn);
}

/** Parse a whole script. Errors read `<path>: line N: <why>` or `<path>: no turns found`. */
export function parseScript(path: string, text: string): Result<ScriptedTurn[]> {
  const turns: ScriptedTurn[] = [];
  const lines = text.split("\n");
  for (let index = 0; index < lines.length; index++) {
    const line = (lines[index] ?? "").trim();
    if (line === "" || line.startsWith("#")) continue;
    const turn = parseTurn(line, index + 1);
    if (!turn.ok) return err(`${path}: line ${index + 1}: ${turn.error}`);
    turns.push(turn.value);
  }
  if (turns.length === 0) return err(`${path}: no turns found`);
  return ok(turns);
}
