/**
 * The base URL a client used to reach this listener, from the request's scheme and Host
 * header; "" when no usable Host was sent (callers then use bare paths).
 */
import { requestUrl, validHost } from "./request-url.ts";

export function requestBaseUrl(request: Request): string {
  const host = validHost(request.headers.get("host"));
  if (!host) return "";
  return `${requestUrl(request).protocol}//${host}`;
}
