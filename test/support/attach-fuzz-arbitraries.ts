/**
 * fast-check arbitraries for fuzzing the attach API: every JSON write route (session routes in
 * both path shapes, POST /sessions, the peer hub) with bodies that are random, near-valid,
 * boundary (empty, scalars, nesting to depth 10,000, sizes around the caps), raw bytes, arrays
 * where objects belong, and prototype-pollution keys; the event stream's `since`, `protocol`,
 * Last-Event-ID and X-Attach-Protocol-Version; and the headers every request carries (transport
 * token, caller, content type, Origin). Generated values are plain data (`RequestSpec`); the test
 * builds the request from them.
 */
import fc from "fast-check";

/** A write route as the fuzzer knows it: where it is and the fields its body may carry. */
export interface FuzzRoute {
  method: "POST" | "PATCH" | "DELETE";
  /** `session`: under /sessions/{sid} or /sessions/{app}/{sid}; `root`: an absolute path. */
  scope: "session" | "root";
  /** The suffix after the session path ("" for the session itself), or the absolute path. `{name}` and `{peer}` are path parameters. */
  path: string;
  fields: Record<string, fc.Arbitrary<unknown>>;
  /** Bodies the route accepts (so the fuzz reaches what runs after validation); `{}` when it reads none. */
  valid: fc.Arbitrary<Record<string, unknown>>;
  /** Body cap of the route (bytes). */
  cap: number;
}

export interface HeaderSpec {
  token: "right" | "none" | "wrong" | "empty" | "bearer-only" | { text: string };
  caller: string;
  assert: string | undefined;
  contentType: string | undefined;
  origin: string | undefined;
  protocolHeader: string | undefined;
  /** Idempotency-Key (POST /inject's retry key; other routes ignore it). */
  idempotencyKey: string | undefined;
  /** A Host other than the one fetch sends: foreign, malformed, or loopback spelled otherwise. */
  host: string | undefined;
}

export interface WriteSpec {
  route: number;
  base: string;
  param: string;
  body: string | Uint8Array | undefined;
  headers: HeaderSpec;
}

export interface StreamSpec {
  base: string;
  query: string;
  lastEventId: string | undefined;
  protocolHeader: string | undefined;
  headers: HeaderSpec;
}

/** `arbitrary` one time in `1 + absentWeight`, else undefined (fc.option's freq weighs the other way). */
const sometimes = <T>(arbitrary: fc.Arbitrary<T>, absentWeight: number): fc.Arbitrary<T | undefined> =>
  fc.oneof({ weight: absentWeight, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary });

/** Printable ASCII (what a header value can carry through fetch). */
const headerChar = fc.integer({ min: 0x20, max: 0x7e }).map((code) => String.fromCharCode(code));
export const headerText = (maxLength = 40) => fc.string({ unit: headerChar, maxLength });

const nasty = [
  "",
  " ",
  "\u0000",
  "\n\nevent: x\ndata: {}\n\n",
  "\r\n",
  "__proto__",
  "constructor",
  "prototype",
  "\ud800",
  "\udfff",
  "💥",
  "\u202e",
  "\u2028",
  "\\",
  '"',
  "a".repeat(600),
];
const hostileString = fc.oneof(
  { weight: 4, arbitrary: fc.string({ maxLength: 20 }) },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 20 }) },
  { weight: 3, arbitrary: fc.constantFrom(...nasty) },
  { weight: 1, arbitrary: fc.integer({ min: 7000, max: 17_000 }).map((length) => "x".repeat(length)) },
);
const hostileNumber = fc.oneof(
  fc.integer(),
  fc.double(),
  fc.constantFrom(0, -0, -1, 1e308, -1e308, 2 ** 53 + 1, 0.1, 1e-320),
);
const keyText = fc.oneof(
  { weight: 3, arbitrary: fc.string({ maxLength: 12 }) },
  { weight: 1, arbitrary: fc.constantFrom("__proto__", "constructor", "prototype", "toString", "") },
);

/** Any JSON-able value, of every wrong type, with hostile strings and keys. */
export const hostileValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: "small", withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    hostileNumber,
    hostileString,
    fc.array(tie("value"), { maxLength: 3 }),
    fc.dictionary(keyText, tie("value"), { maxKeys: 3 }),
  ),
})).value;

