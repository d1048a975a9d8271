/**
 * Schema of the PostgreSQL session store and its ordered migrations. The version is the one row of
 * `spar_schema`; migration N (1-based) takes the database from version N-1 to N, all pending ones
 * in one transaction under a transaction-scoped advisory lock, so daemons opening one database at
 * once migrate it once. Owns DDL only.
 *
 * Text columns that are ordered or compared (app, sid, RFC 3339 times) use the "C" collation:
 * byte order, as the sqlite store compares them, whatever the database's locale.
 */
import type { SQL } from "bun";
import { schemaRefusal } from "../store-rules.ts";

const V1_SCHEMA = `
CREATE TABLE spar_sessions (
  pk bigserial PRIMARY KEY,
  app text COLLATE "C" NOT NULL,
  sid text COLLATE "C" NOT NULL,
  owner text NOT NULL,
  viewers text NOT NULL,
  contributors text NOT NULL,
  title text,
  created_at text NOT NULL,
  last_touched_at text NOT NULL,
  head integer NOT NULL DEFAULT 0,
  aborted_at text,
  abort_reason text,
  aborted_by text,
  UNIQUE (app, sid)
);
CREATE INDEX spar_sessions_by_sid ON spar_sessions (sid);

CREATE TABLE spar_events (
  session_pk bigint NOT NULL,
  seq integer NOT NULL,
  body text NOT NULL,
  PRIMARY KEY (session_pk, seq)
);

CREATE TABLE spar_inbox (
  ord bigserial PRIMARY KEY,
  session_pk bigint NOT NULL,
  prompt_id text NOT NULL,
  message text NOT NULL,
  queued_at text NOT NULL,
  wake boolean NOT NULL,
  drained boolean NOT NULL DEFAULT false,
  UNIQUE (session_pk, prompt_id)
);
CREATE INDEX spar_inbox_pending ON spar_inbox (session_pk, ord) WHERE NOT drained;
CREATE INDEX spar_inbox_wake ON spar_inbox (session_pk) WHERE NOT drained AND wake;

CREATE TABLE spar_tombstones (
  app text COLLATE "C" NOT NULL,
  sid text COLLATE "C" NOT NULL,
  deleted_at text NOT NULL,
  owner text NOT NULL DEFAULT '',
  PRIMARY KEY (app, sid)
);
CREATE INDEX spar_tombstones_by_sid ON spar_tombstones (sid);

CREATE TABLE spar_interruption_claims (
  app text COLLATE "C" NOT NULL,
  sid text COLLATE "C" NOT NULL,
  interruption text NOT NULL,
  owner text NOT NULL,
  expires_at text COLLATE "C" NOT NULL,
  PRIMARY KEY (app, sid, interruption)
);

CREATE TABLE spar_daemon_boots (
  boot_id text PRIMARY KEY,
  started_at text COLLATE "C" NOT NULL,
  clean boolean NOT NULL DEFAULT false
);
`;

/** v2: the trace context of the request that queued an inbox message, JSON `{traceparent, tracestate?}` (D301). */
const V2_INBOX_TRACE = "ALTER TABLE spar_inbox ADD COLUMN trace_context text;";

/**
 * v3: several daemons on one database (D487): a session's lease (its holder and expiry, on the
 * database's clock) and the commands other daemons commit for that holder.
 */
const V3_SESSION_CLUSTER = `
CREATE TABLE spar_session_leases (
  session_pk bigint PRIMARY KEY,
  holder text NOT NULL,
  expires_at timestamptz NOT NULL
);
CREATE INDEX spar_session_leases_by_expiry ON spar_session_leases (expires_at);

CREATE TABLE spar_session_commands (
  id bigserial PRIMARY KEY,
  session_pk bigint NOT NULL,
  op text NOT NULL,
  args text NOT NULL,
  result text,
  answered_at timestamptz
);
CREATE INDEX spar_session_commands_pending ON spar_session_commands (session_pk, id) WHERE result IS NULL;
CREATE INDEX spar_session_commands_answered ON spar_session_commands (answered_at) WHERE result IS NOT NULL;
`;

/** Append only; never edit a shipped migration. */
const MIGRATIONS: readonly string[] = [V1_SCHEMA, V2_INBOX_TRACE, V3_SESSION_CLUSTER];

export const PG_SCHEMA_VERSION = MIGRATIONS.length;

/** Any fixed key: the advisory lock that serializes migrations of one database. */
const MIGRATION_LOCK = 0x5350_4152;

/** Brings the database to PG_SCHEMA_VERSION; refuses one a newer spar wrote. */
export async function migrate(sql: SQL, where: string): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`SELECT pg_advisory_xact_lock(${MIGRATION_LOCK})`;
    await tx.unsafe("CREATE TABLE IF NOT EXISTS spar_schema (version integer NOT NULL)");
    const rows: { version: number }[] = await tx`SELECT version FROM spar_schema`;
    const version = rows[0]?.version ?? 0;
    const refused = schemaRefusal(where, version, PG_SCHEMA_VERSION);
    if (refused !== undefined) throw refused;
    for (let next = version; next < PG_SCHEMA_VERSION; next++) await tx.unsafe(MIGRATIONS[next] as string);
    if (rows.length === 0) await tx`INSERT INTO spar_schema (version) VALUES (${PG_SCHEMA_VERSION})`;
    else await tx`UPDATE spar_schema SET version = ${PG_SCHEMA_VERSION}`;
  });
}
