/**
 * The agent card served by a real daemon: public on its exact path even with a token, valid
 * against the A2A v0.3.0 AgentCard schema, url from the request, bearer scheme advertised, and
 * no JSON-RPC spoken at the card's url.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import Ajv from "ajv";
import schema from "../../fixtures/a2a-v0.3.0.schema.json" with { type: "json" };
import { postJson } from "../../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";

let daemon: InProcessAgent;
beforeAll(async () => {
  daemon = await startInProcessAgent({
    args: [
      "--attach-token=SPAR_CARD_TOKEN",
      "--agent-card-description=Triages cluster incidents",
      "--agent-card-name=triage",
      "--attach-trusted-proxies=127.0.0.1",
    ],
    env: { SPAR_CARD_TOKEN: "card-token" },
  });
});
afterAll(async () => {
  await daemon.stop();
});

test("the card is public, schema-valid, derived from the request and advertises bearer auth", async () => {
  const response = await fetch(`${daemon.baseUrl}/.well-known/agent-card.json`, {
    headers: { "x-forwarded-proto": "https", "x-forwarded-host": "agents.example.com" },
  });
  expect(response.status).toBe(200);
  const card = (await response.json()) as Record<string, unknown>;
  const ajv = new Ajv({ strict: false });
  ajv.addSchema(schema, "a2a");
  const valid = ajv.validate({ $ref: "a2a#/definitions/AgentCard" }, card);
  expect(ajv.errors ?? []).toEqual([]);
  expect(valid).toBe(true);
  expect(card).toMatchObject({
    name: "triage",
    description: "Triages cluster incidents",
    url: "https://agents.example.com",
  });
  expect(card.securitySchemes).toEqual({ bearer: { type: "http", scheme: "Bearer" } });
  expect(card.security).toEqual([{ bearer: [] }]);
  expect(
    (
      await fetch(`${daemon.baseUrl}/.well-known/agent-card.json`, {
        method: "POST",
        headers: { "content-type": "application/json" },
      })
    ).status,
  ).toBe(405);
  const rpc = await postJson(
    `${daemon.baseUrl}/`,
    { jsonrpc: "2.0", id: 1, method: "message/send", params: {} },
    { "x-attach-token": "card-token" },
  );
  expect(rpc.status).toBe(404);
});
