/**
 * `spar svc` as a process on the runtime core it shares with `spar agent`: an inject runs as a turn
 * on its incident session and is answered once the turn has ended; the session and its rows are in
 * the store; injects of one session queue one behind another; the bearer token, reserved ids and a
 * workload bundle this build does not run yet are refused; SIGTERM exits 0.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { sparCommand, tempDir } from "../../support/daemon.ts";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";

const scope = daemonScope();

function inject(baseUrl: string, body: unknown, headers: Record<string, string> = {}) {
  return fetch(`${baseUrl}/inject`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: JSON.stringify(body),
  });
}

/** A session's rows as JSON text, read from the store once the daemon has stopped. */
async function rowTexts(sessionDb: string, sessionId: string): Promise<string> {
  const store = SqliteStore.open(sessionDb);
  try {
    const session = await store.getSession({ app: "svc", id: sessionId });
    expect(session?.owner).toBe("local");
    return JSON.stringify(await store.read({ app: "svc", id: sessionId }, 0, 100));
  } finally {
    await store.close();
  }
}

test("an inject runs one echo turn on incident-<uid>, answered 202 after the turn; its rows are in the store", async () => {
  const daemon = await scope.start({ role: "svc" });
  const response = await inject(daemon.baseUrl, { uid: "u1", reason: "Ping" });
  expect(response.status).toBe(202);
  const answer = (await response.json()) as { status: string; session_id: string; state: string };
  expect(answer).toMatchObject({ status: "accepted", session_id: "incident-u1", state: "idle" });
  const metrics = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
  expect(metrics).toContain('svc_turns_total{outcome="completed"} 1');
  // The default (no SVC_INJECT_TOKEN, loopback) starts, and says it is open (D339).
  expect(daemon.log()).toMatch(
    /WARN .*SVC_INJECT_TOKEN is not set: the main listener on 127\.0\.0\.1:0 answers every request .* from any process on this machine without credentials/,
  );
  expect(await daemon.sigterm()).toBe(0);
  const rows = await rowTexts(daemon.sessionDb, "incident-u1");
  expect(rows).toContain("INJECT");
  expect(rows).toContain('\\"reason\\":\\"Ping\\"');
});

test("injects of one session queue: three sent at once each answer after their own turn, three turns run", async () => {
  const daemon = await scope.start({ role: "svc" });
  const answers = await Promise.all(
    ["a", "b", "c"].map(async (reason) => {
      const response = await inject(daemon.baseUrl, { uid: "same", reason });
      return { status: response.status, body: (await response.json()) as { prompt_id: string } };
    }),
  );
  expect(answers.map((answer) => answer.status)).toEqual([202, 202, 202]);
  expect(new Set(answers.map((answer) => answer.body.prompt_id)).size).toBe(3);
  const metrics = await (await fetch(`${daemon.baseUrl}/metrics`)).text();
  expect(metrics).toContain('svc_turns_total{outcome="completed"} 3');
});

test("with SVC_INJECT_TOKEN a request without the bearer is 401 and runs nothing; a reserved id is 400", async () => {
  const daemon = await scope.start({ role: "svc", env: { SVC_INJECT_TOKEN: "s3cret" } });
  expect(daemon.log()).not.toContain("SVC_INJECT_TOKEN is not set");
  const refused = await inject(daemon.baseUrl, { uid: "u1" });
  expect(refused.status).toBe(401);
  expect(((await refused.json()) as { error: string }).error).toBe(
    "missing or wrong inject token: send the value of SVC_INJECT_TOKEN as Authorization: Bearer <token>",
  );
  const reserved = await inject(daemon.baseUrl, { uid: "x:mast-ops" }, { authorization: "Bearer s3cret" });
  expect(reserved.status).toBe(400);
  const accepted = await inject(daemon.baseUrl, { uid: "u2" }, { authorization: "Bearer s3cret" });
  expect(accepted.status).toBe(202);
  const metrics = await (
    await fetch(`${daemon.baseUrl}/metrics`, { headers: { authorization: "Bearer s3cret" } })
  ).text();
  expect(metrics).toContain('svc_turns_total{outcome="completed"} 1');
});

test("a bundle that does not fit its dispatch shape is refused (exit 1); a missing one too", async () => {
  const fixtures = join(import.meta.dir, "../../fixtures/workloads/graph");
  const result = await runToExit(
    sparCommand(
      "svc",
      "--listen=127.0.0.1:0",
      `--session-db=${join(tempDir(), "s.db")}`,
      `--workload=${fixtures}`,
      "--dispatch=bounded",
    ),
  );
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("dispatch bounded (--dispatch) requires exactly one specialist, found 3");
  const broken = await runToExit(sparCommand("svc", "--listen=127.0.0.1:0", "--workload=./no-such-workload"));
  expect(broken.code).toBe(1);
  expect(broken.stderr).toContain('--workload "./no-such-workload" is not a directory');
});

test("without --session-db the store is in memory: announced at startup, injects served, exit 0", async () => {
  const daemon = await scope.start({ role: "svc", sessionDb: "" });
  expect(daemon.log()).toContain("no --session-db: sessions live only as long as this process (no durability");
  expect((await inject(daemon.baseUrl, { uid: "m1" })).status).toBe(202);
  expect(await daemon.sigterm()).toBe(0);
  expect(daemon.log()).toContain("shutdown complete");
});
