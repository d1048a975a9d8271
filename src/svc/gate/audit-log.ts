/**
 * The write gate's audit trail as JSON Lines (docs/svc.md#the-audit-trail): one `{"time","level","msg":"write
 * gate",...}` line per adjudication, beside the durable `gate-audit` row of the session's log.
 * Written to the `--audit-log` file (appended, mode 0600) or, without one, to stderr. The lines of
 * one tick go out in one write on the next macrotask (a burst of 1,000 approvals is a few writes,
 * not 1,000), and close writes what is left; the durable record is the row, this is its mirror.
 */
import { closeSync, openSync, writeSync } from "node:fs";
import type { AuditOutcome } from "./gate-ledger.ts";

export interface AuditRecord {
  outcome: AuditOutcome;
  /** The model-facing tool name. */
  tool: string;
  /** The call key the operator reads. */
  call: string;
  agent: string;
  session: string;
  function_call_id: string;
  interrupt_id?: string;
  detail?: string;
  approver?: string;
  note?: string;
}

export interface AuditLog {
  record(entry: AuditRecord): void;
  close(): void;
}

export function auditLine(entry: AuditRecord, at: Date): string {
  return `${JSON.stringify({ time: at.toISOString(), level: "INFO", msg: "write gate", ...entry })}\n`;
}

/** The audit log at `path` (created 0600 when missing, appended to), or stderr when undefined. */
export function openAuditLog(path: string | undefined, now: () => Date = () => new Date()): AuditLog {
  if (path === undefined) {
    return { record: (entry) => process.stderr.write(auditLine(entry, now())), close: () => {} };
  }
  const descriptor = openSync(path, "a", 0o600);
  let open = true;
  let pending = "";
  const flush = (): void => {
    if (!open || pending === "") return;
    const text = pending;
    pending = "";
    writeSync(descriptor, text);
  };
  return {
    record: (entry) => {
      if (!open) return;
      if (pending === "") setImmediate(flush);
      pending += auditLine(entry, now());
    },
    close: () => {
      if (!open) return;
      flush();
      open = false;
      closeSync(descriptor);
    },
  };
}
