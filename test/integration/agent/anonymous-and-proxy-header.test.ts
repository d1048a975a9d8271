/**
 * Multi-session auth options: `allow_anonymous` lets token-less callers in as the anonymous guest
 * (served, but unable to create sessions), and `proxy_header` renames the assertion header (the
 * default name then means nothing; the new one is refused from non-proxies).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { sha256Hex } from "../../../src/surfaces/http/caller-auth.ts";
import { postJson, tempDir } from "../../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";

let daemon: InProcessAgent;
beforeAll(async () => {
  const dir = tempDir();
  writeFileSync(
    join(dir, "callers.json"),
    JSON.stringify({ callers: [{ identity: "gw", token_sha256: sha256Hex("tok-gw") }] }),
  );
  writeFileSync(
    join(dir, "config.yaml"),
    [
      "attach:",
      "  multi_session:",
      "    auth:",
      "      allow_anonymous: true",
      "      proxy_header: X-Forwarded-User",
      "      proxy_identities: [gw]",
      "",
    ].join("\n"),
  );
  daemon = await startInProcessAgent({
    args: ["--multi-session", `--auth-table=${join(dir, "callers.json")}`, `--config=${join(dir, "config.yaml")}`],
  });
});
afterAll(async () => {
  await daemon.stop();
});

test("the anonymous guest is served but cannot create sessions", async () => {
  expect(await (await fetch(`${daemon.baseUrl}/whoami`)).json()).toEqual({
    identity: "anonymous",
    admin: false,
    source: "anonymous",
  });
  const created = await postJson(`${daemon.baseUrl}/sessions`, {});
  expect(created.status).toBe(401);
  expect((await fetch(`${daemon.baseUrl}/sessions`)).status).toBe(200);
});

test("the configured proxy header carries assertions; the default name means nothing here", async () => {
  const asserted = await fetch(`${daemon.baseUrl}/whoami`, {
    headers: { authorization: "Bearer tok-gw", "x-forwarded-user": "dana" },
  });
  expect(await asserted.json()).toEqual({ identity: "dana", admin: false, source: "asserted", proxy_by: "gw" });
  const ignored = await fetch(`${daemon.baseUrl}/whoami`, {
    headers: { authorization: "Bearer tok-gw", "x-asserted-caller": "dana" },
  });
  expect(await ignored.json()).toEqual({ identity: "gw", admin: false, source: "bearer" });
  expect((await fetch(`${daemon.baseUrl}/whoami`, { headers: { "x-forwarded-user": "dana" } })).status).toBe(401);
});
