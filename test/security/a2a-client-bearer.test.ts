/**
 * The bearer of a declared remote A2A agent (read from the variable its `auth.token_env` names)
 * goes to that agent's origin only and never shows anywhere else: not in a tool result (also when
 * the remote agent echoes it back), not across a redirect to another origin, not to an endpoint a
 * card names on another origin (another port of the declared host included: that endpoint gets
 * only `outbound.allow`, D332), not in the daemon's log or the session's events (at debug level,
 * with a refused 401 call too).
 */
import { afterEach, expect, test } from "bun:test";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { A2aClient } from "../../src/a2a-client/a2a-client.ts";
import { RemoteAgentCaller } from "../../src/a2a-client/call-a2a-tool.ts";
import { type RemoteAgentEntry, staticDirectory } from "../../src/a2a-client/remote-agent-directory.ts";
import { declaredEntry, remoteAgentClients } from "../../src/a2a-client/remote-agent-wiring.ts";
import { parseOutboundAllowList } from "../../src/net/outbound-allow-list.ts";
import { OutboundGuard } from "../../src/net/outbound-guard.ts";
import { startEchoAgent } from "../fixtures/a2a/sdk-echo-agent.ts";
import { daemonScope } from "../support/daemon-scope.ts";
import { postJson, tempDir } from "../support/daemon.ts";
import { call, say, writeScript } from "../support/scripted.ts";
import { collect } from "../support/sse-client.ts";

const scope = daemonScope();
const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0)) cleanup();
});

const SECRET = "a2a-s3cret-bearer-value";
const loopback = parseOutboundAllowList(["127.0.0.1"]);
if (!loopback.ok) throw new Error(loopback.error);
const guard = new OutboundGuard({ allow: loopback.value });

function entry(endpoint: string): RemoteAgentEntry {
  return {
    name: "echo",
    endpoint,
    description: "x",
    auth: { type: "bearer", tokenEnv: "ECHO_TOKEN" },
    timeoutMs: 5000,
    source: "a2a/echo.yaml",
  };
}

function caller(endpoint: string): RemoteAgentCaller {
  return new RemoteAgentCaller(staticDirectory([entry(endpoint)]), () => new A2aClient(guard), { ECHO_TOKEN: SECRET });
}

test("a remote agent echoing the bearer back: the tool result shows [redacted], never the token", async () => {
  const echo = startEchoAgent({ token: SECRET });
  cleanups.push(echo.stop);
  const result = await caller(echo.endpoint).run({ agent: "echo", message: "leak" }, AbortSignal.timeout(5000));
  expect(result.isError).toBe(false);
  expect(result.output.text).toBe("you sent Bearer [redacted]");
  expect(JSON.stringify(result)).not.toContain(SECRET);
});

test("a redirect to another origin: the bearer is not sent there", async () => {
  const seen: (string | null)[] = [];
  const elsewhere = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: (request) => {
      seen.push(request.headers.get("authorization"));
      return Response.json({ jsonrpc: "2.0", id: 1, result: { kind: "message", role: "agent", parts: [] } });
    },
  });
  cleanups.push(() => elsewhere.stop(true));
  const redirector = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => new Response(null, { status: 307, headers: { location: `http://127.0.0.1:${elsewhere.port}/a2a` } }),
  });
  cleanups.push(() => redirector.stop(true));
  await caller(`http://127.0.0.1:${redirector.port}/a2a`).run(
    { agent: "echo", message: "hi" },
    AbortSignal.timeout(5000),
  );
  expect(seen).toEqual([null]);
});

/** A declared agent known by its card at `cardUrl`, with or without a bearer. */
function declaredByCard(cardUrl: string, bearer: boolean): RemoteAgentEntry {
  return declaredEntry({
    name: "carded",
    agentCardUrl: cardUrl,
    skills: [],
    ...(bearer ? { auth: { type: "bearer", tokenEnv: "ECHO_TOKEN" } } : {}),
    timeoutSeconds: 5,
    file: "a2a/carded.yaml",
  });
}

/** A card server on its own port whose card names `url` as the JSON-RPC endpoint. */
function cardServer(url: string): string {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch: () => Response.json({ name: "carded", url, preferredTransport: "JSONRPC", protocolVersion: "0.3.0" }),
  });
  cleanups.push(() => server.stop(true));
  return `http://127.0.0.1:${server.port}/.well-known/agent-card.json`;
}

