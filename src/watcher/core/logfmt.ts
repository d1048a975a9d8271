/**
 * The logfmt line writer of the enrichment bundle (docs/watcher-pipeline.md#enrichment-bundle):
 * envelope keys first in a fixed order and only when non-empty, then detail keys; a value is quoted
 * (Go strconv.Quote style) only when it holds a space, `=`, `"`, a control character or DEL. Values
 * are masked. Pure.
 */
import { maskText } from "./mask.ts";

export interface LineEnvelope {
  kind: string;
  severity?: string;
  namespace?: string;
  kind_of_object?: string;
  name?: string;
  reason?: string;
  message?: string;
  fingerprint?: string;
}

const ENVELOPE_ORDER = [
  "kind",
  "severity",
  "namespace",
  "kind_of_object",
  "name",
  "reason",
  "message",
  "fingerprint",
] as const;

export function quoteValue(value: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what logfmt must quote and escape.
  if (!/[\s="\u0000-\u001f\u007f]/.test(value)) return value;
  // biome-ignore lint/suspicious/noControlCharactersInRegex: as above.
  return `"${value.replace(/[\\"\u0000-\u001f\u007f]/g, (char) => {
    if (char === "\\") return "\\\\";
    if (char === '"') return '\\"';
    if (char === "\n") return "\\n";
    if (char === "\t") return "\\t";
    if (char === "\r") return "\\r";
    return `\\x${char.charCodeAt(0).toString(16).padStart(2, "0")}`;
  })}"`;
}

export function logfmtLine(
  envelope: LineEnvelope,
  details: ReadonlyArray<readonly [string, string | number]> = [],
): string {
  const parts: string[] = [];
  for (const key of ENVELOPE_ORDER) {
    const value = envelope[key];
    if (value !== undefined && value !== "") parts.push(`${key}=${quoteValue(maskText(value))}`);
  }
  for (const [key, value] of details) {
    const text = String(value);
    if (text !== "") parts.push(`${key}=${quoteValue(maskText(text))}`);
  }
  return `${parts.join(" ")}\n`;
}
