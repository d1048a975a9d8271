import { describe, expect, test } from "bun:test";
import type { AuditEvent, CommittedRow } from "../../../../src/core/events.ts";
import type { SessionRecord } from "../../../../src/core/session-store.ts";
import type { Incident } from "../../../../src/svc/ops/incident.ts";
import {
  STATE_READERS,
  type StateReader,
  abortedReader,
  incidentState,
} from "../../../../src/svc/ops/session-state.ts";

const AT = "2026-11-26T09:00:00.000Z";

function record(app: string, extra: Partial<SessionRecord> = {}): SessionRecord {
  return {
    app,
    id: "incident-x",
    owner: "svc-inject",
    viewers: [],
    contributors: [],
    createdAt: AT,
    lastTouchedAt: AT,
    ...extra,
  };
}

function audit(seq: number, name: string, metadata: Record<string, unknown>): CommittedRow {
  const event: AuditEvent = {
    kind: "audit",
    id: `e${seq}`,
    ts: AT,
    invocationId: "t1",
    author: "svc/gate",
    name,
    metadata,
  };
  return { seq, event };
}

const PARKED = audit(1, "gate-interrupt", {
  interrupt_id: "gate-1",
  call_id: "c1",
  tool: "blocker__apply_change",
  args: { replicas: 10 },
  key: "apply_change(replicas=10)",
  agent: "worker",
  message: "Approve mutating call apply_change(replicas=10)?",
});
const APPROVED = audit(2, "gate-audit", { interrupt_id: "gate-1", outcome: "apply", run_args: { replicas: 10 } });

function incident(workerRows: CommittedRow[], coordinator: Partial<SessionRecord> = {}): Incident {
  return {
    id: "incident-x",
    coordinator: { record: record("svc", coordinator), rows: [] },
    specialists: [{ record: record("svc.worker"), rows: workerRows }],
  };
}

describe("the incident state readers", () => {
  test("an unanswered gate question in a specialist session is paused; once answered, idle", () => {
    expect(incidentState(incident([PARKED]))).toEqual({ state: "paused", notes: [] });
    expect(incidentState(incident([PARKED, APPROVED]))).toEqual({ state: "idle", notes: [] });
  });

  test("an unanswered result question of the coordinator is paused", () => {
    const asked = audit(1, "result-question", { interrupt_id: "approve-disk", agent: "disk", message: "Approve?" });
    const shape: Incident = { ...incident([]), coordinator: { record: record("svc"), rows: [asked] } };
    expect(incidentState(shape).state).toBe("paused");
  });

  test("aborted wins over paused (the list's order is the precedence) and notes the reason", () => {
    const aborted = incident([PARKED], { abort: { reason: "wrong cluster", at: AT, by: "svc-inject" } });
    expect(incidentState(aborted)).toEqual({ state: "aborted", notes: ["aborted: wrong cluster"] });
  });

  test("a reader added to the list decides where it stands, and its note joins the PENDING notes", () => {
    const interrupted: StateReader = () => ({ state: "interrupted", note: "interrupted: daemon shutdown" });
    expect(incidentState(incident([]), [...STATE_READERS, interrupted])).toEqual({
      state: "interrupted",
      notes: ["interrupted: daemon shutdown"],
    });
    expect(incidentState(incident([PARKED]), [...STATE_READERS, interrupted]).state).toBe("paused");
    expect(incidentState(incident([]), [abortedReader]).state).toBe("idle");
  });

  test("a gate pause and a drain's interruption mark the coordinator: aborted > gate pause > question > interrupted", () => {
    const paused = audit(3, "svc-pause", {
      token_digest: "d1",
      reason: "maintenance_window",
      message: "node pool upgrade",
      minted_at: AT,
      expires_at: "2026-12-03T09:00:00.000Z",
      by: "svc-inject",
      interrupted: false,
    });
    const marked = audit(4, "svc-interrupted", { reason: "shutdown (SIGTERM)", at: AT, pause_requested: false });
    const withCoordinator = (rows: CommittedRow[], workerRows: CommittedRow[] = []): Incident => ({
      ...incident(workerRows),
      coordinator: { record: record("svc"), rows },
    });
    expect(incidentState(withCoordinator([marked]))).toEqual({
      state: "interrupted",
      notes: ["interrupted: shutdown (SIGTERM)"],
    });
    expect(incidentState(withCoordinator([marked], [PARKED])).state).toBe("paused");
    const both = incidentState(withCoordinator([paused, marked]));
    expect(both.state).toBe("paused");
    expect(both.notes[0]).toBe(
      "gate pause: maintenance_window, node pool upgrade, token expires 2026-12-03T09:00:00.000Z",
    );
    const cleared = audit(5, "svc-interrupted-cleared", { why: "turn ended", at: AT });
    expect(incidentState(withCoordinator([marked, cleared])).state).toBe("idle");
  });
});
