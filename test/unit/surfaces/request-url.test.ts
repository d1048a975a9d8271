/**
 * Host validation and URL reading at the edge (D159): host[:port] with a port in range, no user
 * info, bracketed IPv6; a request URL Bun could not make absolute still yields its path and query.
 */
import { expect, test } from "bun:test";
import { requestUrl, validHost } from "../../../src/surfaces/http/request-url.ts";

test("validHost accepts host[:port] a URL can carry and nothing else", () => {
  for (const host of ["localhost", "127.0.0.1:7777", "spar.example.com:443", "[::1]", "[::1]:8080", "a-b.c:65535"])
    expect(validHost(host)).toBe(host);
  for (const host of ["", "a b", "[::1", "x:99999", "x:65536", "user@host", "host:port", "h/ost", null, undefined])
    expect(validHost(host)).toBeUndefined();
});

test("requestUrl reads path and query from a bare or unparseable request.url", () => {
  const bare = { url: "/sessions/default/events?since=4" } as Request;
  expect(requestUrl(bare).pathname).toBe("/sessions/default/events");
  expect(requestUrl(bare).searchParams.get("since")).toBe("4");
  const badHost = { url: "http://[::1/healthz?x=1" } as Request;
  expect(requestUrl(badHost).pathname).toBe("/healthz");
  expect(requestUrl({ url: "http://x:99999" } as Request).pathname).toBe("/");
  expect(requestUrl(new Request("http://127.0.0.1:7777/a?b=c")).href).toBe("http://127.0.0.1:7777/a?b=c");
});
