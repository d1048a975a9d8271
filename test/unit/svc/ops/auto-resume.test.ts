/**
 * Boot auto-resume's decisions in process (src/svc/ops/auto-resume.ts), on fake sessions: the
 * per-boot cap of 50 turns, the loop breaker's window, the order of the checks (stale before
 * superseded before the loop breaker before the session's state), a claim held elsewhere, and the
 * interruption fold (interruption-rows.ts) that decides who is a candidate.
 */
import { describe, expect, test } from "bun:test";
import type { CommittedRow, SessionEvent } from "../../../../src/core/events.ts";
import type { SessionRecord } from "../../../../src/core/session-store.ts";
import type { SessionState } from "../../../../src/svc/listener/listener-port.ts";
import {
  type AutoResumeDeps,
  type AutoResumeOutcome,
  MAX_TURNS_PER_BOOT,
  autoResume,
} from "../../../../src/svc/ops/auto-resume.ts";
import {
  attemptRow,
  clearedRow,
  interruptedRow,
  interruptionState,
  isInterrupted,
} from "../../../../src/svc/ops/interruption-rows.ts";
import { OpsJournal } from "../../../../src/svc/ops/ops-journal.ts";
import type { SessionRepair } from "../../../../src/svc/ops/session-repair.ts";

const NOW = Date.parse("2026-11-26T10:00:00Z");
const at = (msAgo: number) => new Date(NOW - msAgo).toISOString();
const header = (msAgo = 0) => ({ id: `e${Math.random()}`, ts: at(msAgo), invocationId: "svc-ops", author: "svc/ops" });
const CAUSE = { reason: "shutdown (SIGTERM)", pauseRequested: false };

function rows(...events: SessionEvent[]): CommittedRow[] {
  return events.map((event, index) => ({ seq: index + 1, event }));
}

const prompt = (text: string): SessionEvent => ({ ...header(), kind: "user-message", text, promptIds: [] });

/** A fake daemon: sessions by id with their rows and state; records what auto-resume did. */
function fakeDaemon(sessions: Record<string, { rows: CommittedRow[]; state?: SessionState }>) {
  const appended: Array<{ id: string; name: string }> = [];
  const turns: string[] = [];
  const counted: AutoResumeOutcome[] = [];
  const log: string[] = [];
  const ops = new OpsJournal({
    coordinatorApp: "svc",
    executorSession: async (key) =>
      ({
        journal: {
          header: () => header(),
          append: async (events: SessionEvent[]) => {
            for (const event of events) appended.push({ id: key.id, name: event.kind === "audit" ? event.name : "" });
            return [];
          },
        },
      }) as never,
    log: { read: async (key) => sessions[key.id]?.rows ?? [] },
  });
  const repair = {
    plan: async () => ({ kind: "resume", repairs: [] }),
    apply: async () => {},
  } as unknown as SessionRepair;
  const deps: AutoResumeDeps = {
    ops,
    repair,
    coordinatorDispatch: true,
    windowMs: 3_600_000,
    sessions: async () => Object.keys(sessions).map((id) => ({ app: "svc", id }) as SessionRecord),
    state: async (id) => sessions[id]?.state ?? "idle",
    head: async (key) => sessions[key.id]?.rows.length ?? 0,
    claim: async () => true,
    bootId: "boot-1",
    runTurn: async (id) => {
      turns.push(id);
    },
    draining: () => false,
    count: (outcome) => counted.push(outcome),
    log: (line) => log.push(line),
    now: () => new Date(NOW),
  };
  return { deps, appended, turns, counted, log };
}

