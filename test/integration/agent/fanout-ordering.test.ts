/**
 * 50 sessions x 20 subscribers in parallel: every subscriber sees every row exactly once, in
 * seq order, and each turn's terminal frame after that turn's rows. Half the subscribers attach
 * while turns are already running, so replay and live delivery meet.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { postJson, waitFor } from "../../support/daemon.ts";
import { type InProcessAgent, startInProcessAgent } from "../../support/in-process-agent.ts";
import { type RawSubscriber, rawSubscribe } from "../../support/raw-sse.ts";

const SESSIONS = 50;
const SUBSCRIBERS = 20;
const TURNS = 3;

let daemon: InProcessAgent;
beforeAll(async () => {
  daemon = await startInProcessAgent({ args: ["--multi-session"] });
});
afterAll(async () => {
  await daemon.stop();
});

async function createSession(id: string): Promise<void> {
  const response = await postJson(`${daemon.baseUrl}/sessions`, { sessionID: id });
  expect(response.status).toBe(201);
}

function checkSubscriber(subscriber: RawSubscriber, expectedRows: number): void {
  const seqs: number[] = [];
  const rowsSeen = new Map<string, number>();
  const invocationOfPrompt = new Map<string, string>();
  const frames = subscriber.frames;
  expect(frames[0]?.event).toBe("capabilities");
  let terminalFrames = 0;
  for (const frame of frames) {
    if (frame.event === "agent") {
      const data = JSON.parse(frame.data) as {
        seq: number;
        event: { InvocationID: string; CustomMetadata: { prompt_ids?: string[] } | null };
      };
      expect(frame.id).toBe(String(data.seq));
      seqs.push(data.seq);
      const invocation = data.event.InvocationID;
      rowsSeen.set(invocation, (rowsSeen.get(invocation) ?? 0) + 1);
      for (const promptId of data.event.CustomMetadata?.prompt_ids ?? []) invocationOfPrompt.set(promptId, invocation);
    }
    if (frame.event === "turn-complete") {
      terminalFrames++;
      const promptId = (JSON.parse(frame.data) as { prompt_id: string }).prompt_id;
      const invocation = invocationOfPrompt.get(promptId);
      expect(invocation).toBeDefined();
      // The turn's user row and model row both arrived before its terminal frame.
      expect(rowsSeen.get(invocation ?? "")).toBe(2);
    }
  }
  expect(terminalFrames).toBeGreaterThanOrEqual(1);
  expect(seqs).toEqual(Array.from({ length: expectedRows }, (_, i) => i + 1));
}

test(`${SESSIONS} sessions x ${SUBSCRIBERS} subscribers: every row once, in order, terminal frames after rows`, async () => {
  const ids = Array.from({ length: SESSIONS }, (_, i) => `fan-${i}`);
  await Promise.all(ids.map(createSession));
  const subscribers = new Map<string, RawSubscriber[]>(ids.map((id) => [id, []]));
  const attach = (id: string) => subscribers.get(id)?.push(rawSubscribe(daemon.port, `/sessions/${id}/events`));
  for (const id of ids) for (let i = 0; i < SUBSCRIBERS / 2; i++) attach(id);
  await waitFor(
    () => ([...subscribers.values()].flat().every((s) => s.frames.length >= 3) ? true : undefined),
    30_000,
    "boot frames",
  );

  for (let turn = 1; turn <= TURNS; turn++) {
    const injects = ids.map((id) =>
      postJson(`${daemon.baseUrl}/sessions/${id}/inject`, { message: `turn ${turn} for ${id}` }),
    );
    if (turn === 2) for (const id of ids) for (let i = 0; i < SUBSCRIBERS / 2; i++) attach(id);
    for (const response of await Promise.all(injects)) expect(response.status).toBe(200);
    // The late subscribers' requests may reach the daemon after turn 2 ended (CI saw one attach
    // only after turn 3 too, so it got no terminal frame): turn 3 starts once all are attached.
    if (turn === 2)
      await waitFor(
        () => ([...subscribers.values()].flat().every((s) => s.frames.length >= 3) ? true : undefined),
        30_000,
        "late boot frames",
      );
    // One turn at a time per session: wait until every session finished this turn.
    await waitFor(
      async () => {
        const usages = await Promise.all(
          ids.map(
            async (id) =>
              ((await (await fetch(`${daemon.baseUrl}/sessions/${id}/usage`)).json()) as { overall: { turns: number } })
                .overall.turns,
          ),
        );
        return usages.every((turns) => turns >= turn) ? true : undefined;
      },
      60_000,
      `turn ${turn} everywhere`,
    );
  }
  await waitFor(
    () =>
      [...subscribers.values()].flat().every((s) => s.frames.filter((f) => f.event === "agent").length >= TURNS * 2)
        ? true
        : undefined,
    60_000,
    "all rows delivered",
  );
  // A barrier: one ordered feed per session, so once a subscriber sees the inbox frame of a
  // message queued now (wake:false: no turn, no row), any stray or repeated row published before
  // it has reached that subscriber too.
  const barriers = new Map<string, string>();
  for (const id of ids) {
    const queued = await postJson(`${daemon.baseUrl}/sessions/${id}/inject`, { message: "barrier", wake: false });
    expect(queued.status).toBe(200);
    barriers.set(id, ((await queued.json()) as { prompt_id: string }).prompt_id);
  }
  await waitFor(
    () =>
      [...subscribers.entries()].every(([id, list]) =>
        list.every((s) =>
          s.frames.some(
            (f) => f.event === "inbox" && (JSON.parse(f.data) as { prompt_id?: string }).prompt_id === barriers.get(id),
          ),
        ),
      )
        ? true
        : undefined,
    30_000,
    "the barrier everywhere",
  );
  for (const list of subscribers.values()) {
    expect(list.length).toBe(SUBSCRIBERS);
    for (const subscriber of list) checkSubscriber(subscriber, TURNS * 2);
  }
  for (const subscriber of [...subscribers.values()].flat()) subscriber.close();
}, 120_000);
