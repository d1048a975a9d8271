/**
 * svc's startup check of `auth.google_oauth` (spec "Authentication": startup fails fast when the
 * ambient credentials cannot load): with tool servers wired (a model other than echo), a token is
 * obtained once per declaring http server of the workload's catalog before anything listens; a
 * refusing token endpoint or no credentials at all exits 1 naming the server and why. Against the
 * local token endpoints of test/fixtures/mcp/google-token-endpoints.ts (no network).
 */
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { sparCommand, tempDir } from "../../support/daemon.ts";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { say, writeScript } from "../../support/scripted.ts";
import { ambientEnvironment, fakeMetadataServer } from "../../fixtures/mcp/google-token-endpoints.ts";

const scope = daemonScope();
const stops: Array<() => void> = [];
afterEach(() => {
  for (const stop of stops.splice(0)) stop();
});

const SCOPE = "https://www.googleapis.com/auth/userinfo.email";

/** A workload whose catalog names one http server `web` declaring google_oauth with `scopes`. */
function googleWorkload(scopes: string[]): string {
  const directory = tempDir("spar-google-");
  mkdirSync(join(directory, "specialists"));
  writeFileSync(
    join(directory, "workload.yaml"),
    "name: google\nspecialists:\n  - helper\ntool_catalog:\n  mcp:\n    - server: web\n",
  );
  writeFileSync(
    join(directory, "specialists", "helper.tmpl"),
    "---\ndescription: Helps.\ntools:\n  mcp: []\n---\nHelp, then call finish_task.\n",
  );
  writeFileSync(
    join(directory, "mcp.json"),
    JSON.stringify({
      version: 1,
      // Never reached: the check asks the token endpoint, not the tool server.
      servers: { web: { transport: "http", url: "http://127.0.0.1:9/mcp", auth: { google_oauth: { scopes } } } },
    }),
  );
  return directory;
}

function metadataServer() {
  const metadata = fakeMetadataServer();
  stops.push(metadata.stop);
  return metadata;
}

const svc = (workload: string, model = "scripted") =>
  sparCommand(
    "svc",
    "--listen=127.0.0.1:0",
    `--session-db=${join(tempDir(), "s.db")}`,
    `--workload=${workload}`,
    `--model=${model}`,
  );

test("a token endpoint that refuses fails startup (exit 1) naming the server and why, before anything listens", async () => {
  const metadata = metadataServer();
  metadata.state.refuse = 403;
  const result = await runToExit(svc(googleWorkload([SCOPE])), {
    env: { ...ambientEnvironment({ metadataHost: metadata.address }), SVC_SCRIPT: writeScript([say("x")]) },
  });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("tool server web (auth.google_oauth): no ambient credentials");
  expect(result.stderr).not.toContain("listening on");
  expect(metadata.asked).toEqual([SCOPE]);
});

test("no ambient credentials at all fail startup (exit 1) naming the server", async () => {
  const result = await runToExit(svc(googleWorkload([])), {
    env: { ...ambientEnvironment({}), SVC_SCRIPT: writeScript([say("x")]) },
  });
  expect(result.code).toBe(1);
  expect(result.stderr).toContain("ambient Google credentials for the workload's tool servers: tool server web");
});

test("with credentials svc starts, having asked once for the catalog's scopes (cloud-platform when none)", async () => {
  const metadata = metadataServer();
  const daemon = await scope.start({
    role: "svc",
    args: [`--workload=${googleWorkload([])}`, "--model=scripted"],
    env: { ...ambientEnvironment({ metadataHost: metadata.address }), SVC_SCRIPT: writeScript([say("x")]) },
  });
  expect(metadata.asked).toEqual(["https://www.googleapis.com/auth/cloud-platform"]);
  expect(await daemon.sigterm()).toBe(0);
});

test("under echo no tool server is wired, so nothing is checked: svc starts without credentials", async () => {
  const daemon = await scope.start({
    role: "svc",
    args: [`--workload=${googleWorkload([SCOPE])}`, "--model=echo"],
    env: ambientEnvironment({}),
  });
  expect(await daemon.sigterm()).toBe(0);
});

test("a SIGTERM while startup waits for the token is heard: svc finishes starting, then shuts down cleanly (exit 0)", async () => {
  let asked: () => void = () => {};
  const tokenAsked = new Promise<void>((resolve) => {
    asked = resolve;
  });
  // A metadata server that holds the token answer a while, so the signal lands mid-startup.
  const slow = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: async (request) => {
      const flavor = { "metadata-flavor": "Google" };
      if (!new URL(request.url).pathname.endsWith("/token")) return new Response("{}", { headers: flavor });
      asked();
      // Time under test: the slow answer is the window the SIGTERM lands in.
      await Bun.sleep(1500);
      return Response.json({ access_token: "tok", expires_in: 3600, token_type: "Bearer" }, { headers: flavor });
    },
  });
  stops.push(() => slow.stop(true));
  const child = Bun.spawn(svc(googleWorkload([SCOPE])), {
    env: {
      ...process.env,
      ...ambientEnvironment({ metadataHost: `127.0.0.1:${slow.port}` }),
      SVC_SCRIPT: writeScript([say("x")]),
    },
    stdout: "ignore",
    stderr: "pipe",
  });
  stops.push(() => child.kill("SIGKILL"));
  await tokenAsked;
  child.kill("SIGTERM");
  expect(await child.exited).toBe(0);
  const log = await new Response(child.stderr).text();
  expect(log).toContain("listening on");
  expect(log).toContain("shutdown complete");
});
