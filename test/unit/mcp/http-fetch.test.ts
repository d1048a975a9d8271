/**
 * The explanation a refused tool-server request carries: the JSON body under 32 KiB, else the
 * status line only (non-JSON type, a declared or actual size at the limit, unparseable JSON).
 */
import { expect, test } from "bun:test";
import { ERROR_BODY_LIMIT, explainStatus } from "../../../src/mcp/http-fetch.ts";

const answer = (body: string, type: string, status = 400, headers: Record<string, string> = {}) =>
  new Response(body, { status, statusText: "Bad Request", headers: { "content-type": type, ...headers } });

test("JSON under 32 KiB is carried, compacted; +json media types count", async () => {
  expect(await explainStatus(answer('{ "error": "bad key" }', "application/json; charset=utf-8"))).toBe(
    'HTTP 400 Bad Request: {"error":"bad key"}',
  );
  expect(await explainStatus(answer('{"title":"nope"}', "application/problem+json"))).toBe(
    'HTTP 400 Bad Request: {"title":"nope"}',
  );
});

test("anything else is the status line only", async () => {
  expect(await explainStatus(answer("<h1>oops</h1>", "text/html"))).toBe("HTTP 400 Bad Request");
  expect(await explainStatus(answer("{not json", "application/json"))).toBe("HTTP 400 Bad Request");
  expect(await explainStatus(answer(JSON.stringify({ e: "x".repeat(ERROR_BODY_LIMIT) }), "application/json"))).toBe(
    "HTTP 400 Bad Request",
  );
  expect(
    await explainStatus(answer("{}", "application/json", 400, { "content-length": String(ERROR_BODY_LIMIT) })),
  ).toBe("HTTP 400 Bad Request");
});
