/**
 * Property-based fuzzing (fast-check) of the attach daemon over a real socket with keep-alive:
 * every JSON write route (POST, PATCH, DELETE; session routes in both path shapes, POST /sessions,
 * the peer hub) and the event stream's `since`, `protocol`, Last-Event-ID and
 * X-Attach-Protocol-Version, with random and boundary bodies and headers. Per request: no 5xx but
 * 501/503; every non-2xx is a JSON `{"error": string}`; a refused request changes nothing (the
 * session list and ACLs, each watched session's event-log head, permission mode and patterns,
 * guardrails, pause state and inbox, the price book, the peers); and the next valid request is
 * served.
 *
 * The daemon is the real `spar agent` wiring (startAgent, flags and config as the command reads
 * them) started in the test process, so state is read directly instead of by requests: a
 * snapshot costs microseconds, and every request still goes through Bun.serve over TCP.
 * FUZZ_SEED and FUZZ_RUNS override the fixed seed and the run count (both properties together);
 * FUZZ_PATH (`write:<path>` or `stream:<path>`, as a failure prints it) replays that property's
 * counterexample with its seed.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import fc from "fast-check";
import {
  type FuzzRoute,
  FIXTURE_SESSIONS,
  type HeaderSpec,
  type StreamSpec,
  WRITE_ROUTES,
  type WriteSpec,
  streamSpec,
  writeSpec,
} from "../support/attach-fuzz-arbitraries.ts";
import { inProcessApp } from "../support/attach-app.ts";
import { type StateReader, type StateSnapshot, stateReader } from "../support/attach-state-snapshot.ts";
import { type InProcessAgent, startInProcessAgent } from "../support/in-process-agent.ts";
import { CALLER_TOKENS, type CallerName, TRANSPORT_TOKEN, tenantDaemonArgs } from "../support/tenant-daemon.ts";
import { PeerHub } from "../../src/surfaces/peers/peer-hub.ts";

const SEED = Number(process.env.FUZZ_SEED ?? 20_261_126);
const RUNS = Number(process.env.FUZZ_RUNS ?? 10_000);
const WRITE_RUNS = Math.round(RUNS * 0.85);
const STREAM_RUNS = RUNS - WRITE_RUNS;
const WATCHED = [
  { app: "spar", id: "fz" },
  { app: "spar", id: "default" },
];

let agent: InProcessAgent;
let reader: StateReader;
let baseline: StateSnapshot;
let peerId = "";
let sent = 0;
/** A property failed (already reported): the count check below would only repeat it. */
let failed = false;
const statuses = new Map<number, number>();

