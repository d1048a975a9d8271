/**
 * One echo turn against a real daemon, watched by a real SSE client: frame order, the reply,
 * usage and the session row.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Daemon, postJson, startDaemon } from "../support/daemon.ts";
import { collect } from "../support/sse-client.ts";

let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon();
});
afterAll(async () => {
  await daemon.sigterm();
});

test("an injected message runs one echo turn, published in the spec's order", async () => {
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
  const response = await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "hello spar" });
  expect(response.status).toBe(200);
  const body = (await response.json()) as Record<string, unknown>;
  expect(body).toMatchObject({ injected: true, session: "default", woke: true });
  expect(typeof body.prompt_id).toBe("string");

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
  expect(turn[0]?.data).toMatchObject({ state: "queued", prompt_id: body.prompt_id });
  expect(turn[1]?.data).toMatchObject({ state: "dequeued", prompt_id: body.prompt_id });
  const reply = turn[4]?.data.event as { Content: { parts: Array<{ text: string }>; role: string }; Author: string };
  expect(reply.Content.role).toBe("model");
  expect(reply.Content.parts[0]?.text).toBe("hello spar");
  expect(turn[5]?.data).toMatchObject({
    prompt_id: body.prompt_id,
    model: "echo",
    tokens_in: 3,
    tokens_out: 3,
    cost_usd: 0,
  });
  expect(turn[6]?.data).toEqual({ turn_state: "idle" });
  expect(usage.data).toMatchObject({ tokens_in_total: 3, tokens_out_total: 3, turns_total: 1 });
  expect(turn[3]?.id).toBe("1");
  expect(turn[4]?.id).toBe("2");

  const sessions = (await (await fetch(`${daemon.baseUrl}/sessions`)).json()) as {
    sessions: Array<Record<string, unknown>>;
  };
  expect(sessions.sessions).toEqual([
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
