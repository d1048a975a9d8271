/**
 * The operator CLI's read verbs (issue 16 items 6 and 7) against stores the real daemon built: the
 * gated workload on a scripted model parks, approves, edits, rejects and grants calls of the
 * counting MCP server; then `spar svc sessions list|show|export-decisions` run as processes on the
 * store, once while the daemon still serves it (read-only, no lock: the daemon keeps writing) and
 * again after it is gone. Exports validate against docs/svc-decision.schema.json.
 */
import { beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, statSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import Ajv from "ajv";
import { daemonScope, runToExit } from "../../support/daemon-scope.ts";
import { type Daemon, sparCommand, tempDir } from "../../support/daemon.ts";
import {
  APPLY,
  gatedDaemonOptions,
  gatedWorkload,
  injectIncident,
  postTo,
  resume,
} from "../../support/gated-workload.ts";
import { call, say } from "../../support/scripted.ts";
import { shapeDaemonOptions, shapeWorkload } from "../../support/shape-workload.ts";

const scope = daemonScope({ per: "file" });

const FINISH = [call("finish_task", { result: "done" }), say("handled")];
const propose = (replicas: number) => [
  call("worker", { request: `scale web to ${replicas}` }),
  call(APPLY, { replicas }),
];
/** The worker reports a two-call plan, then is asked to apply it and proposes the first call. */
const PLAN_AND_FIRST = [
  call("worker", { request: "plan the scale-up" }),
  call("finish_task", {
    result: "scale in two steps",
    proposed_change: [
      { tool: "apply_change", arguments: '{"replicas":2}' },
      { tool: "apply_change", arguments: { replicas: 3 } },
    ],
  }),
  call("worker", { request: "apply the plan" }),
  call(APPLY, { replicas: 2 }),
];

/** Every model call of the file's daemon, in the order the incidents below consume them. */
const SCRIPT = [
  ...propose(10), // incident-ap: parks, approved
  ...FINISH,
  ...propose(10), // incident-ed: parks, edited to 3
  ...FINISH,
  ...propose(10), // incident-rj: parks, rejected
  ...FINISH,
  ...PLAN_AND_FIRST, // incident-cs: parks with a change set, stays pending
  ...PLAN_AND_FIRST, // incident-st: change set approved; the grant fires; a repeat asks again (Stale:)
  call(APPLY, { replicas: 3 }),
  call(APPLY, { replicas: 3 }),
  say("nothing to do"), // incident-ab: idle, then aborted
];

interface Built {
  daemon: Daemon;
  store: string;
  /** `list` while the daemon still served the store. */
  listedLive: string;
  questions: Record<string, string>;
}

let built: Built;

async function questionOf(daemon: Daemon, uid: string): Promise<string> {
  const injected = await injectIncident(daemon, uid);
  expect(injected.status).toBe(202);
  expect(injected.body.state).toBe("paused");
  return injected.pending[0]?.interrupt_id ?? "";
}

function cli(...args: string[]) {
  return runToExit(sparCommand("svc", "sessions", ...args), { timeoutMs: 20_000 });
}

beforeAll(async () => {
  const workload = gatedWorkload();
  const daemon = await scope.start(gatedDaemonOptions(workload, SCRIPT));
  const questions: Record<string, string> = {};
  questions.ap = await questionOf(daemon, "ap");
  expect((await resume(daemon, "incident-ap", questions.ap, { verdict: "approve", note: "go" })).status).toBe(202);
  questions.ed = await questionOf(daemon, "ed");
  const edited = await resume(daemon, "incident-ed", questions.ed, {
    verdict: "edit",
    args: { replicas: 3 },
    note: "three is enough",
  });
  expect(edited.status).toBe(202);
  questions.rj = await questionOf(daemon, "rj");
  expect((await resume(daemon, "incident-rj", questions.rj, { verdict: "reject", note: "freeze" })).status).toBe(202);
  questions.cs = await questionOf(daemon, "cs");
  const tooWide = await resume(daemon, "incident-cs", questions.cs, { verdict: "approve", scope: "session" });
  expect(tooWide.status).toBe(400);
  questions.st = await questionOf(daemon, "st");
  const granted = await resume(daemon, "incident-st", questions.st, { verdict: "approve", scope: "change_set" });
  expect(granted.status).toBe(202);
  expect(granted.body.state).toBe("paused");
  questions.repeat = (granted.body.pending as { interrupt_id: string }[])[0]?.interrupt_id ?? "";
  expect((await injectIncident(daemon, "ab")).body.state).toBe("idle");

  const live = await cli("list", `--session-db=${daemon.sessionDb}`);
  expect(live.stderr).toBe("");
  expect(live.code).toBe(0);
  // The daemon still writes after a read: the reader took no lock.
  const aborted = await postTo(daemon, "/abort", { session_id: "incident-ab", reason: "wrong cluster" });
  expect(aborted.status).toBe(202);
  built = { daemon, store: daemon.sessionDb, listedLive: live.stdout, questions };
});

describe("sessions list", () => {
  test("while the daemon runs it lists every incident with its state, newest first; the daemon keeps writing", () => {
    const lines = built.listedLive.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^SESSION {2,}USER {2,}APP {2,}LAST EVENT {2,}STATE {2,}PENDING$/);
    const rows = lines.slice(1).map((line) => line.split(/ {2,}/));
    expect(rows.map((row) => row[0]).sort()).toEqual(
      ["incident-ab", "incident-ap", "incident-cs", "incident-ed", "incident-rj", "incident-st"].sort(),
    );
    const times = rows.map((row) => row[3] ?? "");
    expect([...times].sort().reverse()).toEqual(times);
    const byId = Object.fromEntries(rows.map((row) => [row[0], row]));
    expect(byId["incident-ab"]?.[4]).toBe("idle");
    expect(byId["incident-cs"]?.slice(1, 5)).toEqual(["svc-inject", "svc", expect.stringMatching(/Z$/), "paused"]);
    expect(byId["incident-cs"]?.[5]).toBe(built.questions.cs);
    expect(byId["incident-st"]?.[5]).toBe(built.questions.repeat);
  });

  test("with no daemon it reads the same store: --state for paused, aborted, idle and interrupted", async () => {
    await built.daemon.kill9();
    const state = async (name: string) => {
      const result = await cli("list", `--session-db=${built.store}`, `--state=${name}`);
      expect(result.code).toBe(0);
      return result.stdout;
    };
    const paused = await state("paused");
    expect(paused).toContain("incident-cs");
    expect(paused).toContain("incident-st");
    expect(paused).not.toContain("incident-ap");
    const aborted = await state("aborted");
    expect(aborted).toMatch(/incident-ab +svc-inject +svc +\S+ +aborted +\(aborted: wrong cluster\)\n/);
    expect(aborted.trimEnd().split("\n")).toHaveLength(2);
    const idle = await state("idle");
    for (const id of ["incident-ap", "incident-ed", "incident-rj"]) expect(idle).toContain(id);
    expect(idle).not.toContain("incident-ab");
    expect(await state("interrupted")).toMatch(/PENDING\n\(no sessions\)\n$/);
  });

  test("--output=json gives the same rows as data; --user filters by owner", async () => {
    const result = await cli("list", `--session-db=${built.store}`, "--output=json", "--user=svc-inject");
    expect(result.code).toBe(0);
    const { sessions } = JSON.parse(result.stdout) as { sessions: Record<string, unknown>[] };
    expect(sessions).toHaveLength(6);
    expect(sessions.find((session) => session.session === "incident-st")).toMatchObject({
      user: "svc-inject",
      app: "svc",
      workload: "gated",
      state: "paused",
      pending: [built.questions.repeat],
      notes: [],
    });
    expect(sessions.find((session) => session.session === "incident-ab")).toMatchObject({
      state: "aborted",
      notes: ["aborted: wrong cluster"],
    });
    const nobody = await cli("list", `--session-db=${built.store}`, "--user=alice");
    expect(nobody.stdout).toEndWith("(no sessions)\n");
  });
});

