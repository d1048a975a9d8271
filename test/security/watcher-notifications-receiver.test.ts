/**
 * The notifications source's CloudEvents receiver (D402) is a listener of its own on the shared
 * guards: every refusal is a JSON `{error}` and emits nothing. No token or a wrong one is 401 on
 * every path (an unknown one too, so paths are not disclosed); a malformed Host is 400; a body
 * over 64 KiB is 413 whether declared or chunked; a media type other than JSON or CloudEvents
 * JSON is 415; malformed JSON, a JSON body that is not a CloudEvent, a batch and an empty body are
 * 400; a browser from another origin is 403 even with the token.
 */
import { afterAll, afterEach, beforeAll, expect, test } from "bun:test";
import { CloudEvent, HTTP } from "cloudevents";
import { watcherConfigFromArgv } from "../../src/cli/watcher-config.ts";
import { createLogger } from "../../src/telemetry/logger.ts";
import type { Signal } from "../../src/watcher/core/signal.ts";
import {
  NOTIFICATIONS_BODY_LIMIT,
  type NotificationsReceiver,
} from "../../src/watcher/sources/notifications-receiver.ts";
import { SOURCE_RUNNERS } from "../../src/watcher/sources/source-registry.ts";
import { rawHttp } from "../support/raw-http.ts";

const TOKEN = "receiver-token-abcdef0123";
const emitted: Signal[] = [];
let receiver: NotificationsReceiver;
let base: string;
let port: number;

beforeAll(async () => {
  const parsed = watcherConfigFromArgv([
    "--dry-run",
    "--sources=notifications",
    "--notifications-subscription=gke-notes",
    "--notifications-addr=127.0.0.1:0",
    "--notifications-token-env=NOTES_TOKEN",
  ]);
  if (!parsed.ok) throw new Error(parsed.error);
  receiver = (SOURCE_RUNNERS.notifications ?? (() => undefined as never))({
    values: parsed.value.values,
    env: { NOTES_TOKEN: TOKEN },
    connection: { server: "http://127.0.0.1:1", tls: {}, token: () => undefined },
    without: new Set(),
    emit: (signal) => emitted.push(signal),
    logger: createLogger("error"),
    onRestart: () => {},
  }) as NotificationsReceiver;
  await receiver.start();
  base = receiver.url ?? "";
  port = Number(new URL(base).port);
});
afterAll(() => receiver.stop());
// Nothing any refusal sent reached the pipeline.
afterEach(() => expect(emitted).toEqual([]));

const upgrade = new CloudEvent({
  id: "sec-1",
  source: "//container.googleapis.com/projects/p/locations/l/clusters/c",
  type: "type.googleapis.com/google.container.v1beta1.UpgradeEvent",
  data: { targetVersion: "1.31" },
});
const structured = HTTP.structured(upgrade);
const CE_TYPE = "application/cloudevents+json";

async function post(headers: Record<string, string>, body: string | ReadableStream, path = "/notifications/gke-notes") {
  const response = await fetch(`${base}${path}`, { method: "POST", headers, body });
  return { status: response.status, headers: response.headers, body: (await response.json()) as { error?: string } };
}

test("no token: 401 naming the header and the variable, on the route and on an unknown path", async () => {
  for (const path of ["/notifications/gke-notes", "/notifications/other", "/anything"]) {
    const answer = await post({ "content-type": CE_TYPE }, structured.body as string, path);
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toBe('Bearer realm="notifications"');
    expect(answer.body.error).toBe(
      "missing or wrong notifications token: send the value of the variable --notifications-token-env names as Authorization: Bearer <token>",
    );
  }
});

test("a wrong token (or one in the query string) is 401", async () => {
  for (const authorization of [`Bearer ${TOKEN}x`, "Bearer ", `Basic ${btoa(`x:${TOKEN}`)}`, TOKEN]) {
    const answer = await post({ "content-type": CE_TYPE, authorization }, structured.body as string);
    expect(answer.status).toBe(401);
  }
  const query = await fetch(`${base}/notifications/gke-notes?token=${TOKEN}`, {
    method: "POST",
    headers: { "content-type": CE_TYPE },
    body: structured.body as string,
  });
  expect(query.status).toBe(401);
});

const authorized = (contentType: string) => ({ "content-type": contentType, authorization: `Bearer ${TOKEN}` });

test("a malformed Host is 400 before anything else", async () => {
  const body = structured.body as string;
  const answer = await rawHttp(
    port,
    `POST /notifications/gke-notes HTTP/1.1\r\nHost: evil host:1:2\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: ${CE_TYPE}\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
  );
  expect(answer.status).toBe(400);
  expect(JSON.parse(answer.body)).toEqual({ error: expect.stringContaining("invalid Host header") });
});

test("a body over 64 KiB is 413, declared or chunked", async () => {
  const big = JSON.stringify({
    ...JSON.parse(structured.body as string),
    data: { pad: "x".repeat(NOTIFICATIONS_BODY_LIMIT) },
  });
  const declared = await post(authorized(CE_TYPE), big);
  expect(declared.status).toBe(413);
  expect(declared.body.error).toBe(`request body is larger than ${NOTIFICATIONS_BODY_LIMIT} bytes`);
  const chunked = await post(
    authorized(CE_TYPE),
    new ReadableStream({
      start(controller) {
        for (let i = 0; i < 20; i++) controller.enqueue(new TextEncoder().encode("x".repeat(4096)));
        controller.close();
      },
    }),
  );
  expect(chunked.status).toBe(413);
});

test("another media type is 415 naming the two accepted", async () => {
  const answer = await post(authorized("text/plain"), structured.body as string);
  expect(answer.status).toBe(415);
  expect(answer.body.error).toBe(
    "state-changing requests need Content-Type: application/json or application/cloudevents+json",
  );
});

test("malformed JSON, not a CloudEvent, a batch, an empty body: 400 naming why", async () => {
  const cases: Array<[Record<string, string>, string, string]> = [
    [authorized(CE_TYPE), "{not json", "malformed JSON"],
    // Binary mode without ce- headers: JSON, but no CloudEvent.
    [authorized("application/json"), JSON.stringify({ targetVersion: "1.31" }), "not a CloudEvent"],
    // Structured mode missing source and type.
    [authorized(CE_TYPE), JSON.stringify({ specversion: "1.0", id: "x" }), "not a CloudEvent"],
    [authorized(CE_TYPE), JSON.stringify([JSON.parse(structured.body as string)]), "JSON object"],
    [authorized(CE_TYPE), "", "request body is empty"],
  ];
  for (const [headers, body, why] of cases) {
    const answer = await post(headers, body);
    expect(answer.status).toBe(400);
    expect(answer.body.error).toContain(why);
  }
});

test("a browser on another origin is 403 even with the token; GET is 405", async () => {
  const answer = await post({ ...authorized(CE_TYPE), origin: "https://evil.example" }, structured.body as string);
  expect(answer.status).toBe(403);
  const get = await fetch(`${base}/notifications/gke-notes`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(get.status).toBe(405);
  expect(((await get.json()) as { error: string }).error).toBeString();
});

test("control: the same event with the token and its media type is accepted and emitted", async () => {
  const answer = await post(authorized(CE_TYPE), structured.body as string);
  expect(answer.status).toBe(202);
  expect(emitted.map((signal) => signal.kind)).toEqual(["notification.upgrade"]);
  emitted.length = 0;
});
