/**
 * Row shapes of the sqlite session store and their mapping to core records. Pure: no I/O, no SQL.
 */
import type { InboxItem, SessionRecord } from "../../core/session-store.ts";
import { decodeTraceCarrier } from "../../core/trace-carrier.ts";
import type { SessionKey } from "../../core/session-key.ts";

export interface SessionRow {
  pk: number;
  app: string;
  sid: string;
  owner: string;
  viewers: string;
  contributors: string;
  title: string | null;
  created_at: string;
  last_touched_at: string;
  aborted_at: string | null;
  abort_reason: string | null;
  aborted_by: string | null;
}

export interface InboxRow {
  prompt_id: string;
  message: string;
  queued_at: string;
  wake: number;
  trace_context: string | null;
}

export interface KeyRow {
  app: string;
  sid: string;
}

/** Bound parameters of the session insert, in column order (app .. last_touched_at). */
export type SessionParams = [string, string, string, string, string, string | null, string, string];

export function sessionParams(record: SessionRecord): SessionParams {
  return [
    record.app,
    record.id,
    record.owner,
    JSON.stringify(record.viewers),
    JSON.stringify(record.contributors),
    record.title ?? null,
    record.createdAt,
    record.lastTouchedAt,
  ];
}

export function sessionRecord(row: SessionRow): SessionRecord {
  const record: SessionRecord = {
    app: row.app,
    id: row.sid,
    owner: row.owner,
    viewers: stringArray(row.viewers),
    contributors: stringArray(row.contributors),
    createdAt: row.created_at,
    lastTouchedAt: row.last_touched_at,
  };
  if (row.title !== null) record.title = row.title;
  if (row.aborted_at !== null)
    record.abort = { at: row.aborted_at, reason: row.abort_reason ?? "", by: row.aborted_by ?? "" };
  return record;
}

export function inboxItem(row: InboxRow): InboxItem {
  const item: InboxItem = {
    promptId: row.prompt_id,
    message: row.message,
    queuedAt: row.queued_at,
    wake: row.wake !== 0,
  };
  const trace = decodeTraceCarrier(row.trace_context);
  if (trace !== undefined) item.trace = trace;
  return item;
}

export function sessionKey(row: KeyRow): SessionKey {
  return { app: row.app, id: row.sid };
}

function stringArray(json: string): string[] {
  const value: unknown = JSON.parse(json);
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === "string") : [];
}
