/**
 * Durability across process death on sqlite: a real SSE client resumes with `since` and, after
 * kill -9 and a restart on the same port, with its automatic Last-Event-ID reconnect, losing and
 * duplicating nothing; a daemon killed mid-turn with a message waiting in its inbox comes back
 * with history, owner and inbox intact and drains the waiting message. The kill -9 scenarios live
 * in test/support/agent-durability.ts and run on PostgreSQL too (agent-postgres.test.ts).
 */
import { expect, test } from "bun:test";
import {
  agentSeqs,
  injectAndWait,
  killNineDuringDelivery,
  killNineMidTurnWithInbox,
} from "../../support/agent-durability.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope();

test("since=N replays exactly the rows after N, then live rows follow", async () => {
  const daemon = await scope.start({});
  await injectAndWait(daemon, "one", 1);
  await injectAndWait(daemon, "two", 2);
  const stream = collect(`${daemon.baseUrl}/sessions/default/events?since=2`);
  await stream.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 4);
  await injectAndWait(daemon, "three", 3);
  await stream.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 6);
  stream.close();
  expect(agentSeqs(stream.frames)).toEqual([3, 4, 5, 6]);
});

test("a cursor past the head means live only: nothing is replayed and every new row and frame follows", async () => {
  const daemon = await scope.start({});
  await injectAndWait(daemon, "one", 1);
  const ahead = collect(`${daemon.baseUrl}/sessions/default/events?since=5`);
  const exact = collect(`${daemon.baseUrl}/sessions/default/events?since=2`);
  await ahead.waitFor((frame) => frame.event === "usage-update");
  await exact.waitFor((frame) => frame.event === "usage-update");
  await injectAndWait(daemon, "two", 2);
  await injectAndWait(daemon, "three", 3);
  const six = await ahead.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 6);
  await exact.waitFor((frame) => frame.event === "agent" && (frame.data as { seq: number }).seq === 6);
  // Turn 3's terminal frame follows its reply row, in a later write.
  await ahead.waitFor((frame) => frame.event === "turn-complete", 10_000, ahead.frames.indexOf(six));
  ahead.close();
  exact.close();
  expect(agentSeqs(ahead.frames)).toEqual([3, 4, 5, 6]);
  expect(agentSeqs(exact.frames)).toEqual([3, 4, 5, 6]);
  expect(ahead.frames.filter((frame) => frame.event === "turn-complete")).toHaveLength(2);
});

test("kill -9 during delivery: the client's Last-Event-ID reconnect to the restarted daemon loses and repeats nothing", async () => {
  await killNineDuringDelivery(scope, {});
}, 60_000);

test("kill -9 mid-turn with a message waiting: history, owner and inbox survive; the waiting message is drained once", async () => {
  await killNineMidTurnWithInbox(scope, {});
}, 60_000);
