/**
 * Filling a session's inbox: `wake: false` injects (or a parked session) queue without a turn to
 * drain them. Past --inbox-max-messages or --inbox-max-bytes an inject is refused with 429,
 * Retry-After and a JSON body, and nothing is written (no inbox row, no frame); once a turn
 * drains the inbox, injects are accepted again; the caps hold across a restart's undrained inbox.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Database } from "bun:sqlite";
import { type Daemon, postJson, startDaemon, waitFor } from "../support/daemon.ts";

let daemon: Daemon;
let bytesCapped: Daemon;
beforeAll(async () => {
  [daemon, bytesCapped] = await Promise.all([
    startDaemon({ args: ["--inbox-max-messages=5"] }),
    startDaemon({ args: ["--inbox-max-bytes=2048"] }),
  ]);
});
afterAll(async () => {
  await Promise.all([daemon.sigterm(), bytesCapped.sigterm()]);
});

const inject = (target: Daemon, message: string, wake = false) =>
  postJson(`${target.baseUrl}/sessions/default/inject`, { message, wake });

function inboxRows(target: Daemon): number {
  const db = new Database(target.sessionDb, { readonly: true });
  try {
    const tables = db
      .query("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE '%inbox%'")
      .all() as Array<{ name: string }>;
    const table = tables[0]?.name;
    if (!table) throw new Error("no inbox table");
    return (db.query(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
}

async function expectFull(response: Response, words: string): Promise<void> {
  expect(response.status).toBe(429);
  expect(response.headers.get("retry-after")).toBe("5");
  const body = (await response.json()) as { error: string; retry_after_seconds: number };
  expect(body.error).toContain(words);
  expect(body.retry_after_seconds).toBe(5);
}

describe("message cap", () => {
  test("the sixth queued message is refused and leaves no row; a turn drains the queue and injects are accepted again", async () => {
    for (let index = 0; index < 5; index++) expect((await inject(daemon, `queued ${index}`)).status).toBe(200);
    const rowsBefore = inboxRows(daemon);
    await expectFull(await inject(daemon, "one too many"), "maximum of 5 messages");
    await expectFull(
      await postJson(`${daemon.baseUrl}/sessions/default/wake`, { prompt: "through wake" }),
      "maximum of 5 messages",
    );
    expect(inboxRows(daemon)).toBe(rowsBefore);
    // A bare wake starts a turn that drains all five.
    expect((await postJson(`${daemon.baseUrl}/sessions/default/wake`, {})).status).toBe(200);
    await waitFor(
      async () => {
        const response = await inject(daemon, "after the drain");
        return response.status === 200 ? true : undefined;
      },
      10_000,
      "the inbox to drain",
    );
  });
});

describe("byte cap", () => {
  test("messages whose bytes would pass the cap are refused; smaller ones still fit", async () => {
    expect((await inject(bytesCapped, "é".repeat(700))).status).toBe(200); // 1400 bytes
    await expectFull(await inject(bytesCapped, "x".repeat(700)), "maximum of 2048 bytes");
    expect((await inject(bytesCapped, "x".repeat(600))).status).toBe(200);
  });

  test("the cap holds for the undrained inbox a restart brings back", async () => {
    const restarted = await (async () => {
      await bytesCapped.sigterm();
      bytesCapped = await startDaemon({ args: ["--inbox-max-bytes=2048"], sessionDb: bytesCapped.sessionDb });
      return bytesCapped;
    })();
    await expectFull(await inject(restarted, "x".repeat(100)), "maximum of 2048 bytes");
  });
});
