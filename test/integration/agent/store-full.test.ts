/**
 * A store that refuses writes (a real SQLITE_FULL from the size cap): inject answers 503 with a
 * clear JSON message, reads keep working, and nothing refused is half-written: after a restart
 * with room, the log is contiguous and the refused message is nowhere.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../../support/daemon-scope.ts";
import { postJson, waitFor } from "../../support/daemon.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();

test("a full store: 503 on inject, reads keep working, nothing half-written", async () => {
  const first = await scope.start({ args: ["--session-db-max-mb=1"] });
  const filler = "x".repeat(7000);
  let refused: Response | undefined;
  let refusedMarker = "";
  let accepted = 0;
  for (let i = 0; i < 400 && !refused; i++) {
    refusedMarker = `<${i}> ${filler}`;
    const response = await postJson(`${first.baseUrl}/sessions/default/inject`, { message: refusedMarker });
    if (response.status === 200) {
      accepted++;
      await response.arrayBuffer();
      // Pacing, not a wait: a breath between injects lets turns run so rows accumulate too.
      await Bun.sleep(5);
    } else refused = response;
  }
  expect(refused).toBeDefined();
  expect(refused?.status).toBe(503);
  const body = (await refused?.json()) as { error: string };
  expect(body.error).toContain("session store refused the write");
  expect(accepted).toBeGreaterThan(10);
  // Reads keep working.
  expect((await fetch(`${first.baseUrl}/sessions`)).status).toBe(200);
  expect((await fetch(`${first.baseUrl}/sessions/default/usage`)).status).toBe(200);
  const replay = collect(`${first.baseUrl}/sessions/default/events`);
  await replay.waitFor((frame) => frame.event === "agent");
  replay.close();
  expect((await fetch(`${first.baseUrl}/healthz`)).status).toBe(200);
  expect(await first.sigterm()).toBe(0);

  const second = await scope.start({ sessionDb: first.sessionDb });
  const stream = collect(`${second.baseUrl}/sessions/default/events`);
  const userRowsOf = () =>
    stream.frames.filter(
      (frame) => frame.event === "agent" && (frame.data.event as { Author: string }).Author === "user",
    );
  const acceptedIn = (frame: (typeof stream.frames)[number]) =>
    [
      ...((frame.data.event as { Content: { parts: Array<{ text?: string }> } }).Content.parts[0]?.text ?? "").matchAll(
        /<(\d+)> x/g,
      ),
    ].length;
  // The restarted daemon drains the queue by itself: wait until every accepted message is in the log.
  await waitFor(
    () => (userRowsOf().reduce((sum, frame) => sum + acceptedIn(frame), 0) >= accepted ? true : undefined),
    20_000,
    "queued turns drained",
  );
  const head = await waitFor(
    async () => {
      const usage = (await (await fetch(`${second.baseUrl}/sessions/default/usage`)).json()) as {
        overall: { turns: number };
      };
      return usage.overall.turns;
    },
    5000,
    "usage",
  );
  expect(head).toBeGreaterThan(0);
  // A barrier: the feed is ordered, so once the inbox frame of a message queued now (wake:false:
  // no turn, no row) arrives, every row published before it (a repeat, a refused message) has too.
  const barrier = (await (
    await postJson(`${second.baseUrl}/sessions/default/inject`, { message: "barrier", wake: false })
  ).json()) as {
    prompt_id: string;
  };
  await stream.waitFor((frame) => frame.event === "inbox" && frame.data.prompt_id === barrier.prompt_id, 10_000);
  stream.close();
  const rows = stream.frames.filter((frame) => frame.event === "agent");
  const seqs = rows.map((frame) => (frame.data as { seq: number }).seq);
  expect(seqs).toEqual(Array.from({ length: seqs.length }, (_, i) => i + 1));
  expect(JSON.stringify(rows)).not.toContain(`"${refusedMarker}`);
  const userRows = rows.filter((frame) => (frame.data.event as { Author: string }).Author === "user");
  // Every accepted message reached the log exactly once; no refused one did.
  const seen = new Map<number, number>();
  for (const frame of userRows) {
    const text = (frame.data.event as { Content: { parts: Array<{ text?: string }> } }).Content.parts[0]?.text ?? "";
    for (const match of text.matchAll(/<(\d+)> x/g)) seen.set(Number(match[1]), (seen.get(Number(match[1])) ?? 0) + 1);
  }
  expect([...seen.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: accepted }, (_, i) => i));
  expect([...seen.values()].every((count) => count === 1)).toBe(true);
}, 90_000);
