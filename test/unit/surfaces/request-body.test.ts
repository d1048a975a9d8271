/**
 * The edge's body reader and validator: the size limit before parsing, strict UTF-8, malformed
 * JSON, and schema failures that name the field (or the array that should have been an object).
 */
import { expect, test } from "bun:test";
import * as v from "valibot";
import { readJsonBody, validate } from "../../../src/surfaces/http/request-body.ts";

const Inject = v.object({ message: v.string("message must be a string") });

function post(body: string | Uint8Array): Request {
  return new Request("http://local/x", { method: "POST", body, headers: { "content-type": "application/json" } });
}

test("an array where an object is expected is named as such, not as a missing field", () => {
  const result = validate(Inject, []);
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.error.message).toBe("invalid request body: must be a JSON object, got an array");
});

test("a wrong field type names the field", () => {
  const result = validate(Inject, { message: 5 });
  expect(result.ok).toBe(false);
  if (!result.ok) expect(result.error.message).toBe('invalid request body: field "message": message must be a string');
});

test("an array schema still accepts arrays", () => {
  const result = validate(v.array(v.string()), ["a"]);
  expect(result.ok).toBe(true);
});

test("bodies over the limit, invalid UTF-8 and malformed JSON are refused with their reason", async () => {
  const big = await readJsonBody(post("x".repeat(20)), 10);
  expect(big.ok ? "" : big.error.code).toBe("payload_too_large");
  const utf8 = await readJsonBody(post(new Uint8Array([0x7b, 0xff, 0x7d])));
  expect(utf8.ok ? "" : utf8.error.message).toBe("request body is not valid UTF-8");
  const malformed = await readJsonBody(post("{"));
  expect(malformed.ok ? "" : malformed.error.message).toStartWith("malformed JSON:");
  const empty = await readJsonBody(post("  "));
  expect(empty).toEqual({ ok: true, value: undefined });
});

test("a schema's own message for a non-object still wins", () => {
  const result = validate(v.object({ model: v.string() }, "the body must be a JSON object {model}"), [1]);
  expect(result.ok ? "" : result.error.message).toBe("invalid request body: the body must be a JSON object {model}");
});