/** Mostly a plausible value, sometimes anything. */
const either = (plausible: fc.Arbitrary<unknown>) =>
  fc.oneof({ weight: 3, arbitrary: plausible }, { weight: 1, arbitrary: hostileValue });
const text = (...values: string[]) =>
  either(
    values.length > 0
      ? fc.oneof(fc.constantFrom(...values), fc.string({ maxLength: 30 }))
      : fc.string({ maxLength: 30 }),
  );
const flag = either(fc.boolean());
const identity = fc.constantFrom("alice", "bob", "carol", "vic", "eve", "root", "gw", "local", "", " ");
const identities = either(fc.array(identity, { maxLength: 3 }));
const money = either(fc.oneof(fc.double({ min: -10, max: 1e6, noNaN: true }), fc.integer({ min: 0, max: 100 })));
const patterns = either(
  fc.array(
    either(fc.constantFrom("*", "bash(ls *)", "read_file(/tmp/**)", "write_file", "(((", "", "bash(rm -rf /)")),
    { maxLength: 3 },
  ),
);

const WRITE_CAP = 8 * 1024;
const none = fc.constant({});
const session = (
  method: FuzzRoute["method"],
  path: string,
  fields: Record<string, fc.Arbitrary<unknown>> = {},
  valid: fc.Arbitrary<Record<string, unknown>> = none,
): FuzzRoute => ({ method, scope: "session", path, fields, valid, cap: WRITE_CAP });
const pick = <T>(...values: T[]) => fc.constantFrom(...values);

/** Every write route of the attach app (src/surfaces/attach/*-routes.ts, src/surfaces/peers/peer-routes.ts). */
export const WRITE_ROUTES: readonly FuzzRoute[] = [
  {
    method: "POST",
    scope: "root",
    path: "/sessions",
    cap: WRITE_CAP,
    fields: {
      viewers: identities,
      contributors: identities,
      sessionID: either(
        fc.oneof(fc.constantFrom("fz", "default", "..", "a/b"), fc.stringMatching(/^fz-[a-z0-9]{1,8}$/)),
      ),
      app: text("spar", "other"),
      owner: fc.constantFrom("alice", "eve"),
    },
    valid: fc.oneof(
      none,
      fc.stringMatching(/^fz-[a-z0-9]{1,8}$/).map((sessionID) => ({ sessionID, viewers: ["vic"] })),
      pick({ sessionID: "fz" }),
    ),
  },
  session("DELETE", ""),
  session(
    "POST",
    "inject",
    { message: text("hello"), wake: flag },
    fc.record({ message: pick("hello", "again"), wake: fc.boolean() }),
  ),
  session("POST", "wake", { target: text("x"), prompt: text("go") }, fc.oneof(none, pick({ prompt: "go" }))),
  session("POST", "interrupt", { hold: flag, stop_subagents: flag }, fc.oneof(none, fc.record({ hold: fc.boolean() }))),
  session("POST", "pause", { reason: text("why") }, fc.oneof(none, pick({ reason: "why" }))),
  session(
    "POST",
    "resume",
    { mode: text("continue", "steer", "abandon"), steer: text("left") },
    pick({}, { mode: "continue" }, { mode: "abandon" }, { mode: "steer", steer: "left" }),
  ),
  session(
    "POST",
    "perms/respond",
    {
      id: text("0123456789abcdef01234567"),
      decision: text("allow-once", "allow-always", "deny"),
      approver: either(identity),
      reason: text("no"),
    },
    pick({ id: "0123456789abcdef01234567", decision: "deny" }),
  ),
  session(
    "POST",
    "perms/mode",
    { mode: text("ask", "acceptEdits", "plan", "yolo", "allow") },
    fc.record({ mode: pick("ask", "acceptEdits", "plan", "yolo") }),
  ),
  session("POST", "perms/allow", { patterns }, pick({ patterns: ["bash(ls *)"] }, { patterns: ["read_file"] })),
  session("POST", "perms/deny", { patterns }, pick({ patterns: ["bash(rm *)"] })),
  session(
    "POST",
    "guardrails/reset",
    { guardrail: text("watchdog", "cost_ceiling", "all"), additional_budget_usd: money },
    pick({}, { guardrail: "cost_ceiling", additional_budget_usd: 1 }, { guardrail: "watchdog" }),
  ),
  session(
    "POST",
    "pricing/set",
    {
      model: text("echo", "fuzz-model"),
      input_usd_per_mtok: money,
      output_usd_per_mtok: money,
      cached_usd_per_mtok: money,
      cache_write_usd_per_mtok: money,
    },
    fc.record({
      model: pick("echo", "fuzz-model"),
      input_usd_per_mtok: fc.integer({ min: 0, max: 50 }),
      output_usd_per_mtok: fc.integer({ min: 0, max: 50 }),
    }),
  ),
  session("POST", "pricing/refresh"),
  session("POST", "reload"),
  session("POST", "slash/compact", { focus: text("the plan") }, fc.oneof(none, pick({ focus: "the plan" }))),
  session("POST", "title", { title: text("a title") }, pick({ title: "a title" })),
  session("POST", "slash/done", { note: text("done") }),
  session("POST", "slash/btw", { question: text("why?") }, pick({ question: "why?" })),
  session(
    "POST",
    "slash/subagent",
    { name: text("helper"), goal: text("do it") },
    pick({ name: "helper", goal: "do it" }),
  ),
  session("POST", "slash/replan", { reason: text("new facts") }),
  session("POST", "agents/{name}/stop"),
  session(
    "PATCH",
    "acl",
    { owner: text("alice", "eve"), viewers: identities, contributors: identities },
    fc.record(
      { viewers: fc.subarray(["vic", "eve", "bob"]), contributors: fc.subarray(["carol", "bob"]) },
      { requiredKeys: [] },
    ),
  ),
  {
    method: "POST",
    scope: "root",
    path: "/peers",
    cap: 16 * 1024,
    fields: {
      name: text("p1", "p2", "fixture-peer"),
      endpoint: text("https://p.example", "http://127.0.0.1:1", "ftp://x", "/x"),
      labels: either(fc.dictionary(keyText, fc.string({ maxLength: 10 }), { maxKeys: 3 })),
      heartbeat_ttl_sec: either(fc.integer({ min: -5, max: 100_000 })),
    },
    valid: fc.record({
      name: pick("p1", "p2", "fixture-peer"),
      endpoint: pick("https://p.example", "http://127.0.0.1:1"),
      heartbeat_ttl_sec: fc.integer({ min: 1, max: 3600 }),
    }),
  },
  { method: "POST", scope: "root", path: "/peers/{peer}/heartbeat", cap: 0, fields: {}, valid: none },
  { method: "DELETE", scope: "root", path: "/peers/{peer}", cap: 0, fields: {}, valid: none },
];

