/**
 * URLs as they may appear in a log line, a tool result or an error: the userinfo
 * (`user:password@`) replaced by `***`, so a credential written into a URL never shows in clear,
 * and so is the value of a `password` or `sslpassword` query parameter (libpq's spelling, which a
 * postgres:// URL may carry, D483). Text that is not a URL is searched for `scheme://userinfo@`
 * and those parameters and redacted the same way, so an error message that quotes a URL can go
 * through here too. Pure.
 */

const USERINFO_IN_TEXT = /\b([a-z][a-z0-9+.-]*:\/\/)[^\s/?#@"'<>]*@/gi;
/**
 * A password query parameter inside text: `?password=...` or `&sslpassword=...`, up to the next
 * separator (a comma or a parenthesis after it goes too: better than a password's tail left). One
 * already `***` is left as it is, so redacting twice (a shown URL, then the logger) changes nothing.
 */
const PASSWORD_PARAM_IN_TEXT = /([?&](?:ssl)?password=)(?!\*\*\*(?:[&#\s"'<>,)]|$))[^&#\s"'<>]*/gi;
const PASSWORD_PARAM = /^(ssl)?password$/i;

/** The URL with any userinfo and password parameter replaced by `***`; other text with every embedded one redacted. */
export function redactUrl(url: string | URL): string {
  if (url instanceof URL) return redactParsed(url);
  if (URL.canParse(url) && !/\s/.test(url.trim())) {
    const parsed = new URL(url);
    return hasSecret(parsed) ? redactParsed(parsed) : url;
  }
  return url.replace(USERINFO_IN_TEXT, "$1***@").replace(PASSWORD_PARAM_IN_TEXT, "$1***");
}

function passwordParams(url: URL): string[] {
  return [...url.searchParams.keys()].filter((name) => PASSWORD_PARAM.test(name));
}

function hasSecret(url: URL): boolean {
  return url.username !== "" || url.password !== "" || passwordParams(url).length > 0;
}

function redactParsed(url: URL): string {
  if (!hasSecret(url)) return url.href;
  const copy = new URL(url.href);
  if (copy.username !== "" || copy.password !== "") {
    copy.password = "";
    copy.username = "***";
  }
  for (const name of passwordParams(copy)) copy.searchParams.set(name, "***");
  return copy.href;
}
