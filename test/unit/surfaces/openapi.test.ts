/**
 * The attach API's OpenAPI 3.1 document (GET /openapi.json): valid against the OpenAPI schema
 * (a maintained validator), every route the app serves is in it with its responses, the request
 * bodies carry their schemas, it sits behind the same authentication as the API, and a snapshot
 * makes every wire change a visible diff (`bun test --update-snapshots` after a deliberate one).
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Validator } from "@seriousme/openapi-schema-validator";
import { PeerHub } from "../../../src/surfaces/peers/peer-hub.ts";
import { type InProcessApp, inProcessApp } from "../../support/attach-app.ts";

interface Operation {
  responses: Record<string, unknown>;
  requestBody?: { content: Record<string, { schema: Record<string, unknown> }> };
}
type Document = { openapi: string; paths: Record<string, Record<string, Operation>> };

let open: InProcessApp;
let gated: InProcessApp;
let document: Document;

beforeAll(async () => {
  const hub = PeerHub.open({ stateFile: undefined, log: { info: () => {}, warn: () => {}, error: () => {} } });
  if (!hub.ok) throw new Error(hub.error);
  open = await inProcessApp({ peerHub: hub.value });
  gated = await inProcessApp({ transport: { token: "tok", readonly: false } });
  const response = await open.app.handle(new Request("http://localhost/openapi.json"));
  expect(response.status).toBe(200);
  document = (await response.json()) as Document;
});
afterAll(async () => {
  await Promise.all([open.close(), gated.close()]);
});

const openApiPath = (path: string) => path.replace(/:(\w+)/g, "{$1}");

describe("GET /openapi.json", () => {
  test("is a valid OpenAPI 3.1 document", async () => {
    const result = await new Validator().validate(document as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(document.openapi).toStartWith("3.1");
  });

  test("lists every route the app serves, each with a success answer and its refusals", () => {
    const missing: string[] = [];
    for (const route of open.app.routes) {
      if (route.path === "/openapi.json") continue;
      const operation = document.paths[openApiPath(route.path)]?.[route.method.toLowerCase()];
      if (!operation) {
        missing.push(`${route.method} ${route.path}`);
        continue;
      }
      const statuses = Object.keys(operation.responses);
      if (!statuses.some((status) => status.startsWith("2") || status === "501"))
        missing.push(`${route.method} ${route.path}: no answer`);
      const publicPath = route.path === "/healthz" || route.path.startsWith("/.well-known/");
      if (!publicPath && !statuses.includes("401")) missing.push(`${route.method} ${route.path}: no 401`);
    }
    expect(missing).toEqual([]);
  });

  test("request bodies carry their schemas: inject needs a message", () => {
    const schema = document.paths["/sessions/{p1}/inject"]?.post?.requestBody?.content["application/json"]?.schema;
    expect(schema).toMatchObject({ type: "object", required: ["message"] });
    expect(document.paths["/sessions/{p1}/{p2}/inject"]?.post).toBeDefined();
  });

  test("sits behind the API's own authentication", async () => {
    expect((await gated.app.handle(new Request("http://localhost/openapi.json"))).status).toBe(401);
    const served = await gated.app.handle(
      new Request("http://localhost/openapi.json", { headers: { "x-attach-token": "tok" } }),
    );
    expect(served.status).toBe(200);
  });

  test("matches the recorded document: a wire change is a visible diff", () => {
    expect(document).toMatchSnapshot();
  });
});
