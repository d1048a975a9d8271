/**
 * Where svc refuses to open its A2A listener at all: beyond loopback without `SVC_A2A_TOKEN`, for a
 * workload that does not expose itself, for one that declares `a2a.auth.required` without a token,
 * and with a malformed `SVC_A2A_RATE`. Each is a startup refusal naming the fix; nothing listens.
 */
import { expect, test } from "bun:test";
import { join } from "node:path";
import { sparCommand, tempDir } from "../support/daemon.ts";
import { runToExit } from "../support/daemon-scope.ts";
import { gatedWorkload } from "../support/gated-workload.ts";
import { appendFileSync } from "node:fs";
import { a2aWorkload } from "../support/a2a-daemon.ts";

function svc(workload: string, listen: string, env: Record<string, string | undefined> = {}) {
  return runToExit(
    sparCommand(
      "svc",
      "--listen=127.0.0.1:0",
      `--a2a-listen=${listen}`,
      `--session-db=${join(tempDir(), "s.db")}`,
      `--workload=${workload}`,
      "--model=echo",
    ),
    { env: { SVC_A2A_TOKEN: undefined, ...env } },
  );
}

test("a non-loopback A2A bind without SVC_A2A_TOKEN is refused at startup", async () => {
  const result = await svc(a2aWorkload().directory, "0.0.0.0:0");
  expect(result.code).not.toBe(0);
  expect(result.stderr).toContain("SVC_A2A_TOKEN");
  expect(result.stderr).not.toContain("A2A listener at");
});

test("a workload that does not set a2a.expose is refused, naming the bundle key", async () => {
  const result = await svc(gatedWorkload().directory, "127.0.0.1:0");
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("does not expose itself over A2A (set a2a.expose: true");
});

test("a workload declaring a2a.auth.required is refused without SVC_A2A_TOKEN, even on loopback", async () => {
  const workload = gatedWorkload();
  appendFileSync(join(workload.directory, "workload.yaml"), "a2a:\n  expose: true\n  auth:\n    required: true\n");
  const result = await svc(workload.directory, "127.0.0.1:0");
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("declares a2a.auth.required: set SVC_A2A_TOKEN");
});

test("a malformed SVC_A2A_RATE fails startup", async () => {
  const result = await svc(a2aWorkload().directory, "127.0.0.1:0", { SVC_A2A_RATE: "fast" });
  expect(result.code).not.toBe(0);
  expect(result.stderr).toContain("SVC_A2A_RATE");
});