/** Session ids and apps: mostly the fuzzed session, sometimes others, missing and hostile ones. */
export const FIXTURE_SESSIONS = new Set(["fz", "default"]);
const sessionId = fc.oneof(
  { weight: 12, arbitrary: fc.constant("fz") },
  { weight: 1, arbitrary: fc.constant("default") },
  { weight: 1, arbitrary: fc.constantFrom("nx-absent", "..", "%2e%2e", "a%2Fb", "%00", "x".repeat(300)) },
);
const sessionBase = fc.oneof(
  { weight: 3, arbitrary: sessionId.map((id) => `/sessions/${id}`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(
        fc.oneof(
          { weight: 6, arbitrary: fc.constant("spar") },
          { weight: 1, arbitrary: fc.constantFrom("other", "%00") },
        ),
        sessionId,
      )
      .map(([app, id]) => `/sessions/${app}/${id}`),
  },
);
/** `$PEER` is replaced by the fixture peer's registration id when the request is built. */
const pathParam = fc.constantFrom("$PEER", "$PEER", "helper", "peer-0000", "..", "%00", "a.b", "x".repeat(200));

const tokenSpec: fc.Arbitrary<HeaderSpec["token"]> = fc.oneof(
  { weight: 40, arbitrary: fc.constant("right" as const) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("none" as const, "wrong" as const, "empty" as const, "bearer-only" as const),
  },
  { weight: 1, arbitrary: headerText().map((value) => ({ text: value })) },
);
const callerSpec = fc.oneof(
  { weight: 10, arbitrary: fc.constant({ caller: "alice", assert: undefined }) },
  {
    weight: 6,
    arbitrary: fc
      .constantFrom("carol", "carol", "root", "root", "vic", "eve", "bob")
      .map((caller) => ({ caller, assert: undefined })),
  },
  { weight: 1, arbitrary: fc.oneof(identity, headerText(20)).map((assert) => ({ caller: "gw", assert })) },
  {
    weight: 1,
    arbitrary: fc
      .oneof(
        fc.constant("none"),
        headerText(30).map((forged) => `forged:${forged}`),
      )
      .map((caller) => ({ caller, assert: undefined })),
  },
);
const contentType = fc.oneof(
  { weight: 30, arbitrary: fc.constant("application/json") },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      undefined,
      "application/json; charset=utf-8",
      "APPLICATION/JSON",
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/json-patch+json",
      "text/plain; application/json",
      "",
    ),
  },
);
const origin = fc.oneof(
  { weight: 12, arbitrary: fc.constant(undefined) },
  {
    weight: 1,
    arbitrary: fc.constantFrom(
      "null",
      "https://evil.example",
      "http://127.0.0.1:1",
      "http://localhost.evil.example",
      "file://",
      "::::",
    ),
  },
);
const protocolText = fc.oneof(
  fc.constantFrom(
    "1.16.0",
    "1.0.0",
    "1",
    "2.0.0",
    "0.1.0",
    "banana",
    "",
    " ",
    "99999999999999999999.0.0",
    "1.16.0-rc.1",
    "v1",
  ),
  headerText(20),
);