test("a card naming an endpoint on another port of the declared host: with a bearer the call is refused, nothing sent there", async () => {
  const echo = startEchoAgent({ token: SECRET });
  cleanups.push(echo.stop);
  const agent = declaredByCard(cardServer(echo.endpoint), true);
  const caller = new RemoteAgentCaller(staticDirectory([agent]), remoteAgentClients([]), { ECHO_TOKEN: SECRET });
  const result = await caller.run({ agent: "carded", message: "model-written" }, AbortSignal.timeout(5000));
  expect(result.isError).toBe(true);
  expect(JSON.stringify(result.output)).toContain("another origin");
  expect(echo.authorizations).toEqual([]);
});

test("without a bearer, an endpoint a card names on another origin gets only outbound.allow", async () => {
  const echo = startEchoAgent();
  cleanups.push(echo.stop);
  const agent = declaredByCard(cardServer(echo.endpoint), false);
  // The declared card's host (127.0.0.1) is not the operator's: the other port is refused.
  const refused = await new RemoteAgentCaller(staticDirectory([agent]), remoteAgentClients([]), {}).run(
    { agent: "carded", message: "hi" },
    AbortSignal.timeout(5000),
  );
  expect(refused.isError).toBe(true);
  expect(echo.authorizations).toEqual([]);
  // The operator's list admits it: called, with no bearer.
  const allowed = await new RemoteAgentCaller(staticDirectory([agent]), remoteAgentClients(["127.0.0.1"]), {}).run(
    { agent: "carded", message: "hi" },
    AbortSignal.timeout(5000),
  );
  expect(allowed.isError).toBe(false);
  expect(echo.authorizations).toEqual([null]);
});

test("the control: a card on the endpoint's own origin gets the call with the bearer", async () => {
  const echo = startEchoAgent({ token: SECRET });
  cleanups.push(echo.stop);
  const agent = declaredByCard(`${new URL(echo.endpoint).origin}/.well-known/agent-card.json`, true);
  const caller = new RemoteAgentCaller(staticDirectory([agent]), remoteAgentClients([]), { ECHO_TOKEN: SECRET });
  const result = await caller.run({ agent: "carded", message: "hi" }, AbortSignal.timeout(5000));
  expect(result.isError).toBe(false);
  expect(echo.authorizations).toEqual([`Bearer ${SECRET}`]);
});

test("the bearer never appears in the daemon's log or the session's events, at debug level, with a 401 and an echo", async () => {
  const echo = startEchoAgent({ token: SECRET });
  cleanups.push(echo.stop);
  const strict = startEchoAgent({ token: "another-token-entirely" });
  cleanups.push(strict.stop);
  const cwd = tempDir("spar-a2a-bearer-");
  mkdirSync(join(cwd, ".agents", "a2a"), { recursive: true });
  const declare = (name: string, url: string) =>
    writeFileSync(
      join(cwd, ".agents", "a2a", `${name}.yaml`),
      [`name: ${name}`, `endpoint: ${url}`, "auth:", "  type: bearer", "  token_env: ECHO_TOKEN", ""].join("\n"),
    );
  declare("echo", echo.endpoint);
  declare("strict", strict.endpoint);
  const script = writeScript([
    call("call_a2a", { agent: "echo", message: "leak" }),
    call("call_a2a", { agent: "strict", message: "hello" }),
    say("done"),
  ]);
  const daemon = await scope.start({
    cwd,
    args: ["--model=scripted", `--script=${script}`, "--permission-mode=yolo", "--log-level=debug"],
    env: { ECHO_TOKEN: SECRET },
  });
  const events = scope.defer(collect(`${daemon.baseUrl}/sessions/default/events`), (stream) => stream.close());
  await events.waitFor((frame) => frame.event === "usage-update");
  expect((await postJson(`${daemon.baseUrl}/sessions/default/inject`, { message: "go" })).status).toBe(200);
  await events.waitFor((frame) => frame.event === "turn-complete");
  const frames = JSON.stringify(events.frames);
  expect(frames).toContain("you sent Bearer [redacted]");
  expect(frames).toContain("refused the credentials (HTTP 401)");
  expect(echo.authorizations).toEqual([`Bearer ${SECRET}`]);
  expect(frames).not.toContain(SECRET);
  expect(daemon.log()).not.toContain(SECRET);
});
