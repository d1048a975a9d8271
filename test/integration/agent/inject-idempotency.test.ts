/**
 * POST /inject with an Idempotency-Key: a retried message (the client lost the answer) is
 * answered `duplicate: true` with the first prompt id, and nothing is queued, published or run
 * again: while it waits, after a turn drained it, and after a restart. A bad key is a 400.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type Daemon, postJson, startDaemon, waitFor } from "../../support/daemon.ts";
import { collect } from "../../support/sse-client.ts";

let daemon: Daemon;
beforeAll(async () => {
  daemon = await startDaemon();
});
afterAll(async () => {
  await daemon.sigterm();
});

const inject = (message: string, key: string | undefined, wake = true) =>
  postJson(
    `${daemon.baseUrl}/sessions/default/inject`,
    { message, wake },
    key === undefined ? {} : { "idempotency-key": key },
  );

async function turns(): Promise<number> {
  return ((await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as { overall: { turns: number } })
    .overall.turns;
}

test("a repeated key answers the first prompt id as a duplicate: one inbox frame, one turn", async () => {
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  try {
    await stream.waitFor((frame) => frame.event === "usage-update");
    const first = (await (await inject("deploy check", "incident-42:1", false)).json()) as {
      prompt_id: string;
      duplicate?: boolean;
    };
    expect(first.duplicate).toBeUndefined();
    const again = (await (await inject("deploy check", "incident-42:1", false)).json()) as {
      prompt_id: string;
      duplicate?: boolean;
      woke: boolean;
    };
    expect(again).toMatchObject({ prompt_id: first.prompt_id, duplicate: true, woke: false });
    await stream.waitFor((frame) => frame.event === "inbox" && frame.data.prompt_id === first.prompt_id);
    expect(stream.frames.filter((frame) => frame.event === "inbox" && frame.data.state === "queued")).toHaveLength(1);
    expect((await postJson(`${daemon.baseUrl}/sessions/default/wake`, {})).status).toBe(200);
    await waitFor(async () => ((await turns()) === 1 ? true : undefined), 10_000, "the turn");
    // Drained into the turn's prompt: still a duplicate.
    const drained = (await (await inject("deploy check", "incident-42:1")).json()) as {
      prompt_id: string;
      duplicate?: boolean;
    };
    // A duplicate is answered before anything is scheduled (SessionActor.inject): it woke nothing.
    expect(drained).toMatchObject({ prompt_id: first.prompt_id, duplicate: true, woke: false });
    expect(await turns()).toBe(1);
  } finally {
    stream.close();
  }
});

test("the key survives a restart; another key or no key is a new message", async () => {
  await daemon.sigterm();
  daemon = await startDaemon({ sessionDb: daemon.sessionDb });
  const again = (await (await inject("deploy check", "incident-42:1")).json()) as { duplicate?: boolean };
  expect(again.duplicate).toBe(true);
  const other = (await (await inject("deploy check", "incident-42:2")).json()) as {
    duplicate?: boolean;
    prompt_id: string;
  };
  expect(other.duplicate).toBeUndefined();
  const unkeyed = (await (await inject("deploy check", undefined)).json()) as { duplicate?: boolean };
  expect(unkeyed.duplicate).toBeUndefined();
});

test("a key with spaces or over 256 characters is a 400 and queues nothing", async () => {
  for (const key of ["has space", "x".repeat(257)]) {
    const response = await inject("bad key", key);
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: string }).error).toContain("Idempotency-Key");
  }
});