const idempotencyKey = sometimes(fc.oneof(fc.constantFrom("k1", "k2", ""), headerText(300)), 6);
const host = sometimes(
  fc.constantFrom(
    "localhost",
    "127.0.0.1:1",
    "[::1]:9",
    "evil.example",
    "evil.example:80",
    "a b",
    "[::1",
    "x:99999",
    "user@evil.example",
    "LOCALHOST.",
  ),
  12,
);

export const headerSpec: fc.Arbitrary<HeaderSpec> = fc
  .record({
    token: tokenSpec,
    who: callerSpec,
    contentType,
    origin,
    protocolHeader: sometimes(protocolText, 10),
    idempotencyKey,
    host,
  })
  .map(({ token, who, contentType: type, origin: from, protocolHeader, idempotencyKey: key, host: hostHeader }) => ({
    token,
    caller: who.caller,
    assert: who.assert,
    contentType: type,
    origin: from,
    protocolHeader,
    idempotencyKey: key,
    host: hostHeader,
  }));

function nested(depth: number, open: string): string {
  const close = open === "[" ? "]" : open === '{"a":' ? "}" : "]}";
  return open.repeat(depth) + (open === '{"a":' ? "1" : "") + close.repeat(depth);
}

/** Bodies no schema expects: empty, scalars, broken and deeply nested documents, BOMs. */
const boundaryBody = fc.oneof(
  fc.constantFrom(
    "",
    " ",
    "\n",
    "null",
    "[]",
    "{}",
    "0",
    "-0",
    "1e309",
    '""',
    "{",
    "}",
    "[",
    '{"a":}',
    "\ufeff{}",
    "{}x",
    '{"__proto__":null}',
    "true",
    "[{}]",
    "{}{}",
  ),
  fc
    .tuple(fc.integer({ min: 1, max: 10_000 }), fc.constantFrom("[", '{"a":', '{"message":['))
    .map(([depth, open]) => nested(depth, open)),
);

function fieldsObject(route: FuzzRoute): fc.Arbitrary<Record<string, unknown>> {
  return fc.record(route.fields, { requiredKeys: [] }) as fc.Arbitrary<Record<string, unknown>>;
}