describe("autoResume", () => {
  test("at most 50 continuation turns per boot: the 51st interrupted session waits for the next boot, uncounted", async () => {
    const sessions: Record<string, { rows: CommittedRow[] }> = {};
    for (let index = 0; index < MAX_TURNS_PER_BOOT + 1; index++)
      sessions[`incident-${String(index).padStart(2, "0")}`] = {
        rows: rows(prompt("go"), interruptedRow(header(60_000 - index), CAUSE)),
      };
    const daemon = fakeDaemon(sessions);
    const outcomes = await autoResume(daemon.deps);
    expect(MAX_TURNS_PER_BOOT).toBe(50);
    expect(daemon.counted).toHaveLength(50);
    expect(new Set(daemon.counted)).toEqual(new Set(["resumed"]));
    // Oldest marker first: the newest one waits.
    expect(outcomes.has("incident-50")).toBe(false);
    expect(daemon.log.some((line) => line.includes("incident-50 waits for the next boot"))).toBe(true);
    // Every attempt row is written before its turn is started.
    expect(daemon.appended.filter((row) => row.name === "svc-autoresume-attempt")).toHaveLength(50);
  });

  test("the loop breaker counts attempts within 10 minutes only; its check comes before the session's state", async () => {
    const marker = interruptedRow(header(30 * 60_000), CAUSE);
    const daemon = fakeDaemon({
      old: { rows: rows(prompt("go"), marker, ...[1, 2, 3].map((n) => attemptRow(header(20 * 60_000), n, "b"))) },
      hot: {
        rows: rows(prompt("go"), marker, ...[1, 2, 3].map((n) => attemptRow(header(60_000), n, "b"))),
        state: "ambiguous",
      },
      two: { rows: rows(prompt("go"), marker, ...[1, 2].map((n) => attemptRow(header(60_000), n, "b"))) },
    });
    const outcomes = await autoResume(daemon.deps);
    expect(Object.fromEntries(outcomes)).toEqual({
      old: "resumed",
      hot: "skipped_loopbreak",
      two: "resumed",
    });
  });

  test("stale wins over superseded; a window of 0 has no staleness; a claim held elsewhere is left uncounted", async () => {
    const stale = rows(prompt("go"), interruptedRow(header(2 * 3_600_000), CAUSE), prompt("someone else"));
    const staleOnly = fakeDaemon({ stale: { rows: stale } });
    expect(Object.fromEntries(await autoResume(staleOnly.deps))).toEqual({ stale: "skipped_stale" });
    const noWindow = fakeDaemon({ stale: { rows: stale } });
    noWindow.deps.windowMs = 0;
    expect(Object.fromEntries(await autoResume(noWindow.deps))).toEqual({ stale: "skipped_superseded" });
    const claimed = fakeDaemon({ fresh: { rows: rows(prompt("go"), interruptedRow(header(1000), CAUSE)) } });
    claimed.deps.claim = async () => false;
    expect((await autoResume(claimed.deps)).size).toBe(0);
    expect(claimed.turns).toEqual([]);
  });
});

describe("interruptionState", () => {
  test("a marker is cleared by a clear row, superseded by a prompt that is not auto-resume's, kept across auto-resume's own prompt", () => {
    const marked = rows(prompt("go"), interruptedRow(header(), CAUSE));
    expect(isInterrupted(interruptionState(marked))).toBe(true);
    expect(
      interruptionState(rows(...marked.map((row) => row.event), clearedRow(header(), "done"))).marker,
    ).toBeUndefined();
    const resumedByUs = interruptionState(rows(...marked.map((row) => row.event), prompt("[auto-resume] continue")));
    expect(isInterrupted(resumedByUs)).toBe(true);
    const superseded = interruptionState(rows(...marked.map((row) => row.event), prompt("a new incident")));
    expect(superseded.marker?.supersededAt).toBe(3);
    expect(isInterrupted(superseded)).toBe(false);
    const again = interruptionState(
      rows(
        ...marked.map((row) => row.event),
        clearedRow(header(), "done"),
        interruptedRow(header(), { reason: "operator stop", pauseRequested: true }),
      ),
    );
    expect(again.marker).toMatchObject({ reason: "operator stop", pauseRequested: true, seq: 4 });
  });
});
