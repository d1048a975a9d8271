/**
 * One echo turn against a real daemon, driven by the typed attach client and watched by a real
 * SSE client: frame order, the reply, usage and the session row.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { attachClient } from "../../support/attach-client.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";
import { collect } from "../../support/sse-client.ts";

let daemon: InProcessAgent;
beforeAll(async () => {
  daemon = await startInProcessAgent();
});
afterAll(async () => {
  await daemon.stop();
});

test("an injected message runs one echo turn, published in the spec's order", async () => {
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
  const client = attachClient(daemon.baseUrl);
  const injected = await client.sessions({ p1: "default" }).inject.post({ message: "hello spar" });
  expect(injected.status).toBe(200);
  // Routes answer with their own Response objects, so the client types the request, not the answer.
  const body = injected.data as { prompt_id: string } | null;
  expect(body).toMatchObject({ injected: true, session: "default", woke: true });
  expect(typeof body?.prompt_id).toBe("string");

  const usage = await stream.waitFor((frame) => frame.event === "usage-update" && frame.data.turns_total === 1);
  stream.close();
  const names = stream.frames.map((frame) => frame.event);
  expect(names.slice(0, 3)).toEqual(["capabilities", "status-update", "usage-update"]);
  const turn = stream.frames.slice(3).filter((frame) => frame.event !== "text-delta");
  expect(turn.map((frame) => frame.event)).toEqual([
    "inbox",
    "inbox",
    "status-update",
    "agent",
    "agent",
    "turn-complete",
    "status-update",
    "usage-update",
  ]);
  expect(turn[0]?.data).toMatchObject({ state: "queued", prompt_id: body?.prompt_id });
  expect(turn[1]?.data).toMatchObject({ state: "dequeued", prompt_id: body?.prompt_id });
  const reply = turn[4]?.data.event as { Content: { parts: Array<{ text: string }>; role: string }; Author: string };
  expect(reply.Content.role).toBe("model");
  expect(reply.Content.parts[0]?.text).toBe("hello spar");
  expect(turn[5]?.data).toMatchObject({
    prompt_id: body?.prompt_id,
    model: "echo",
    tokens_in: 3,
    tokens_out: 3,
    cost_usd: 0,
  });
  expect(turn[6]?.data).toEqual({ turn_state: "idle" });
  expect(usage.data).toMatchObject({ tokens_in_total: 3, tokens_out_total: 3, turns_total: 1 });
  expect(turn[3]?.id).toBe("1");
  expect(turn[4]?.id).toBe("2");

  const sessions = (await client.sessions.get()).data as { sessions: unknown[] } | null;
  expect(sessions?.sessions).toEqual([
    expect.objectContaining({
      app: "spar",
      user: "local",
      sessionID: "default",
      has_event_log: true,
      status: "active",
      title: "hello spar",
    }),
  ]);
});
