/**
 * Where a pricing refresh reads from: an http(s) URL (fetched with a deadline and a size cap)
 * or a local file. Returns the parsed document or an error text; never throws.
 */
import { readFile, stat } from "node:fs/promises";
import { type Result, err, ok } from "../core/result.ts";
import { type PricingDocument, parsePricingDocument } from "./pricing-document.ts";
import { redactUrl } from "../net/redact-url.ts";
import { tracedFetch } from "../telemetry/client-spans.ts";

export type PricingSource = { kind: "url"; url: string } | { kind: "file"; path: string };

/** Large enough for LiteLLM's full map (about 1.5 MB today). */
export const MAX_PRICING_DOCUMENT_BYTES = 16 * 1024 * 1024;
export const PRICING_FETCH_TIMEOUT_MS = 10_000;

/** `http://` and `https://` values are URLs; anything else is a file path (already absolute). */
export function pricingSource(value: string): PricingSource {
  return /^https?:\/\//i.test(value) ? { kind: "url", url: value } : { kind: "file", path: value };
}

/** The source as it may be shown (a URL's credentials redacted). */
export function describeSource(source: PricingSource): string {
  return source.kind === "url" ? redactUrl(source.url) : source.path;
}

async function readUrl(url: string, timeoutMs: number): Promise<Result<string>> {
  const shown = redactUrl(url);
  let response: Response;
  try {
    response = await tracedFetch(url, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { accept: "application/json" },
    });
  } catch (error) {
    const reason =
      error instanceof Error && error.name === "TimeoutError"
        ? `no answer within ${timeoutMs} ms`
        : String(error instanceof Error ? error.message : error);
    return err(`fetching ${shown} failed: ${redactUrl(reason)}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    return err(`fetching ${shown} failed: HTTP ${response.status}`);
  }
  const declared = Number(response.headers.get("content-length") ?? "0");
  if (declared > MAX_PRICING_DOCUMENT_BYTES) {
    await response.body?.cancel();
    return err(`${shown} is larger than ${MAX_PRICING_DOCUMENT_BYTES} bytes`);
  }
  const text = await response.text();
  if (text.length > MAX_PRICING_DOCUMENT_BYTES)
    return err(`${shown} is larger than ${MAX_PRICING_DOCUMENT_BYTES} bytes`);
  return ok(text);
}

async function readPath(path: string): Promise<Result<string>> {
  try {
    const info = await stat(path);
    if (!info.isFile()) return err(`${path} is not a file`);
    if (info.size > MAX_PRICING_DOCUMENT_BYTES)
      return err(`${path} is larger than ${MAX_PRICING_DOCUMENT_BYTES} bytes`);
    return ok(await readFile(path, "utf8"));
  } catch (error) {
    return err(`reading ${path} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Read and parse the source's current document. */
export async function loadPricingDocument(
  source: PricingSource,
  timeoutMs = PRICING_FETCH_TIMEOUT_MS,
): Promise<Result<PricingDocument>> {
  const text = source.kind === "url" ? await readUrl(source.url, timeoutMs) : await readPath(source.path);
  if (!text.ok) return text;
  let document: unknown;
  try {
    document = JSON.parse(text.value);
  } catch (error) {
    return err(`${describeSource(source)} is not JSON: ${error instanceof Error ? error.message : String(error)}`);
  }
  const parsed = parsePricingDocument(document);
  return parsed.ok ? parsed : err(`${describeSource(source)}: ${parsed.error}`);
}
