/**
 * The mutating operator verbs as an operator runs them: `spar svc sessions pause|resume|
 * extend-token|abort|ack-effects` against a real daemon (bearer SVC_INJECT_TOKEN), and the direct
 * `--session-db` paths of `resume --token` and `ack-effects`, refused while a daemon holds the
 * store and working once it stopped. `resume --token --ack-effects` lifts ambiguous mode. The
 * token's verbs against a daemon, and the acknowledgement across a restart, run on sqlite and on
 * PostgreSQL (D519); the direct `--session-db` paths are sqlite's.
 */
import { describe, expect, test } from "bun:test";
import { countedCalls } from "../../fixtures/mcp/counting.ts";
import { type Daemon, sparCommand } from "../../support/daemon.ts";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import {
  APPLY,
  TOKEN,
  gatedDaemonOptions,
  gatedWorkload,
  injectIncident,
  resume,
  storedRows,
} from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";
import { type SvcStore, gatedOn, svcStores } from "../../support/svc-store.ts";

/** The text of the 404 for a token no pause minted, as an operator reads it. */
const UNKNOWN_TOKEN =
  "resume token not found: no pause in this store minted it (an mrt_ token is printed once, when its session is paused, and resumes that pause once, before it expires); `spar svc sessions list --state=paused` lists the paused sessions, and pausing one again prints a new token";

const scope = daemonScope();

function cli(daemon: Daemon | undefined, ...args: string[]) {
  const addr = daemon === undefined ? [] : [`--addr=${daemon.baseUrl}`];
  return runToExit(sparCommand("svc", "sessions", ...args, ...addr), { env: { SVC_INJECT_TOKEN: TOKEN } });
}

function tokenOf(stdout: string): string {
  const match = /"token":"(mrt_[A-Za-z0-9_-]{22})"/.exec(stdout);
  if (!match?.[1]) throw new Error(`no token in ${stdout}`);
  return match[1];
}

test("resume --token and ack-effects on --session-db: refused while a daemon holds the store, then written directly with a warning", async () => {
  const workload = gatedWorkload();
  const daemon = await scope.start(gatedDaemonOptions(workload, [say("one")]));
  expect((await injectIncident(daemon, "c2")).status).toBe(202);
  const token = tokenOf((await cli(daemon, "pause", "incident-c2", "--reason=operator")).stdout);

  const held = await cli(undefined, "resume", `--token=${token}`, `--session-db=${daemon.sessionDb}`);
  expect(held.code).toBe(1);
  expect(held.stderr).toContain(
    `a svc daemon holds ${daemon.sessionDb} (its lock file ${daemon.sessionDb}.lock is taken)`,
  );
  expect(held.stderr).toContain("--addr");
  const heldAck = await cli(undefined, "ack-effects", "incident-c2", `--session-db=${daemon.sessionDb}`);
  expect(heldAck.code).toBe(1);
  expect(heldAck.stderr).toContain("a svc daemon holds");

  expect(await daemon.sigterm()).toBe(0);
  const direct = await cli(undefined, "resume", `--token=${token}`, `--session-db=${daemon.sessionDb}`);
  expect(direct).toMatchObject({ code: 0, stdout: "gate pause on incident-c2 resumed\n" });
  expect(direct.stderr).toContain("cannot serialize against a running daemon");
  const replay = await cli(undefined, "resume", `--token=${token}`, `--session-db=${daemon.sessionDb}`);
  expect(replay.stdout).toBe("gate pause on incident-c2 already resumed\n");
  const unknown = await cli(
    undefined,
    "resume",
    "--token=mrt_AAAAAAAAAAAAAAAAAAAAAA",
    `--session-db=${daemon.sessionDb}`,
  );
  expect(unknown.code).toBe(1);
  expect(unknown.stderr).toContain(`spar svc sessions resume: ${UNKNOWN_TOKEN}\n`);
  const acked = await cli(undefined, "ack-effects", "incident-c2", `--session-db=${daemon.sessionDb}`);
  expect(acked).toMatchObject({ code: 0, stdout: "acknowledged (0 calls)\n" });
  const rows = await storedRows(daemon.sessionDb, "svc", "incident-c2");
  const resumed = rows.find((row) => row.event.kind === "audit" && row.event.name === "svc-pause-resume");
  expect(resumed?.event).toMatchObject({ metadata: { by: "operator resume --token --session-db" } });

  // The next daemon on the store sees the pause resumed.
  const next = await scope.start(gatedDaemonOptions(workload, [say("two")], { sessionDb: daemon.sessionDb }));
  expect((await injectIncident(next, "c2")).status).toBe(202);
}, 60_000);