describe("sessions show", () => {
  test("a pending change-set question: interrupt id, message, kind, the change-set listing, schema and the resume command", async () => {
    const result = await cli("show", "incident-cs", `--session-db=${built.store}`);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const id = built.questions.cs;
    expect(result.stdout).toContain("Session:    incident-cs\nApp:        svc\nUser:       svc-inject\n");
    expect(result.stdout).toContain("State:      paused\n");
    expect(result.stdout).toContain(["Pending input:", `  Interrupt: ${id}`, "  Author:    worker"].join("\n"));
    expect(result.stdout).toContain(
      [
        "  Message:   Approve mutating call apply_change(replicas=2)? It is one of 2 calls in the change set worker proposed; answer with scope=change_set to authorize all 2.",
        "  Kind:      write-gate park (blocker__apply_change)",
        "  Change set: 2 call(s) proposed by worker",
        '    1. apply_change({"replicas":2})',
        '    2. apply_change({"replicas":3})',
        "    freshness of apply_change: none declared — this approval is bounded by time alone",
        `    Approve all with: --response='{"verdict":"approve","scope":"change_set"}' (valid for 600s)`,
        '  Schema:    {"type":"object","properties":{"verdict":{"type":"string","enum":["approve","reject","edit"]},"scope":{"type":"string","enum":["once","change_set"]},"args":{"type":"object"},"note":{"type":"string"}},"required":["verdict"]}',
        "  Token:     none (answer it by interrupt id; mrt_ tokens resume gate pauses)",
        "",
        "Resume with:",
        `  spar svc sessions resume incident-cs --interrupt=${id} --response='<json>'`,
      ].join("\n"),
    );
  });

  test("a call asked again after its grant was spent shows the Stale: line", async () => {
    const result = await cli("show", "incident-st", `--session-db=${built.store}`);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(`  Interrupt: ${built.questions.repeat}`);
    expect(result.stdout).toContain(
      "  Stale:     this call was already approved once and has already been made; a second identical call needs its own approval\n",
    );
  });

  test("the operator edit record: Proposed, Executed, Approver, Note", async () => {
    const result = await cli("show", "incident-ed", `--session-db=${built.store}`);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("State:      idle\n");
    expect(result.stdout).toContain(
      [
        "Operator edit applied:",
        "  Proposed: apply_change(replicas=10)",
        "  Executed: apply_change(replicas=3)",
        "  Approver: svc-inject",
        "  Note:     three is enough",
      ].join("\n"),
    );
    expect(result.stdout).not.toContain("Pending input:");
  });

  test("an aborted incident names the abort; --output=json gives the same data", async () => {
    const text = await cli("show", "incident-ab", `--session-db=${built.store}`);
    expect(text.stdout).toMatch(/State: {6}aborted\n/);
    expect(text.stdout).toMatch(/Aborted: {4}wrong cluster \(by svc-inject at \S+\)\n/);
    const json = await cli("show", "incident-cs", `--session-db=${built.store}`, "--output=json");
    expect(json.code).toBe(0);
    const shown = JSON.parse(json.stdout) as Record<string, unknown>;
    expect(shown).toMatchObject({ session: "incident-cs", state: "paused", workload: "gated", edits: [] });
    expect(shown.pending).toEqual([
      expect.objectContaining({
        interrupt_id: built.questions.cs,
        agent: "worker",
        kind: "write-gate",
        tool: "blocker__apply_change",
        change_set: expect.objectContaining({ specialist: "worker", grantable: true, ttl_seconds: 600 }),
        schema: expect.objectContaining({ required: ["verdict"] }),
      }),
    ]);
  });

  test("an unknown session is exit 1 naming it and the store", async () => {
    const result = await cli("show", "incident-nope", `--session-db=${built.store}`);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `spar svc sessions show: session "incident-nope" (app "svc"): session not found in ${built.store}\n`,
    );
  });
});

