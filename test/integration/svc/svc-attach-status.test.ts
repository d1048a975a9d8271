/**
 * What svc's attach surface says a session is doing (D342), the gate tour of docs/svc.md run
 * through the real svc daemon with `--attach-listen`: an incident parked on the write gate reads
 * `paused` on `/status` (reason `awaiting_approval`, since the question was asked), the
 * coordinator and the specialist whose call waits alike; once approved both read `idle`; a gate
 * pause (`POST /pause`) reads `paused` with its own reason. It used to read `idle` throughout.
 */
import { expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, tempDir } from "../../support/daemon.ts";
import { daemonScope } from "../../support/daemon-scope.ts";
import { injectIncident, postTo, resume } from "../../support/gated-workload.ts";

const scope = daemonScope();

interface Status {
  state: string;
  turn_in_flight: boolean;
  paused_since: string;
  pause_reason?: string;
}

test("a session parked on the write gate reads paused on the attach surface's /status, idle once answered", async () => {
  const counts = join(tempDir(), "counts");
  mkdirSync(counts);
  const daemon = await scope.start({
    role: "svc",
    cwd: REPO_ROOT,
    args: ["--workload=docs/examples/gated", "--model=scripted", "--attach-listen=127.0.0.1:0"],
    env: {
      SVC_SCRIPT: "docs/examples/gate-tour.jsonl",
      SVC_INJECT_TOKEN: "gate-s3cret",
      COUNT_DIR: counts,
      SPAR_BUN: process.execPath,
    },
  });
  const attach = /attach surface at (http:\/\/\S+) /.exec(daemon.log())?.[1];
  if (attach === undefined) throw new Error(`no attach surface in the log:\n${daemon.log()}`);
  const status = async (app: string): Promise<Status> => {
    const response = await fetch(`${attach}/sessions/${app}/incident-demo/status`);
    expect(response.status).toBe(200);
    return (await response.json()) as Status;
  };

  const before = new Date().toISOString();
  const injected = await injectIncident(daemon, "demo");
  expect(injected.body.state).toBe("paused");
  for (const app of ["svc", "svc.worker"]) {
    const parked = await status(app);
    expect({ app, state: parked.state, reason: parked.pause_reason, running: parked.turn_in_flight }).toEqual({
      app,
      state: "paused",
      reason: "awaiting_approval",
      running: false,
    });
    expect(parked.paused_since >= before).toBe(true);
    expect(parked.paused_since <= new Date().toISOString()).toBe(true);
  }

  const answered = await resume(daemon, "incident-demo", injected.pending[0]?.interrupt_id ?? "", {
    verdict: "approve",
  });
  expect(answered.body).toMatchObject({ outcome: "apply", state: "idle" });
  expect((await status("svc")).state).toBe("idle");
  expect((await status("svc.worker")).state).toBe("idle");

  const paused = await postTo(daemon, "/pause", { session_id: "incident-demo", reason: "maintenance_window" });
  expect(paused.status).toBe(200);
  expect(await status("svc")).toMatchObject({ state: "paused", pause_reason: "maintenance_window" });
});
