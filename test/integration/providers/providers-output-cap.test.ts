/**
 * The output-token cap end to end against a provider's wire: --model-max-output-tokens reaches
 * the request (`max_tokens` on chat completions), and an answer cut at the cap (finish `length`)
 * is continued by auto-continue with a turn whose prompt says why.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson, waitFor } from "../../support/daemon.ts";
import { collect } from "../../support/sse-client.ts";
import { startProviderFake } from "../../fakes/providers/provider-fake.ts";

const scope = daemonScope();

test("the cap reaches the provider; a `length` finish is continued", async () => {
  const key = "output-cap-key-3f9a";
  const fake = scope.defer(
    startProviderFake("openai-compatible", { apiKey: key, models: ["qwen3-coder-30b"] }),
    (provider) => provider.stop(),
  );
  const daemon = await scope.start({
    env: { LOCAL_LLM_KEY: key },
    args: [
      "--provider=openai-compatible",
      "--model=qwen3-coder-30b",
      `--model-base-url=${fake.baseUrl}`,
      "--model-api-key-env=LOCAL_LLM_KEY",
      "--model-max-output-tokens=64",
      "--workers=1",
    ],
  });
  const events = collect(`${daemon.baseUrl}/sessions/default/events`);
  scope.defer(events, (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  fake.enqueue("length", "text");
  await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "write the long report" });
  await waitFor(
    () => (events.frames.filter((frame) => frame.event === "turn-complete").length >= 2 ? true : undefined),
    15_000,
    "two turns",
  );
  expect(fake.requests).toHaveLength(2);
  expect(fake.requests.map((request) => request.body.max_tokens)).toEqual([64, 64]);
  const second = fake.requests[1]?.body.messages as Array<{ role: string; content: unknown }>;
  const last = second[second.length - 1];
  expect(last?.role).toBe("user");
  expect(JSON.stringify(last?.content)).toContain(
    "[auto-continue] your previous answer was cut off at the output-token limit",
  );
}, 30_000);