const SCHEMA = JSON.parse(readFileSync(resolve(import.meta.dir, "../../../docs/svc-decision.schema.json"), "utf8"));

function validator() {
  const ajv = new Ajv({ allErrors: true, strict: true });
  ajv.addFormat(
    "date-time",
    (value: string) => /^\d{4}-\d{2}-\d{2}T[\d:.]+(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value)),
  );
  return ajv.compile(SCHEMA);
}

/** The lines of an export, each checked against the shipped schema. */
function validLines(text: string): Record<string, unknown>[] {
  const validate = validator();
  const lines = text
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
  for (const line of lines) {
    if (!validate(line))
      throw new Error(`${JSON.stringify(line)} breaks the schema: ${JSON.stringify(validate.errors)}`);
  }
  return lines;
}

describe("sessions export-decisions", () => {
  test("every decision, oldest first, approvers digested; every line validates against the shipped schema", async () => {
    const result = await cli("export-decisions", `--session-db=${built.store}`);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    const [header, ...records] = validLines(result.stdout);
    expect(header?._meta).toMatchObject({
      tool: "spar svc sessions export-decisions",
      schema: "svc.decision/v1",
      redaction: "approver_digest",
      source: built.store,
      records: 6,
    });
    const digest = `sha256:${new Bun.CryptoHasher("sha256").update("svc-inject").digest("hex").slice(0, 16)}`;
    expect(records.map((record) => [record.session, record.outcome, record.authority, record.disposition])).toEqual([
      ["incident-ap", "approve", "operator_verdict", "authorized"],
      ["incident-ed", "edit", "operator_verdict", "authorized"],
      ["incident-rj", "reject", "operator_verdict", "refused_by_operator"],
      ["incident-cs", undefined, "operator_verdict", "refused_by_mast"],
      ["incident-st", "approve", "operator_verdict", "authorized"],
      ["incident-st", "approve", "change_set_grant", "authorized"],
    ]);
    for (const record of records) expect(record.approver).toBe(digest);
    expect(records[0]).toMatchObject({
      workload: "gated",
      specialist: "worker",
      interrupt_id: built.questions.ap,
      tool: "apply_change",
      proposed_key: "apply_change(replicas=10)",
      proposed_args: { replicas: 10 },
      note: "go",
    });
    expect(records[0]).not.toHaveProperty("executed_key");
    expect(records[1]).toMatchObject({
      executed_key: "apply_change(replicas=3)",
      executed_args: { replicas: 3 },
      note: "three is enough",
    });
    expect(records[2]).toMatchObject({ refusal: "denied_by_operator", note: "freeze" });
    expect(records[3]).toMatchObject({ refusal: "approval_scope_refused", proposed_key: "apply_change(replicas=2)" });
    expect(records[4]).toMatchObject({ scope: "change_set" });
    expect(records[5]).toMatchObject({
      scope: "change_set",
      change_set: "apply_change(replicas=2)",
      proposed_key: "apply_change(replicas=3)",
      proposed_args: { replicas: 3 },
    });
    expect(Object.keys(records[1] ?? {})).toEqual(
      [
        "decided_at",
        "session",
        "workload",
        "specialist",
        "invocation",
        "function_call_id",
        "interrupt_id",
        "tool",
        "outcome",
        "scope",
        "authority",
        "disposition",
        "proposed_key",
        "proposed_args",
        "executed_key",
        "executed_args",
        "approver",
        "note",
      ].filter((key) => key !== "scope"),
    );
  });

  test("--include-approver exports raw identities (redaction none)", async () => {
    const result = await cli("export-decisions", "incident-ap", `--session-db=${built.store}`, "--include-approver");
    const [header, ...records] = validLines(result.stdout);
    expect(header?._meta).toMatchObject({ redaction: "none", session: "incident-ap", records: 1 });
    expect(records[0]?.approver).toBe("svc-inject");
  });

  test("filters: a session id, --workload, --since (inclusive) and --until (exclusive)", async () => {
    const all = validLines((await cli("export-decisions", `--session-db=${built.store}`)).stdout).slice(1);
    const third = String(all[2]?.decided_at);
    const fifth = String(all[4]?.decided_at);
    const window = await cli("export-decisions", `--session-db=${built.store}`, `--since=${third}`, `--until=${fifth}`);
    const [header, ...records] = validLines(window.stdout);
    expect(header?._meta).toMatchObject({ since: third, until: fifth, records: 2 });
    expect(records.map((record) => record.session)).toEqual(["incident-rj", "incident-cs"]);
    const session = validLines((await cli("export-decisions", "incident-st", `--session-db=${built.store}`)).stdout);
    expect(session.slice(1).map((record) => record.authority)).toEqual(["operator_verdict", "change_set_grant"]);
    const other = validLines(
      (await cli("export-decisions", `--session-db=${built.store}`, "--workload=triage")).stdout,
    );
    expect(other).toHaveLength(1);
    expect(other[0]?._meta).toMatchObject({ workload: "triage", records: 0 });
    const gated = validLines((await cli("export-decisions", `--session-db=${built.store}`, "--workload=gated")).stdout);
    expect(gated).toHaveLength(7);
  });

  test("--out writes a 0600 file (replacing a wider one) and says how many; stdout carries no records", async () => {
    const out = join(tempDir("spar-export-"), "decisions.jsonl");
    writeFileSync(out, "old", { mode: 0o644 });
    const result = await cli("export-decisions", `--session-db=${built.store}`, `--out=${out}`);
    expect(result.code).toBe(0);
    expect(result.stdout).toBe(
      `exported 6 decision(s) to ${out} (approver identities digested; re-run with --include-approver for raw)\n`,
    );
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(validLines(readFileSync(out, "utf8"))).toHaveLength(7);
    const raw = await cli("export-decisions", `--session-db=${built.store}`, `--out=${out}`, "--include-approver");
    expect(raw.stdout).toContain("(raw approver identities — this file names the people who approved each change)");
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });
});