/** `{"__proto__": x, "constructor": {"prototype": y}, ...fields}` written as JSON text (an object literal would set the prototype instead). */
function pollutionBody(route: FuzzRoute): fc.Arbitrary<string> {
  return fc.tuple(fieldsObject(route), hostileValue, hostileValue).map(([fields, proto, inner]) => {
    const entries = [
      `"__proto__":${JSON.stringify(proto) ?? "null"}`,
      `"constructor":{"prototype":${JSON.stringify(inner) ?? "null"}}`,
      ...Object.entries(fields).map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value) ?? "null"}`),
    ];
    return `{${entries.join(",")}}`;
  });
}

/** A body a few bytes either side of the route's cap. */
function nearCap(route: FuzzRoute): fc.Arbitrary<string> {
  const cap = route.cap > 0 ? route.cap : WRITE_CAP;
  const field = Object.keys(route.fields)[0] ?? "message";
  const shell = JSON.stringify({ [field]: "" }).length;
  return fc
    .integer({ min: cap - 40, max: cap + 40 })
    .map((size) => JSON.stringify({ [field]: "x".repeat(Math.max(0, size - shell)) }));
}

/** A valid body with one field replaced by (or added as) any value. */
function nearValid(route: FuzzRoute): fc.Arbitrary<string> {
  const names = [...Object.keys(route.fields), "extra", "__proto__"];
  return fc
    .tuple(route.valid, fc.constantFrom(...names), hostileValue)
    .map(([valid, name, value]) => JSON.stringify({ ...valid, [name]: value }));
}

export function bodyFor(route: FuzzRoute): fc.Arbitrary<string | Uint8Array | undefined> {
  return fc.oneof(
    { weight: 3, arbitrary: route.valid.map((valid) => JSON.stringify(valid)) },
    { weight: 5, arbitrary: nearValid(route) },
    { weight: 6, arbitrary: fieldsObject(route).map((fields) => JSON.stringify(fields)) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(fieldsObject(route), fc.dictionary(keyText, hostileValue, { maxKeys: 3 }))
        .map(([fields, extra]) => JSON.stringify({ ...extra, ...fields })),
    },
    { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((value) => JSON.stringify(value)) },
    { weight: 2, arbitrary: boundaryBody },
    { weight: 1, arbitrary: pollutionBody(route) },
    { weight: 1, arbitrary: fc.uint8Array({ maxLength: 48 }) },
    { weight: 1, arbitrary: nearCap(route) },
    { weight: 1, arbitrary: fieldsObject(route).map((fields) => JSON.stringify([fields])) },
    { weight: 1, arbitrary: fc.constant(undefined) },
  );
}

export const writeSpec: fc.Arbitrary<WriteSpec> = fc
  .integer({ min: 0, max: WRITE_ROUTES.length - 1 })
  .chain((index) => {
    const route = WRITE_ROUTES[index] as FuzzRoute;
    return fc.record({
      route: fc.constant(index),
      base: sessionBase,
      param: pathParam,
      body: bodyFor(route),
      headers: headerSpec,
    });
  });

/** Cursors: numbers of every size (past 15 digits and int64 too), signs, exponents, unicode digits, garbage. */
const cursorText = fc.oneof(
  fc.nat().map(String),
  fc.bigInt({ min: 0n, max: 2n ** 70n }).map(String),
  fc.integer({ min: -1000, max: -1 }).map(String),
  fc.string({ unit: "binary", maxLength: 24 }),
  fc.constantFrom(
    "",
    " ",
    " 1",
    "1 ",
    "0x10",
    "1e3",
    "1.5",
    "+1",
    "-0",
    "\uff11",
    "NaN",
    "Infinity",
    "9".repeat(16),
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551616",
    "00000000000000000001",
  ),
);

export const streamSpec: fc.Arbitrary<StreamSpec> = fc
  .record({
    base: sessionBase,
    since: sometimes(cursorText, 1),
    protocol: sometimes(protocolText, 2),
    raw: sometimes(
      fc.constantFrom(
        "since=%",
        "since=%zz",
        "since=%FF%FE",
        "protocol=%",
        "since=1&since=x",
        "since",
        "protocol",
        "since=%00",
      ),
      8,
    ),
    lastEventId: sometimes(
      fc.oneof(
        cursorText.map((value) => value.replace(/[^\x20-\x7e]/g, "")),
        headerText(24),
      ),
      2,
    ),
    protocolHeader: sometimes(protocolText, 3),
    headers: headerSpec,
  })
  .map(({ base, since, protocol, raw, lastEventId, protocolHeader, headers }) => {
    const query = new URLSearchParams();
    if (since !== undefined) query.set("since", since);
    if (protocol !== undefined) query.set("protocol", protocol);
    const parts = [query.toString(), raw ?? ""].filter((part) => part !== "");
    return { base, query: parts.join("&"), lastEventId, protocolHeader, headers };
  });
