/**
 * The config file and the scripted example of the README: YAML keys set the model, flags win
 * over the file, a bad value is a startup error naming the key, and the example recording
 * drives a priced-usage turn and a rate-limited turn.
 */
import { expect, test } from "bun:test";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, postJson, sparCommand, tempDir } from "../../support/daemon.ts";
import { collect } from "../../support/sse-client.ts";

const scope = daemonScope({ stop: "sigterm" });

test("YAML config selects the scripted model; flags win; the README recording runs", async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(
    join(cwd, ".agents", "config.yaml"),
    `attach:\n  listen: 127.0.0.1:7777\nmodel:\n  name: scripted\n  script: ${join(REPO_ROOT, "docs/examples/hello.jsonl")}\n`,
  );
  const daemon = await scope.start({ cwd });
  expect(daemon.port).not.toBe(7777);
  const stream = collect(`${daemon.baseUrl}/sessions/default/events`);
  await stream.waitFor((frame) => frame.event === "usage-update");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "hello" })).status).toBe(200);
  const done = await stream.waitFor((frame) => frame.event === "turn-complete");
  expect(done.data).toMatchObject({ model: "scripted", tokens_in: 12, tokens_out: 3 });
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "again" })).status).toBe(200);
  const error = await stream.waitFor((frame) => frame.event === "turn-error");
  expect(error.data).toMatchObject({ kind: "rate_limited", retryable: true, code: "429", message: "slow down" });
  stream.close();
  const usage = (await (await fetch(`${daemon.baseUrl}/sessions/default/usage`)).json()) as {
    overall: Record<string, number>;
  };
  expect(usage.overall).toMatchObject({
    input_tokens: 12,
    input_tokens_cached: 8,
    input_tokens_uncached: 4,
    output_tokens: 3,
    turns: 1,
  });
}, 30_000);

// The refusals of pure configuration are unit tests (test/unit/cli/agent-startup-refusals.test.ts);
// this one keeps the process behaviour of a usage error checked: exit 2, one line naming the key.
test("a bad config value stops the process (exit 2) with one line naming the key", async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(
    join(cwd, ".agents", "config.json"),
    JSON.stringify({ attach: { multi_session: { session_idle_timeout: "soon" } } }),
  );
  const refused = await runToExit(
    sparCommand("agent", "--attach-listen=127.0.0.1:0", `--session-db=${join(cwd, "s.db")}`),
    { cwd },
  );
  expect(refused.code).toBe(2);
  expect(refused.stderr).toContain("attach.multi_session.session_idle_timeout");
  expect(refused.stderr).not.toContain("    at ");
});

test("config keys nothing reads are reported at startup; the README's example reads clean", async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(
    join(cwd, ".agents", "config.json"),
    JSON.stringify({
      attach: { multi_session: { enable: true, session_idle_timeout: "2h" } },
      modle: { name: "scripted" },
      model: { provider: "echo" },
    }),
  );
  const typos = await scope.start({ cwd });
  expect(typos.log()).toContain(
    "ignoring key(s) this configuration does not read: attach.multi_session.enable, modle.name",
  );
  const clean = tempDir();
  mkdirSync(join(clean, ".agents"));
  // The README's JSON example (its fixed port replaced).
  writeFileSync(
    join(clean, ".agents", "config.json"),
    JSON.stringify({
      attach: { listen: "127.0.0.1:0", multi_session: { enabled: true, session_idle_timeout: "2h" } },
      model: { provider: "echo" },
      session_db: { path: ".agents/state/sessions.db" },
    }),
  );
  const readme = await scope.start({ cwd: clean });
  expect(readme.log()).not.toContain("ignoring key");
});

test("an --attach-listen port that is taken fails startup in one line naming the flag (exit 1)", async () => {
  const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
  try {
    const cwd = tempDir();
    const result = await runToExit(
      sparCommand("agent", `--attach-listen=127.0.0.1:${taken.port}`, `--session-db=${join(cwd, "s.db")}`),
      { cwd },
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`--attach-listen=127.0.0.1:${taken.port}: cannot listen there`);
    expect(result.stderr).not.toContain("    at ");
  } finally {
    taken.stop(true);
  }
});
