/**
 * A run of appends in one write transaction, in two or three statements whatever its size (D491):
 * the sessions' rows locked and read at once (in pk order, so daemons sharing the database lock
 * them in one order), the drained prompts checked at once (when the run drains any), then one
 * statement writing every event row, every head and every drained prompt and (several daemons on
 * the database) announcing the sessions' new heads. The per-op rules are those
 * of an append alone: an unknown session, a prompt not pending or a lease not held (D487) fails
 * that op only, before anything of it is written; seqs follow each session's head in request order.
 */
import type { TransactionSQL } from "bun";
import type { CommittedRow, SessionEvent } from "../../core/events.ts";
import { sessionKeyString } from "../../core/session-key.ts";
import { leaseLost, promptNotPending, sessionNotFound } from "../store-rules.ts";
import type { StoreWriteOp } from "../store-write-op.ts";
import { ROWS_CHANNEL } from "./postgres-cluster.ts";

export type AppendOp = Extract<StoreWriteOp, { kind: "append" }>;

/**
 * Whose lease an append needs (several daemons on the database, D487): the holder's run id, and
 * the app whose session of the same id carries the lease (D492: svc's incident sessions share
 * their coordinator's); absent: the session's own.
 */
export interface Fence {
  holder: string;
  leaseApp?: ((app: string) => string) | undefined;
}

const sameApp = (app: string) => app;

/** What the transaction's statements told on their way: its id (a commit in doubt is asked about it, D501). */
export interface TransactionFound {
  xid?: string | undefined;
}

interface LockedSession {
  pk: string;
  app: string;
  sid: string;
  head: number;
  held: boolean;
}

/**
 * How long the server lets a fenced append's transaction sit idle (waiting for its daemon's next
 * statement) before it ends the connection (D527). A partition cuts a daemon off in the middle of
 * a transaction that holds session rows' locks; the server cannot tell, so without a limit the
 * locks would stay until TCP gives up (hours) and the daemon taking a session over could not
 * append. A writer's statements follow each other at once, so only a cut-off daemon reaches it.
 */
export const FENCED_IDLE_LIMIT_MS = 5_000;

/** Event rows per INSERT at most: three parameters each, under PostgreSQL's 65,535. */
const ROWS_PER_INSERT = 20_000;

/** Applies `ops` (appends, in request order) in `tx`; returns the event rows written. */
export async function appendRun(
  tx: TransactionSQL,
  ops: readonly AppendOp[],
  fence?: Fence,
  found?: TransactionFound,
): Promise<number> {
  const holder = fence?.holder;
  const sessions = await lockSessions(tx, ops, holder, fence?.leaseApp ?? sameApp);
  const pending = await pendingPrompts(tx, ops, sessions);
  const heads = new Map<string, number>();
  const drained: { pk: string; prompt_id: string }[] = [];
  const values: { session_pk: string; seq: number; body: string }[] = [];
  for (const op of ops) {
    const name = sessionKeyString(op.key);
    const session = sessions.get(name);
    if (session === undefined) {
      op.error = sessionNotFound(op.key);
      continue;
    }
    if (holder !== undefined && !session.held) {
      op.error = leaseLost(op.key);
      continue;
    }
    const missing = op.drained.find((promptId) => !pending.delete(`${session.pk}\u0000${promptId}`));
    if (missing !== undefined) {
      // Give back what this op took, so a later op draining them still finds them pending.
      for (const promptId of op.drained) if (promptId !== missing) pending.add(`${session.pk}\u0000${promptId}`);
      op.error = promptNotPending(missing, op.key);
      continue;
    }
    const head = heads.get(session.pk) ?? session.head;
    const rows: CommittedRow[] = new Array(op.events.length);
    for (let i = 0; i < op.events.length; i++) {
      rows[i] = { seq: head + i + 1, event: op.events[i] as SessionEvent };
      values.push({ session_pk: session.pk, seq: head + i + 1, body: op.payloads[i] as string });
    }
    heads.set(session.pk, head + op.events.length);
    for (const promptId of op.drained) drained.push({ pk: String(session.pk), prompt_id: promptId });
    op.result = rows;
  }
  if (values.length === 0) return 0;
  // Everything but the last chunk of a huge run goes ahead; the last goes with the heads, the
  // drained prompts and the announcements in one statement (D491).
  let start = 0;
  for (; values.length - start > ROWS_PER_INSERT; start += ROWS_PER_INSERT)
    await tx`INSERT INTO spar_events ${tx(values.slice(start, start + ROWS_PER_INSERT), "session_pk", "seq", "body")}`;
  const newHeads = [...heads].map(([pk, head]) => ({ pk: String(pk), head }));
  const announced = holder === undefined ? [] : announcements(sessions, heads);
  const written: { xid: string }[] = await tx`WITH inserted AS (
      INSERT INTO spar_events ${tx(values.slice(start), "session_pk", "seq", "body")} RETURNING 1),
    heads AS (UPDATE spar_sessions AS s SET head = v.head
      FROM json_to_recordset(${JSON.stringify(newHeads)}::text::json) AS v(pk bigint, head integer)
      WHERE s.pk = v.pk RETURNING 1),
    drained AS (UPDATE spar_inbox AS i SET drained = true
      FROM json_to_recordset(${JSON.stringify(drained)}::text::json) AS v(pk bigint, prompt_id text)
      WHERE i.session_pk = v.pk AND i.prompt_id = v.prompt_id RETURNING 1)
    SELECT (SELECT count(*) FROM inserted) AS rows, (SELECT count(*) FROM heads) AS heads,
      (SELECT count(*) FROM drained) AS drained,
      (SELECT count(pg_notify(${ROWS_CHANNEL}, value)) FROM json_array_elements_text(${JSON.stringify(announced)}::text::json)) AS announced,
      txid_current()::text AS xid`;
  if (found !== undefined) found.xid ??= written[0]?.xid;
  return values.length;
}

