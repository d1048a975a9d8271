/**
 * The builtin `fetch_url` tool (read-only): one HTTP GET of an http(s) URL, redirects followed
 * (at most 5), the body read as text up to the output cap (the rest is not downloaded). Hosts
 * that resolve to link-local or cloud-metadata addresses are refused, at every redirect hop:
 * fetch_url runs without a prompt, and instance credentials live there.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import * as v from "valibot";
import type { BuiltinTool, ToolContext, ToolOutcome } from "./builtin-tool.ts";

const FetchInput = v.object({
  url: v.pipe(
    v.string("url must be a string"),
    v.maxLength(8192, "url must be at most 8192 characters"),
    v.check((value) => /^https?:\/\//i.test(value) && URL.canParse(value), "url must be an absolute http or https URL"),
  ),
});

async function readHead(body: ReadableStream<Uint8Array>, cap: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let kept = 0;
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text: Buffer.concat(chunks).toString("utf8"), truncated: false };
      if (kept + value.byteLength > cap) {
        chunks.push(value.subarray(0, cap - kept));
        return { text: Buffer.concat(chunks).toString("utf8").replace(/\uFFFD$/, ""), truncated: true };
      }
      chunks.push(value);
      kept += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

const MAX_REDIRECTS = 5;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** Link-local (IPv4 169.254/16, IPv6 fe80::/10), unspecified, and known cloud metadata addresses. */
export function forbiddenAddress(address: string): boolean {
  const lower = address.toLowerCase();
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(lower)?.[1];
  const v4 = mapped ?? (isIP(lower) === 4 ? lower : undefined);
  if (v4 !== undefined) return v4.startsWith("169.254.") || v4.startsWith("0.") || v4 === "100.100.100.200";
  if (isIP(lower) !== 6) return false;
  return /^fe[89ab][0-9a-f]:/.test(lower) || lower === "::" || lower === "fd00:ec2::254";
}

/** Why this URL's host must not be fetched, if it must not. */
async function refusal(url: URL): Promise<string | undefined> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  let addresses: string[];
  try {
    addresses = isIP(host) ? [host] : (await lookup(host, { all: true })).map((entry) => entry.address);
  } catch (error) {
    return `fetch failed: ${host} does not resolve (${error instanceof Error ? error.message : String(error)})`;
  }
  const bad = addresses.find(forbiddenAddress);
  return bad === undefined ? undefined : `refused: ${host} resolves to ${bad}, a link-local or cloud-metadata address`;
}

/** GET with redirects followed by hand, so every hop's host is checked before it is contacted. */
async function guardedFetch(start: string, signal: AbortSignal): Promise<Response | string> {
  let url = new URL(start);
  for (let hop = 0; ; hop++) {
    const refused = await refusal(url);
    if (refused !== undefined) return refused;
    const response = await fetch(url, { signal, redirect: "manual", headers: { "user-agent": "spar-fetch_url" } });
    const location = response.headers.get("location");
    if (!REDIRECTS.has(response.status) || location === null) return response;
    await response.body?.cancel().catch(() => {});
    if (hop >= MAX_REDIRECTS) return `fetch failed: more than ${MAX_REDIRECTS} redirects`;
    url = new URL(location, url);
    if (url.protocol !== "http:" && url.protocol !== "https:") return `refused: redirect to a ${url.protocol} URL`;
  }
}

async function fetchUrl(input: v.InferOutput<typeof FetchInput>, context: ToolContext): Promise<ToolOutcome> {
  let response: Response;
  try {
    const answer = await guardedFetch(input.url, context.signal);
    if (typeof answer === "string") return { output: { url: input.url, error: answer }, isError: true };
    response = answer;
  } catch (error) {
    const reason = context.signal.aborted ? (context.signal.reason instanceof DOMException && context.signal.reason.name === "TimeoutError" ? `no answer within ${context.timeoutMs / 1000} s` : "the turn was cancelled") : error instanceof Error ? error.message : String(error);
    return { output: { url: input.url, error: `fetch failed: ${reason}` }, isError: true };
  }
  const body = response.body ? await readHead(response.body, context.capBytes) : { text: "", truncated: false };
  const output: Record<string, unknown> = { url: response.url || input.url, status: response.status, content_type: response.headers.get("content-type") ?? "", body: body.text };
  if (body.truncated) output.truncated = true;
  if (!response.ok) output.error = `HTTP ${response.status}`;
  return { output, isError: !response.ok };
}

export const fetchUrlTool: BuiltinTool<typeof FetchInput> = {
  name: "fetch_url",
  description: "HTTP GET an http(s) URL and return its status, content type and body as text (capped; `truncated` says when it was cut).",
  inputSchema: {
    type: "object",
    properties: { url: { type: "string", description: "Absolute http or https URL." } },
    required: ["url"],
    additionalProperties: false,
  },
  input: FetchInput,
  toolClass: "read-only",
  timeoutMs: 30_000,
  capBytes: 256 * 1024,
  run: fetchUrl,
};
