/**
 * Reading request bodies at the edge: the size limit applies before parsing, a body must arrive
 * whole within its deadline (408; connection-deadlines.ts), the media type is checked on every
 * write, malformed JSON and schema failures become 400s naming what was wrong.
 * Returns results; never throws on bad input.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { type Result, err, ok } from "../../core/result.ts";

export const WRITE_BODY_LIMIT = 8 * 1024;

/**
 * How deep a request body may nest. No request of ours needs more than a few levels; a deeper body
 * (8 KiB of `[` is 8,000 levels) is refused before any schema or error message walks it.
 */
export const MAX_BODY_DEPTH = 64;

const strictUtf8 = new TextDecoder("utf-8", { fatal: true });

/** Whether the body is JSON: `application/json`, or one of the JSON media types a listener adds (`application/cloudevents+json`). */
export function isJsonContentType(request: Request, extra: readonly string[] = []): boolean {
  const header = request.headers.get("content-type");
  if (!header) return false;
  const mediaType = header.split(";", 1)[0]?.trim().toLowerCase() ?? "";
  return mediaType === "application/json" || extra.includes(mediaType);
}

/**
 * Read a JSON body of at most `limit` bytes. Resolves `undefined` for an empty body, so
 * callers decide whether one is required.
 */
export async function readJsonBody(
  request: Request,
  limit: number = WRITE_BODY_LIMIT,
  deadlineMs?: number,
): Promise<Result<unknown, SparError>> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  const tooLarge = () => err(new SparError("payload_too_large", `request body is larger than ${limit} bytes`));
  if (declared > limit) return tooLarge();
  let bytes: Uint8Array | undefined | "late";
  try {
    bytes = await withinDeadline(readCapped(request, limit), deadlineMs);
  } catch (error) {
    return err(new SparError("bad_request", `request body could not be read: ${String(error)}`));
  }
  if (bytes === "late")
    return err(
      new SparError(
        "request_timeout",
        `request body did not arrive whole within ${Math.round((deadlineMs ?? 0) / 1000)} s`,
      ),
    );
  if (bytes === undefined) return tooLarge();
  if (bytes.byteLength === 0) return ok(undefined);
  let text: string;
  try {
    text = strictUtf8.decode(bytes);
  } catch {
    return err(new SparError("bad_request", "request body is not valid UTF-8"));
  }
  if (text.trim() === "") return ok(undefined);
  let value: unknown;
  try {
    value = JSON.parse(text) as unknown;
  } catch (error) {
    return err(new SparError("bad_request", `malformed JSON: ${(error as Error).message}`));
  }
  if (nestsDeeperThan(value, MAX_BODY_DEPTH)) {
    return err(new SparError("bad_request", `invalid request body: nested deeper than ${MAX_BODY_DEPTH} levels`));
  }
  return ok(value);
}

/** Whether a parsed JSON value nests deeper than `limit` arrays and objects (stops at the limit). */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  if (value === null || typeof value !== "object") return false;
  if (limit === 0) return true;
  const children = Array.isArray(value) ? value : Object.values(value);
  for (const child of children) if (nestsDeeperThan(child, limit - 1)) return true;
  return false;
}

/**
 * The read, or "late" once `deadlineMs` passed first (no deadline: the read). A late body is left
 * unread: the answer goes out and Bun closes the connection.
 */
async function withinDeadline<T>(read: Promise<T>, deadlineMs: number | undefined): Promise<T | "late"> {
  if (deadlineMs === undefined) return read;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), deadlineMs);
  });
  try {
    return await Promise.race([read, late]);
  } finally {
    clearTimeout(timer);
    read.catch(() => {});
  }
}

/**
 * The body's bytes, or undefined past `limit`. A body with a declared length (already checked
 * against the limit) is framed by it, so it is read whole in one native call; a chunked body
 * announces no length and is read as it arrives, given up past `limit` (Bun's own cap is lifted so
 * that every 413 is ours and JSON). The stream reader costs far more per request: at a burst of
 * 1,000 approvals it was a quarter of the main thread.
 */
async function readCapped(request: Request, limit: number): Promise<Uint8Array | undefined> {
  if (!request.body) return new Uint8Array(0);
  if (request.headers.has("content-length") && !request.headers.has("transfer-encoding")) {
    const bytes = new Uint8Array(await request.arrayBuffer());
    return bytes.byteLength > limit ? undefined : bytes;
  }
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      total += value.byteLength;
      if (total > limit) return undefined;
      chunks.push(value);
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
  return chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks);
}

/** Validate with a valibot schema; the error names the offending field. */
export function validate<TSchema extends v.GenericSchema>(
  schema: TSchema,
  input: unknown,
): Result<v.InferOutput<TSchema>, SparError> {
  // valibot reads an array's missing keys as absent fields ("field message: Invalid key"); name the
  // real mistake, in the schema's own words when it has them.
  if (Array.isArray(input) && schema.type.endsWith("object")) {
    const ownMessage = (schema as { message?: unknown }).message;
    const what = typeof ownMessage === "string" ? ownMessage : "must be a JSON object, got an array";
    return err(new SparError("bad_request", `invalid request body: ${what}`));
  }
  const result = v.safeParse(schema, input);
  if (result.success) return ok(result.output);
  const issue = result.issues[0];
  const path = issue ? v.getDotPath(issue) : null;
  const where = path ? `field ${JSON.stringify(path)}: ` : "";
  return err(new SparError("bad_request", `invalid request body: ${where}${issue?.message ?? "invalid"}`));
}
