/**
 * The config file and the scripted example of the README: YAML keys set the model, flags win
 * over the file, a bad value is a startup error naming the key, and the example recording
 * drives a priced-usage turn and a rate-limited turn.
 */
import { expect, test } from "bun:test";
import { daemonScope } from "../support/daemon-scope.ts";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { MAIN, REPO_ROOT, postJson, tempDir } from "../support/daemon.ts";
import { collect } from "../support/sse-client.ts";

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

test("a bad config value stops startup with a message naming the key", async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(
    join(cwd, ".agents", "config.json"),
    JSON.stringify({ attach: { multi_session: { session_idle_timeout: "soon" } } }),
  );
  const child = Bun.spawn(
    [process.execPath, MAIN, "agent", "--attach-listen=127.0.0.1:0", `--session-db=${join(cwd, "s.db")}`],
    { cwd, stderr: "pipe", stdout: "pipe" },
  );
  expect(await child.exited).toBe(2);
  const log = await new Response(child.stderr).text();
  expect(log).toContain("attach.multi_session.session_idle_timeout");
  const clean = tempDir();
  const flag = Bun.spawn(
    [process.execPath, MAIN, "agent", "--attach-listen=0.0.0.0:0", `--session-db=${join(clean, "t.db")}`],
    { cwd: clean, stderr: "pipe", stdout: "pipe" },
  );
  expect(await flag.exited).toBe(1);
  expect(await new Response(flag.stderr).text()).toContain("refusing to listen on 0.0.0.0");
  const unknown = Bun.spawn([process.execPath, MAIN, "agent", "--no-such-flag"], {
    cwd: clean,
    stderr: "pipe",
    stdout: "pipe",
  });
  expect(await unknown.exited).toBe(2);
  expect(await new Response(unknown.stderr).text()).toContain("unknown flag --no-such-flag");
});

async function refused(cwd: string, args: string[]): Promise<{ code: number; log: string }> {
  const child = Bun.spawn(
    [process.execPath, MAIN, "agent", "--attach-listen=127.0.0.1:0", `--session-db=${join(cwd, "s.db")}`, ...args],
    { cwd, stderr: "pipe", stdout: "pipe" },
  );
  return { code: await child.exited, log: await new Response(child.stderr).text() };
}

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

test("durations: a bare number in the file and anything past the longest timer are refused, naming the setting", async () => {
  const cwd = tempDir();
  mkdirSync(join(cwd, ".agents"));
  writeFileSync(join(cwd, ".agents", "config.yaml"), "attach:\n  multi_session:\n    session_idle_timeout: 1800\n");
  const bare = await refused(cwd, []);
  expect(bare.code).toBe(2);
  expect(bare.log).toContain("attach.multi_session.session_idle_timeout: not a duration");
  expect(bare.log).toContain("bare number");
  const clean = tempDir();
  const long = await refused(clean, ["--sse-heartbeat=600h"]);
  expect(long.code).toBe(2);
  expect(long.log).toContain("--sse-heartbeat must be at most 596h31m24s");
  expect(long.log).not.toContain("    at ");
});

test("an --attach-listen port that is taken fails startup in one line naming the flag (exit 1)", async () => {
  const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("taken") });
  try {
    const cwd = tempDir();
    const child = Bun.spawn(
      [process.execPath, MAIN, "agent", `--attach-listen=127.0.0.1:${taken.port}`, `--session-db=${join(cwd, "s.db")}`],
      { cwd, stderr: "pipe", stdout: "pipe" },
    );
    expect(await child.exited).toBe(1);
    const log = await new Response(child.stderr).text();
    expect(log).toContain(`--attach-listen=127.0.0.1:${taken.port}: cannot listen there`);
    expect(log).not.toContain("    at ");
  } finally {
    taken.stop(true);
  }
});
