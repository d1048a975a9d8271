/**
 * The base URL a client used to reach this listener, from the request's scheme and Host
 * header; "" when no Host was sent (callers then use bare paths).
 */
export function requestBaseUrl(request: Request): string {
  const host = request.headers.get("host");
  if (!host) return "";
  return `${new URL(request.url).protocol}//${host}`;
}