async function call(method: string, path: string, as: CallerName, body?: unknown): Promise<Response> {
  return fetch(`${agent.baseUrl}${path}`, {
    method,
    headers: {
      "x-attach-token": TRANSPORT_TOKEN,
      authorization: `Bearer ${CALLER_TOKENS[as]}`,
      "content-type": "application/json",
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
}

/** Keep the watched sessions parked so no turn runs between two snapshots; wait until nothing moves. */
async function settle(quietMs: number): Promise<StateSnapshot> {
  const deadline = Date.now() + 15_000;
  let previous: StateSnapshot | undefined;
  let quietSince = Date.now();
  while (Date.now() < deadline) {
    for (const key of WATCHED) {
      const actor = await agent.agent.host.actor(key);
      if (actor.status().state !== "paused") actor.pause("fuzz harness");
    }
    const current = await reader.read();
    const moved =
      current.busy ||
      previous === undefined ||
      previous.state !== current.state ||
      reader.changes(previous, current).length > 0;
    if (moved) quietSince = Date.now();
    else if (Date.now() - quietSince >= quietMs) return current;
    previous = current;
    // Poll: the state is read again until it has been quiet for quietMs.
    await Bun.sleep(current.busy ? 5 : 1);
  }
  throw new Error("the daemon did not settle within 15 s after a served request");
}

beforeAll(async () => {
  const { args, env } = tenantDaemonArgs();
  agent = await startInProcessAgent({ args, env });
  expect(
    (await call("POST", "/sessions", "alice", { sessionID: "fz", viewers: ["vic"], contributors: ["carol"] })).status,
  ).toBe(201);
  const peer = await call("POST", "/peers", "alice", {
    name: "fixture-peer",
    endpoint: "https://peer.example",
    heartbeat_ttl_sec: 86_400,
  });
  expect(peer.status).toBe(201);
  peerId = ((await peer.json()) as { registration_id: string }).registration_id;
  reader = stateReader(agent, WATCHED, "/sessions/spar/fz/pricing");
  baseline = await settle(5);
});
afterAll(async () => {
  await agent.stop();
});

function headersOf(spec: HeaderSpec): Record<string, string> {
  const headers: Record<string, string> = {};
  const token = spec.token;
  if (token === "right") headers["x-attach-token"] = TRANSPORT_TOKEN;
  else if (token === "wrong") headers["x-attach-token"] = "wrong";
  else if (token === "empty") headers["x-attach-token"] = "";
  else if (typeof token === "object") headers["x-attach-token"] = token.text;
  if (spec.caller.startsWith("forged:")) headers.authorization = `Bearer ${spec.caller.slice(7)}`;
  else if (spec.caller in CALLER_TOKENS) headers.authorization = `Bearer ${CALLER_TOKENS[spec.caller as CallerName]}`;
  if (token === "bearer-only") headers.authorization = `Bearer ${TRANSPORT_TOKEN}`;
  if (spec.assert !== undefined) headers["x-asserted-caller"] = spec.assert;
  if (spec.contentType !== undefined) headers["content-type"] = spec.contentType;
  if (spec.origin !== undefined) headers.origin = spec.origin;
  if (spec.protocolHeader !== undefined) headers["x-attach-protocol-version"] = spec.protocolHeader;
  if (spec.idempotencyKey !== undefined) headers["idempotency-key"] = spec.idempotencyKey;
  if (spec.host !== undefined) headers.host = spec.host;
  return headers;
}

interface Built {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string | Uint8Array | undefined;
}

/**
 * The request of a write spec. Two rewrites keep the fixtures usable (neither makes a request
 * valid that was not): a DELETE of a fixture session goes out as a caller who may not delete it
 * (a served delete would leave later requests only 404s, and a second one is D28's 500), and a
 * POST /sessions naming a fixture id in another app drops the app (a twin would make every
 * short-path request to the fixture a 409).
 */
function buildWrite(spec: WriteSpec): Built {
  const route = WRITE_ROUTES[spec.route] as FuzzRoute;
  const param = spec.param === "$PEER" ? peerId : spec.param;
  const tail = route.path.replace("{name}", param).replace("{peer}", param);
  const path = route.scope === "root" ? tail : `${spec.base}${tail === "" ? "" : `/${tail}`}`;
  const headers = headersOf(spec.headers);
  if (
    route.method === "DELETE" &&
    route.scope === "session" &&
    FIXTURE_SESSIONS.has(spec.base.split("/").pop() ?? "")
  ) {
    delete headers["x-asserted-caller"];
    if (["alice", "root", "gw"].includes(spec.headers.caller)) headers.authorization = `Bearer ${CALLER_TOKENS.vic}`;
  }
  let body = spec.body;
  if (route.path === "/sessions" && typeof body === "string") {
    try {
      const parsed = JSON.parse(body) as Record<string, unknown>;
      if (
        parsed &&
        typeof parsed === "object" &&
        FIXTURE_SESSIONS.has(String(parsed.sessionID)) &&
        parsed.app !== undefined
      ) {
        delete parsed.app;
        body = JSON.stringify(parsed);
      }
    } catch {
      // not JSON: sent as generated
    }
  }
  return { method: route.method, path, headers, body };
}

function buildStream(spec: StreamSpec): Built {
  const headers = headersOf({ ...spec.headers, contentType: undefined, origin: undefined });
  if (spec.lastEventId !== undefined) headers["last-event-id"] = spec.lastEventId;
  if (spec.protocolHeader !== undefined) headers["x-attach-protocol-version"] = spec.protocolHeader;
  return {
    method: "GET",
    path: `${spec.base}/events${spec.query === "" ? "" : `?${spec.query}`}`,
    headers,
    body: undefined,
  };
}

function describeRequest(request: Built): string {
  const body =
    request.body === undefined
      ? "(none)"
      : typeof request.body === "string"
        ? `${JSON.stringify(request.body.slice(0, 300))} (${request.body.length} chars)`
        : `bytes [${[...request.body.slice(0, 48)].join(",")}]`;
  return `${request.method} ${request.path.slice(0, 300)}\nheaders ${JSON.stringify(request.headers)}\nbody ${body}`;
}

/** Send one fuzzed request and check it; throws (with the request and the answer) on a broken promise. */
async function exchange(request: Built, stream: boolean): Promise<void> {
  const response = await fetch(`${agent.baseUrl}${request.path}`, {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
  sent++;
  statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
  const type = response.headers.get("content-type") ?? "";
  let text = "";
  if (type.includes("text/event-stream")) {
    const reader = response.body?.getReader();
    const first = await reader?.read();
    await reader?.cancel();
    text = new TextDecoder().decode(first?.value ?? new Uint8Array());
  } else {
    text = await response.text();
  }
  const problems: string[] = [];
  const refused = response.status < 200 || response.status >= 300;
  if (response.status >= 500 && response.status !== 501 && response.status !== 503)
    problems.push(`a ${response.status}`);
  if (refused) {
    let error: unknown;
    try {
      error = (JSON.parse(text) as { error?: unknown }).error;
    } catch {
      error = undefined;
    }
    if (!type.includes("application/json") || typeof error !== "string")
      problems.push("a refusal without a JSON {error: string} body");
  } else if (stream && !(type.includes("text/event-stream") && text.startsWith("event: capabilities\n"))) {
    problems.push("a served stream that does not open with the capabilities frame");
  }
  if (refused || stream) {
    const after = await reader.read();
    problems.push(
      ...reader
        .changes(baseline, after)
        .map((change) => `state changed by a ${refused ? "refused request" : "stream"}: ${change}`),
    );
    baseline = after;
  } else {
    baseline = await settle(request.path.endsWith("/resume") ? 30 : 1);
  }
  const probe = await fetch(`${agent.baseUrl}/sessions/spar/fz/status`, {
    headers: { "x-attach-token": TRANSPORT_TOKEN, authorization: `Bearer ${CALLER_TOKENS.alice}` },
  });
  await probe.arrayBuffer();
  if (probe.status !== 200) problems.push(`the next valid request was answered ${probe.status}`);
  if (problems.length > 0) {
    throw new Error(
      `${problems.join("; ")}\nrequest: ${describeRequest(request)}\nresponse: ${response.status} ${type} ${JSON.stringify(text.slice(0, 300))}`,
    );
  }
}

async function runProperty<T>(
  name: "write" | "stream",
  arbitrary: fc.Arbitrary<T>,
  runs: number,
  check: (value: T) => Promise<void>,
): Promise<void> {
  const replay = process.env.FUZZ_PATH?.startsWith(`${name}:`)
    ? process.env.FUZZ_PATH.slice(name.length + 1)
    : undefined;
  const details = await fc.check(fc.asyncProperty(arbitrary, check), {
    seed: SEED,
    numRuns: runs,
    ...(replay ? { path: replay } : {}),
  });
  if (details.failed) {
    failed = true;
    const message =
      details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    throw new Error(
      `${name} fuzz failed after ${details.numRuns} runs (${details.numShrinks} shrinks): ${message}\n` +
        `replay: FUZZ_SEED=${details.seed} FUZZ_PATH=${name}:${details.counterexamplePath} FUZZ_RUNS=${RUNS} scripts/test test/security/attach-fuzz.test.ts`,
    );
  }
}

test("the fuzzer knows every write route the attach app registers (a new route must join it)", async () => {
  const hub = PeerHub.open({ log: { info: () => {}, warn: () => {}, error: () => {} } });
  if (!hub.ok) throw new Error(hub.error);
  const { app, close } = await inProcessApp({ peerHub: hub.value });
  const registered = (app as unknown as { routes: Array<{ method: string; path: string }> }).routes
    .filter((route) => !["GET", "HEAD", "OPTIONS"].includes(route.method))
    .map((route) => `${route.method} ${route.path}`)
    .sort();
  await close();
  const known = WRITE_ROUTES.flatMap((route) => {
    const tail = route.path.replace("{name}", ":p3").replace("{peer}", ":id");
    if (route.scope === "root") return [`${route.method} ${tail}`];
    const suffix = tail === "" ? "" : `/${tail}`;
    return [`${route.method} /sessions/:p1${suffix}`, `${route.method} /sessions/:p1/:p2${suffix}`];
  }).sort();
  expect(known).toEqual(registered);
});

test(`fuzz: ${WRITE_RUNS} random and boundary requests to every JSON write route: no 5xx but 501/503, a JSON error on every refusal, no state change on refusal, the next request served`, async () => {
  await runProperty("write", writeSpec, WRITE_RUNS, (spec) => exchange(buildWrite(spec), false));
}, 300_000);

test(`fuzz: ${STREAM_RUNS} event-stream requests with random since, protocol, Last-Event-ID and X-Attach-Protocol-Version: a stream or a JSON refusal, nothing changed`, async () => {
  await runProperty("stream", streamSpec, STREAM_RUNS, (spec) => exchange(buildStream(spec), true));
}, 300_000);

test("after the fuzz: the request count is reached, the daemon serves a valid write and is healthy", async () => {
  console.log(
    `fuzz: ${sent} requests, seed ${SEED}, statuses ${JSON.stringify(Object.fromEntries([...statuses].sort(([a], [b]) => a - b)))}`,
  );
  const counted = !failed && process.env.FUZZ_PATH === undefined;
  if (counted) expect(sent).toBe(RUNS);
  if (counted && process.env.FUZZ_RUNS === undefined) expect(sent).toBeGreaterThanOrEqual(10_000);
  expect((await call("POST", "/sessions/spar/fz/resume", "alice", { mode: "abandon" })).status).toBe(200);
  const injected = await call("POST", "/sessions/spar/fz/inject", "alice", { message: "after the fuzz", wake: false });
  expect(injected.status).toBe(200);
  expect((await fetch(`${agent.baseUrl}/healthz`)).status).toBe(200);
});
