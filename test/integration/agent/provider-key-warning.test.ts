/**
 * A daemon started on a remote provider whose API key variable is not set starts (its store and
 * reads serve) but says at startup that every turn will fail, naming the variable (D339); the
 * turn then fails as the warning said. With the key set there is no such line. `spar agent` and
 * `spar svc` share the check (the runtime core).
 */
import { expect, test } from "bun:test";
import { postJson } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();
const ANTHROPIC = ["--provider=anthropic", "--model=claude-sonnet-4-5"];
const WARNING =
  "no API key for the anthropic provider: environment variable ANTHROPIC_API_KEY is not set (--model-api-key-env names another): every turn will fail (auth_error) until the daemon is started with it set";

test("spar agent --provider=anthropic without ANTHROPIC_API_KEY warns at startup, and the first turn fails as it said", async () => {
  const daemon = await scope.start({ args: ANTHROPIC, env: { ANTHROPIC_API_KEY: undefined } });
  expect(daemon.log()).toMatch(new RegExp(`WARN +${WARNING.replace(/[().]/g, "\\$&")}`));
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "hello" })).status).toBe(200);
  const failed = await events.waitFor((frame) => frame.event === "turn-error", 10_000);
  expect(failed.data).toMatchObject({ kind: "auth_error" });
  expect(JSON.stringify(failed.data)).toContain("ANTHROPIC_API_KEY is not set");
});

test("with the key set, or a blank one, the line is there only when the key is missing", async () => {
  const set = await scope.start({ args: ANTHROPIC, env: { ANTHROPIC_API_KEY: "sk-ant-test" } });
  expect(set.log()).not.toContain("no API key");
  const blank = await scope.start({ args: ANTHROPIC, env: { ANTHROPIC_API_KEY: "  " } });
  expect(blank.log()).toContain(WARNING);
});

test("spar svc on a remote provider without its key warns the same way", async () => {
  const daemon = await scope.start({
    role: "svc",
    args: ["--provider=openai", "--model=gpt-5-mini"],
    env: { OPENAI_API_KEY: undefined },
  });
  expect(daemon.log()).toContain(
    "no API key for the openai provider: environment variable OPENAI_API_KEY is not set (--model-api-key-env names another): every turn will fail",
  );
});
