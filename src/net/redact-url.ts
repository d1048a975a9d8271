/**
 * URLs as they may appear in a log line, a tool result or an error: the userinfo
 * (`user:password@`) replaced by `***`, so a credential written into a URL never shows in clear.
 * Text that is not a URL is searched for `scheme://userinfo@` and redacted the same way, so an
 * error message that quotes a URL can go through here too. Pure.
 */

const USERINFO_IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]*@/gi;

/** The URL with any userinfo replaced by `***`; other text with every embedded `scheme://userinfo@` redacted. */
export function redactUrl(url: string | URL): string {
  if (url instanceof URL) return redactParsed(url);
  if (URL.canParse(url) && !/\s/.test(url.trim())) {
    const parsed = new URL(url);
    return parsed.username === "" && parsed.password === "" ? url : redactParsed(parsed);
  }
  return url.replace(USERINFO_IN_TEXT, "$1***@");
}

function redactParsed(url: URL): string {
  if (url.username === "" && url.password === "") return url.href;
  const copy = new URL(url.href);
  copy.password = "";
  copy.username = "***";
  return copy.href;
}