test("a graph's result question: show prints its workload, interrupt id, message and {approved} schema, with no Kind or Token line", async () => {
  const directory = shapeWorkload(
    [
      "name: triage-graph",
      "dispatch: graph",
      "specialists:",
      "  - classifier",
      "  - disk_full",
      "  - _fallback",
      "hitl:",
      "  require_approval: true",
    ],
    {
      classifier: { front: ["mode: SingleTurn"], instruction: "Reply with exactly one of: disk_full, _fallback." },
      disk_full: { front: ["tools:", "  mcp: []"] },
      _fallback: { front: ["tools:", "  mcp: []"] },
    },
  );
  const daemon = await scope.start(
    shapeDaemonOptions(directory, [say("disk_full\n"), call("finish_task", { result: "/var is full" })]),
  );
  expect((await injectIncident(daemon, "g1")).body.state).toBe("paused");
  const shown = await cli("show", "incident-g1", `--session-db=${daemon.sessionDb}`);
  expect(shown.code).toBe(0);
  // The dispatch shape's turns name the workload's coordinator, so the workload is known.
  expect(shown.stdout).toContain("Workload:   triage-graph\n");
  expect(shown.stdout).toContain(
    ["Pending input:", "  Interrupt: approve-disk_full", "  Author:    disk_full"].join("\n"),
  );
  expect(shown.stdout).toContain(
    [
      `  Message:   Approve triage result from disk_full? Result: {"result":"/var is full"}`,
      '  Schema:    {"type":"object","properties":{"approved":{"type":"boolean"},"note":{"type":"string"}},"required":["approved"]}',
      "",
      "Resume with:",
      "  spar svc sessions resume incident-g1 --interrupt=approve-disk_full --response='<json>'",
    ].join("\n"),
  );
  expect(shown.stdout).not.toContain("Kind:");
  expect(shown.stdout).not.toContain("Token:");
  const listed = await cli("list", `--session-db=${daemon.sessionDb}`, "--state=paused");
  expect(listed.stdout).toMatch(/incident-g1 +svc-inject +svc +\S+ +paused +approve-disk_full\n/);
});

