/**
 * The cross-origin allow-list (src/surfaces/http/cors-policy.ts) and the CSRF guard it widens:
 * exact origins only, nothing passes by default.
 */
import { expect, test } from "bun:test";
import { parseAllowedOrigins } from "../../../src/surfaces/http/cors-policy.ts";
import { checkCsrf } from "../../../src/surfaces/http/request-guards.ts";

const write = (origin: string) =>
  new Request("http://127.0.0.1:7781/agui/x", {
    method: "POST",
    headers: { origin, host: "127.0.0.1:7781", "content-type": "application/json" },
  });

test("origins must be exact scheme://host[:port]: paths, wildcards and other schemes are refused", () => {
  const parsed = parseAllowedOrigins(["https://App.Example.com", "http://localhost:3000/"], "--x");
  expect(parsed.ok && [...parsed.value]).toEqual(["https://app.example.com", "http://localhost:3000"]);
  for (const bad of ["https://*.example.com", "https://a.example.com/ui", "ftp://a.example.com", "a.example.com"])
    expect(parseAllowedOrigins([bad], "--x").ok).toBe(false);
});

test("the CSRF guard refuses a foreign origin unless it is allowed", () => {
  expect(() => checkCsrf(write("https://app.example.com"))).toThrow(/cross-origin request refused/);
  expect(() => checkCsrf(write("https://app.example.com"), new Set(["https://app.example.com"]))).not.toThrow();
  expect(() => checkCsrf(write("https://evil.example.com"), new Set(["https://app.example.com"]))).toThrow();
  expect(() => checkCsrf(write("null"), new Set(["https://app.example.com"]))).toThrow();
});