test("resume <id> --interrupt --response answers a question through the CLI; a bad verdict is exit 1 with the daemon's 400", async () => {
  const workload = gatedWorkload();
  const lines = [
    call("worker", { request: "scale" }),
    call(APPLY, { replicas: 10 }),
    call("finish_task", { result: "no" }),
  ];
  const daemon = await scope.start(gatedDaemonOptions(workload, [...lines, say("stopped")]));
  const interruptId = (await injectIncident(daemon, "c4")).pending[0]?.interrupt_id ?? "";
  const bad = await cli(daemon, "resume", "incident-c4", `--interrupt=${interruptId}`, '--response={"approved":true}');
  expect(bad.code).toBe(1);
  expect(bad.stderr).toContain(`POST ${daemon.baseUrl}/resume: 400: `);
  const answered = await cli(
    daemon,
    "resume",
    "incident-c4",
    `--interrupt=${interruptId}`,
    '--response={"verdict":"reject"}',
  );
  expect(answered).toMatchObject({
    code: 0,
    stdout: "/resume incident-c4: resumed (denied_by_operator; session idle)\n",
  });
  expect(countedCalls(workload.countDir, "apply_change")).toEqual([]);
}, 60_000);

/** The token verbs against a daemon on one engine's store. */
function storeScenarios(store: SvcStore): void {
  test("pause, extend-token, resume --token (then its replay) and abort through the CLI", async () => {
    const workload = gatedWorkload();
    const daemon = await scope.start(gatedOn(store, workload, [call("finish_task", { result: "ok" }), say("done")]));
    expect((await injectIncident(daemon, "c1")).status).toBe(202);

    const paused = await cli(
      daemon,
      "pause",
      "incident-c1",
      "--reason=maintenance_window",
      "--message=upgrade",
      "--ttl=2h",
    );
    expect(paused.code).toBe(0);
    expect(paused.stdout).toMatch(/^\/pause incident-c1: \{"token":"mrt_/);
    const token = tokenOf(paused.stdout);
    expect(paused.stdout).toContain(`spar svc sessions resume --token=${token}`);
    expect((await injectIncident(daemon, "c1")).status).toBe(409);

    const extended = await cli(daemon, "extend-token", token, "--ttl=48h");
    expect(extended.code).toBe(0);
    expect(extended.stdout).toMatch(/^\/extend-token incident-c1: \{"token":"mrt_.*"expires_at":/);

    expect(await cli(daemon, "resume", `--token=${token}`)).toMatchObject({
      code: 0,
      stdout: "/resume incident-c1: resumed\n",
    });
    expect(await cli(daemon, "resume", `--token=${token}`)).toMatchObject({
      code: 0,
      stdout: "/resume incident-c1: already resumed (the token was used before; nothing changed)\n",
    });
    // A token no pause minted: the refusal says what a token is and how to find the paused sessions.
    const unknown = await cli(daemon, "resume", "--token=mrt_AAAAAAAAAAAAAAAAAAAAAA");
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toBe(`spar svc sessions resume: POST ${daemon.baseUrl}/resume: 404: ${UNKNOWN_TOKEN}\n`);

    expect(await cli(daemon, "abort", "incident-c1", "--reason=wrong cluster")).toMatchObject({
      code: 0,
      stdout: "/abort incident-c1: aborted\n",
    });
    const again = await cli(daemon, "abort", "incident-c1");
    expect(again.code).toBe(1);
    expect(again.stderr).toContain(`POST ${daemon.baseUrl}/abort: 409: session "incident-c1": session already aborted`);
    const unauthorized = await runToExit(
      sparCommand("svc", "sessions", "abort", "incident-c1", `--addr=${daemon.baseUrl}`),
      {
        env: { SVC_INJECT_TOKEN: "wrong" },
      },
    );
    expect(unauthorized.code).toBe(1);
    expect(unauthorized.stderr).toContain(": 401: ");
  }, 60_000);

  test("resume --token --ack-effects lifts ambiguous mode: a new mutating call parks again instead of being refused", async () => {
    const workload = gatedWorkload();
    const propose = [call("worker", { request: "scale" }), call(APPLY, { replicas: 10 })];
    const first = await scope.start(
      gatedOn(store, workload, propose, { env: { SPAR_FAILPOINTS: "svc.gate.after-call" } }),
    );
    const interruptId = (await injectIncident(first, "c3")).pending[0]?.interrupt_id ?? "";
    await resume(first, "incident-c3", interruptId, { verdict: "approve" }).catch(() => undefined);
    await first.process.exited;
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);

    const second = await scope.start(gatedOn(store, workload, propose, { sessionDb: first.sessionDb }));
    const token = tokenOf((await cli(second, "pause", "incident-c3", "--reason=ambiguity")).stdout);
    expect(await cli(second, "resume", `--token=${token}`, "--ack-effects")).toMatchObject({
      code: 0,
      stdout: "/resume incident-c3: resumed\n",
    });
    const injected = await injectIncident(second, "c3");
    expect(injected.body.state).toBe("paused");
    expect(injected.pending[0]?.message).toBe("Approve mutating call apply_change(replicas=10)?");
    expect(countedCalls(workload.countDir, "apply_change")).toHaveLength(1);
  }, 60_000);
}

for (const store of svcStores("verbs")) describe(store.engine, () => storeScenarios(store));