describe("usage and errors", () => {
  test("a missing --session-db, a bad --state, --output or --since is exit 2 naming the flag; --help is exit 0", async () => {
    const missing = await cli("list");
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain("--session-db is required");
    const state = await cli("list", `--session-db=${built.store}`, "--state=running");
    expect(state.code).toBe(2);
    expect(state.stderr).toContain('--state takes paused, aborted, interrupted, idle, got "running"');
    const output = await cli("show", "incident-cs", `--session-db=${built.store}`, "--output=yaml");
    expect(output.code).toBe(2);
    expect(output.stderr).toContain("--output takes table, json");
    const since = await cli("export-decisions", `--session-db=${built.store}`, "--since=yesterday");
    expect(since.code).toBe(2);
    expect(since.stderr).toContain("--since takes an RFC 3339 time");
    const noId = await cli("show", `--session-db=${built.store}`);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toContain("the session id is required");
    for (const verb of ["list", "show", "export-decisions"]) {
      const help = await cli(verb, "--help");
      expect(help.code).toBe(0);
      expect(help.stdout).toContain(`usage: spar svc sessions ${verb}`);
    }
  });

  test("a store that does not exist, or is not spar's, is exit 1 naming it; nothing is created", async () => {
    const directory = tempDir("spar-nostore-");
    const missing = join(directory, "none.db");
    const result = await cli("list", `--session-db=${missing}`);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`spar svc sessions list: session store ${missing} does not exist\n`);
    expect(statSync(missing, { throwIfNoEntry: false })).toBeUndefined();
    const foreign = join(directory, "foreign.txt");
    writeFileSync(foreign, "not a database at all, just text that is long enough to have a header".repeat(4));
    const refused = await cli("export-decisions", `--session-db=${foreign}`);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `spar svc sessions export-decisions: ${foreign} is not a spar session store (file is not a database)\n`,
    );
  });
});