/** The run's sessions, locked in pk order, by key; `held`: the lease of `holder` is current (D487). */
async function lockSessions(
  tx: TransactionSQL,
  ops: readonly AppendOp[],
  holder: string | undefined,
  leaseApp: (app: string) => string,
): Promise<Map<string, LockedSession>> {
  const keys = new Map<string, { app: string; sid: string; lapp: string }>();
  for (const op of ops)
    keys.set(sessionKeyString(op.key), { app: op.key.app, sid: op.key.id, lapp: leaseApp(op.key.app) });
  const wanted = JSON.stringify([...keys.values()]);
  // The lease covering a session is that of the session of the same id in its lease app (D492).
  // With other daemons the transaction may then sit idle only so long holding these rows' locks (D527).
  const rows: LockedSession[] = await tx`SELECT s.pk, s.app, s.sid, s.head,
      ${holder ?? null}::text IS NOT NULL AND EXISTS (SELECT 1 FROM spar_session_leases l
        JOIN spar_sessions c ON c.pk = l.session_pk
        WHERE c.app = k.lapp AND c.sid = s.sid AND l.holder = ${holder ?? null}
          AND l.expires_at > clock_timestamp()) AS held,
      CASE WHEN ${holder ?? null}::text IS NOT NULL
        THEN set_config('idle_in_transaction_session_timeout', ${String(FENCED_IDLE_LIMIT_MS)}, true) END AS idle_limit
    FROM spar_sessions s JOIN json_to_recordset(${wanted}::text::json) AS k(app text, sid text, lapp text)
      ON s.app = k.app AND s.sid = k.sid
    ORDER BY s.pk FOR UPDATE OF s`;
  const sessions = new Map<string, LockedSession>();
  for (const row of rows) sessions.set(sessionKeyString({ app: row.app, id: row.sid }), row);
  return sessions;
}

/** The prompts the run drains that are pending now, as `pk NUL prompt id`. */
async function pendingPrompts(
  tx: TransactionSQL,
  ops: readonly AppendOp[],
  sessions: Map<string, LockedSession>,
): Promise<Set<string>> {
  const asked: { pk: string; prompt_id: string }[] = [];
  for (const op of ops) {
    const session = sessions.get(sessionKeyString(op.key));
    if (session !== undefined)
      for (const promptId of op.drained) asked.push({ pk: String(session.pk), prompt_id: promptId });
  }
  if (asked.length === 0) return new Set();
  const rows: { session_pk: string; prompt_id: string }[] = await tx`SELECT i.session_pk, i.prompt_id
    FROM spar_inbox i JOIN json_to_recordset(${JSON.stringify(asked)}::text::json) AS v(pk bigint, prompt_id text)
      ON i.session_pk = v.pk AND i.prompt_id = v.prompt_id
    WHERE NOT i.drained`;
  return new Set(rows.map((row) => `${row.session_pk}\u0000${row.prompt_id}`));
}

/** Each session's new head, announced on commit to every daemon sharing the database (D488). */
function announcements(sessions: Map<string, LockedSession>, heads: Map<string, number>): string[] {
  const payloads: string[] = [];
  for (const session of sessions.values()) {
    const head = heads.get(session.pk);
    if (head !== undefined) payloads.push(JSON.stringify({ app: session.app, sid: session.sid, head }));
  }
  return payloads;
}
