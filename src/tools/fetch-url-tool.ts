/**
 * The builtin `fetch_url` tool (read-only): one HTTP GET of an http(s) URL through the outbound
 * guard (src/net/outbound-guard.ts: the connected address of every hop is checked, loopback,
 * private, link-local and metadata ranges refused unless the operator's allow list opens them;
 * at most 5 redirects), the body read as text up to the output cap (the rest is not downloaded).
 * fetch_url runs without a prompt, so the guard is what keeps a model off instance credentials
 * and internal services. URLs in its results and errors are redacted (no userinfo).
 */
import * as v from "valibot";
import type { OutboundAnswer } from "../net/outbound-guard.ts";
import { redactUrl } from "../net/redact-url.ts";
import type { BuiltinTool, ToolContext, ToolOutcome } from "./builtin-tool.ts";

const FetchInput = v.object({
  url: v.pipe(
    v.string("url must be a string"),
    v.maxLength(8192, "url must be at most 8192 characters"),
    v.check((value) => /^https?:\/\//i.test(value) && URL.canParse(value), "url must be an absolute http or https URL"),
    v.description("Absolute http or https URL."),
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
        return {
          text: Buffer.concat(chunks)
            .toString("utf8")
            .replace(/\uFFFD$/, ""),
          truncated: true,
        };
      }
      chunks.push(value);
      kept += value.byteLength;
    }
  } finally {
    await reader.cancel().catch(() => {});
  }
}

/** Why the call failed, for the model: an abort says which one; any URL in a message is redacted. */
function failureReason(error: unknown, context: ToolContext): string {
  if (context.signal.aborted) {
    const timedOut = context.signal.reason instanceof DOMException && context.signal.reason.name === "TimeoutError";
    return timedOut ? `no answer within ${context.timeoutMs / 1000} s` : "the turn was cancelled";
  }
  return redactUrl(error instanceof Error ? error.message : String(error));
}

async function fetchUrl(input: v.InferOutput<typeof FetchInput>, context: ToolContext): Promise<ToolOutcome> {
  const shown = redactUrl(input.url);
  let answer: OutboundAnswer;
  try {
    answer = await context.outbound.fetch(input.url, {
      signal: context.signal,
      headers: { "user-agent": "spar-fetch_url" },
    });
  } catch (error) {
    return { output: { url: shown, error: `fetch failed: ${failureReason(error, context)}` }, isError: true };
  }
  if (!answer.ok) {
    const error =
      answer.reason === "unresolved" || answer.reason === "redirect-limit"
        ? `fetch failed: ${answer.message}`
        : answer.message;
    return { output: { url: shown, error }, isError: true };
  }
  const response = answer.response;
  const body = response.body ? await readHead(response.body, context.capBytes) : { text: "", truncated: false };
  const output: Record<string, unknown> = {
    url: redactUrl(answer.url),
    status: response.status,
    content_type: response.headers.get("content-type") ?? "",
    body: body.text,
  };
  if (body.truncated) output.truncated = true;
  if (!response.ok) output.error = `HTTP ${response.status}`;
  return { output, isError: !response.ok };
}

export const fetchUrlTool: BuiltinTool<typeof FetchInput> = {
  name: "fetch_url",
  description:
    "HTTP GET an http(s) URL and return its status, content type and body as text (capped; `truncated` says when it was cut).",
  input: FetchInput,
  toolClass: "read-only",
  timeoutMs: 30_000,
  capBytes: 256 * 1024,
  run: fetchUrl,
};
