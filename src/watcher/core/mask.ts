/**
 * Masking of the inject surface (docs/watcher-pipeline.md#masking): credentials in cluster text
 * become `[REDACTED]`. Applied to messages and label values, never to keys or identifiers. Text
 * that matches nothing passes through unchanged. Pure.
 */

const REDACTED = "[REDACTED]";

const RULES: Array<[RegExp, (match: string, ...groups: string[]) => string]> = [
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, () => REDACTED],
  [/("private_key"\s*:\s*")(?:[^"\\]|\\.)*(")/g, (_, open: string, close: string) => `${open}${REDACTED}${close}`],
  [/\beyJ[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}\.[A-Za-z0-9_-]{6,}/g, () => REDACTED],
  [
    /\b(Bearer|Basic)(\s+)[A-Za-z0-9._~+/=-]{16,}/g,
    (_, scheme: string, space: string) => `${scheme}${space}${REDACTED}`,
  ],
  [/\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, () => REDACTED],
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+(@)/gi, (_, head: string, at: string) => `${head}${REDACTED}${at}`],
  [
    /(--?[A-Za-z0-9_-]*(?:password|passwd|secret|token|api[-_]?key|credential)[A-Za-z0-9_-]*)(=|\s+)([^\s"']+)/gi,
    (match: string, flag: string, separator: string) =>
      /-(name|ref|file|path|dir|id)$/i.test(flag) ? match : `${flag}${separator}${REDACTED}`,
  ],
];

export function maskText(text: string): string {
  let masked = text;
  for (const [pattern, replace] of RULES)
    masked = masked.replace(pattern, replace as (match: string, ...rest: unknown[]) => string);
  return masked;
}
