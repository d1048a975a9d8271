/**
 * The PostgreSQL column of bench/event-log.ts (D513): the same 100 writers, one per session, each
 * awaiting its append before the next, through PostgresStore on a throwaway server over its Unix
 * socket (pg-cluster.ts); 1 and 10 events per append, bounded by count and by time. Then, on a
 * store holding 1500 events per session as the sqlite column's does, every session's log replayed
 * from cursor 0 in pages of 1000 via `store.read` (every event parsed), and the same query with
 * the bodies left unparsed (diagnostic).
 * Measured in the same round, on fresh databases of the same server:
 *  - baseline: single-row autocommit INSERTs into a table shaped like `spar_events`, one
 *    connection, one statement per round trip (the shape of the sqlite column's baseline);
 *  - what-ifs (diagnostic, not the store; pg-what-if.ts): the same writers through a group
 *    commit whose batch is two statements in all, two per append, or the store's three per append
 *    with the appends pipelined; they say what each change to the store's writer would buy.
 * Also: the server's CPU (all its processes) and this process's, as % of one core over the window.
 */
import { SQL } from "bun";
import type { AuditEvent } from "../src/core/events.ts";
import { PostgresStore } from "../src/store/postgres/postgres-store.ts";
import type { BenchPostgres } from "./pg-cluster.ts";
import { type WhatIf, whatIfWriter } from "./pg-what-if.ts";

export const PG_SESSIONS = 100;
const MAX_APPENDS_PER_SESSION = 1500;
const PAGE = 1000;

export interface PgAppendRun {
  rate: number;
  opsPerTx: number;
  longestBatchMs: number;
  serverCpuPct: number;
  benchCpuPct: number;
}

export interface PgRound {
  one: PgAppendRun;
  turn: PgAppendRun;
  /** The what-if writers (pg-what-if.ts), 1 event per append. */
  whatIf: Record<WhatIf, PgAppendRun>;
  auto: number;
  replay: number;
  /** The store's page query through Bun.sql's `.values()`, bodies not parsed (diagnostic). */
  rawReplay: number;
  /** This process's CPU over the store's replay, % of one core (the server's is below it). */
  replayBenchCpuPct: number;
  replayServerCpuPct: number;
}

const keyOf = (i: number) => ({ app: "bench", id: `s${i}` });

function event(session: number, n: number): AuditEvent {
  return {
    kind: "audit",
    id: `0190b7e2-0000-7000-8000-${String(session * 100_000 + n).padStart(12, "0")}`,
    ts: "2026-01-01T00:00:00.000Z",
    invocationId: "inv-0190b7e2",
    author: "agent",
    name: "bench",
    metadata: { n, note: "x".repeat(40) },
  };
}

let databases = 0;
async function freshStore(pg: BenchPostgres): Promise<{ store: PostgresStore; url: string }> {
  const url = await pg.createDatabase(`bench_log_${process.pid}_${databases++}`);
  const store = await PostgresStore.open(url);
  await Promise.all(
    Array.from({ length: PG_SESSIONS }, (_, i) =>
      store.createSession({
        ...keyOf(i),
        owner: "bench",
        viewers: [],
        contributors: [],
        createdAt: "t",
        lastTouchedAt: "t",
      }),
    ),
  );
  return { store, url };
}

/** Runs `write(session, n)` for every session in parallel until its count or the deadline; CPU and rate around it. */
async function timedWriters(
  pg: BenchPostgres,
  seconds: number,
  perAppend: number,
  write: (session: number, n: number) => Promise<void>,
): Promise<{ rows: number; window: number; serverCpuPct: number; benchCpuPct: number }> {
  const appends = MAX_APPENDS_PER_SESSION / perAppend;
  const cpu0 = pg.cpuSeconds();
  const own0 = process.cpuUsage();
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let rows = 0;
  await Promise.all(
    Array.from({ length: PG_SESSIONS }, async (_, i) => {
      for (let n = 0; n < appends && performance.now() < deadline; n++) {
        await write(i, n);
        rows += perAppend;
      }
    }),
  );
  const window = (performance.now() - started) / 1000;
  const own = process.cpuUsage(own0);
  return {
    rows,
    window,
    serverCpuPct: ((pg.cpuSeconds() - cpu0) / window) * 100,
    benchCpuPct: ((own.user + own.system) / 1e6 / window) * 100,
  };
}

async function storeAppends(pg: BenchPostgres, perAppend: number, seconds: number) {
  const { store, url } = await freshStore(pg);
  const before = { ...store.stats };
  const timed = await timedWriters(pg, seconds, perAppend, async (i, n) => {
    await store.append(
      keyOf(i),
      Array.from({ length: perAppend }, (_, j) => event(i, n * perAppend + j)),
    );
  });
  const run: PgAppendRun = {
    rate: timed.rows / timed.window,
    opsPerTx: (store.stats.ops - before.ops) / Math.max(1, store.stats.transactions - before.transactions),
    longestBatchMs: store.stats.longestBatchMs,
    serverCpuPct: timed.serverCpuPct,
    benchCpuPct: timed.benchCpuPct,
  };
  return { store, url, run, rows: timed.rows };
}

/** Rows replayed: as many per session as the sqlite column's (1500), whatever the timed appends wrote. */
const REPLAY_ROWS = PG_SESSIONS * MAX_APPENDS_PER_SESSION;

/** A store whose sessions hold MAX_APPENDS_PER_SESSION events each, written in appends of 150. */
async function replayStore(pg: BenchPostgres): Promise<{ store: PostgresStore; url: string }> {
  const filled = await freshStore(pg);
  const chunk = 150;
  await Promise.all(
    Array.from({ length: PG_SESSIONS }, async (_, i) => {
      for (let n = 0; n < MAX_APPENDS_PER_SESSION; n += chunk)
        await filled.store.append(
          keyOf(i),
          Array.from({ length: chunk }, (_, j) => event(i, n + j)),
        );
    }),
  );
  return filled;
}

/** Every session's log from cursor 0 in pages of PAGE; the total must be what was appended. */
async function replay(store: PostgresStore, expected: number): Promise<number> {
  let rows = 0;
  const started = performance.now();
  for (let i = 0; i < PG_SESSIONS; i++) {
    for (let cursor = 0; ; ) {
      const page = await store.read(keyOf(i), cursor, PAGE);
      if (page.length === 0) break;
      rows += page.length;
      cursor = page[page.length - 1]?.seq ?? cursor;
    }
  }
  if (rows !== expected) throw new Error(`postgres replay read ${rows} rows, ${expected} appended`);
  return rows / ((performance.now() - started) / 1000);
}

/** Diagnostic: the store's page query, rows as arrays (`.values()`), bodies left unparsed. */
async function rawReplay(url: string, expected: number): Promise<number> {
  const sql = new SQL(url, { max: 1 });
  try {
    let rows = 0;
    const started = performance.now();
    for (let i = 0; i < PG_SESSIONS; i++) {
      for (let cursor = 0; ; ) {
        const page: [number, string][] = await sql`SELECT e.seq, e.body FROM spar_events e
          JOIN spar_sessions s ON s.pk = e.session_pk
          WHERE s.app = ${"bench"} AND s.sid = ${`s${i}`} AND e.seq > ${cursor} AND e.seq <= ${cursor + PAGE}
          ORDER BY e.seq`.values();
        if (page.length === 0) break;
        rows += page.length;
        cursor = page[page.length - 1]?.[0] ?? cursor;
      }
    }
    if (rows !== expected) throw new Error(`postgres raw replay read ${rows} rows, ${expected} appended`);
    return rows / ((performance.now() - started) / 1000);
  } finally {
    await sql.close({ timeout: 0 });
  }
}

/** Single-row autocommit INSERTs on one connection into a table shaped like spar_events. */
async function autocommit(pg: BenchPostgres, seconds: number): Promise<number> {
  const sql = new SQL(await pg.createDatabase(`bench_auto_${process.pid}_${databases++}`), { max: 1 });
  try {
    await sql`CREATE TABLE events (session_pk bigint NOT NULL, seq integer NOT NULL, body text NOT NULL, PRIMARY KEY (session_pk, seq))`;
    const started = performance.now();
    const deadline = started + seconds * 1000;
    let n = 0;
    for (; n < 50_000 && performance.now() < deadline; n++) {
      const session = n % PG_SESSIONS;
      const body = JSON.stringify(event(session, n));
      await sql`INSERT INTO events (session_pk, seq, body) VALUES (${session + 1}, ${Math.floor(n / PG_SESSIONS) + 1}, ${body})`;
    }
    return n / ((performance.now() - started) / 1000);
  } finally {
    await sql.close({ timeout: 0 });
  }
}

/** A what-if writer (pg-what-if.ts) under the same 100 writers, 1 event per append. */
async function whatIfAppends(pg: BenchPostgres, how: WhatIf, seconds: number): Promise<PgAppendRun> {
  const { store, url } = await freshStore(pg);
  await store.close();
  const sql = new SQL(url, { max: 2 });
  const keys: { pk: string; sid: string }[] = await sql`SELECT pk, sid FROM spar_sessions`;
  const pkOf = new Map(keys.map((row) => [row.sid, Number(row.pk)]));
  const writer = whatIfWriter(sql, how);
  const timed = await timedWriters(pg, seconds, 1, (i, n) =>
    writer.append(pkOf.get(`s${i}`) ?? 0, `s${i}`, [JSON.stringify(event(i, n))]),
  );
  await sql.close({ timeout: 0 });
  return {
    rate: timed.rows / timed.window,
    opsPerTx: writer.stats.ops / Math.max(1, writer.stats.transactions),
    longestBatchMs: writer.stats.longestBatchMs,
    serverCpuPct: timed.serverCpuPct,
    benchCpuPct: timed.benchCpuPct,
  };
}

/** One round of the PostgreSQL column; `seconds` bounds each timed phase. */
export async function pgEventLogRound(pg: BenchPostgres, seconds: number): Promise<PgRound> {
  const one = await storeAppends(pg, 1, seconds);
  await one.store.close();
  const filled = await replayStore(pg);
  await replay(filled.store, REPLAY_ROWS); // warms the server's cache, as the sqlite column does
  const cpu0 = pg.cpuSeconds();
  const own0 = process.cpuUsage();
  const replayStarted = performance.now();
  const replayRate = await replay(filled.store, REPLAY_ROWS);
  const replaySeconds = (performance.now() - replayStarted) / 1000;
  const own = process.cpuUsage(own0);
  const replayServerCpuPct = ((pg.cpuSeconds() - cpu0) / replaySeconds) * 100;
  await filled.store.close();
  const raw = await rawReplay(filled.url, REPLAY_ROWS);
  const turn = await storeAppends(pg, 10, seconds);
  await turn.store.close();
  const whatIf: Record<WhatIf, PgAppendRun> = {
    batched: await whatIfAppends(pg, "batched", seconds),
    merged: await whatIfAppends(pg, "merged", seconds),
    pipelined: await whatIfAppends(pg, "pipelined", seconds),
  };
  const auto = await autocommit(pg, Math.min(3, seconds));
  return {
    one: one.run,
    turn: turn.run,
    whatIf,
    auto,
    replay: replayRate,
    rawReplay: raw,
    replayBenchCpuPct: ((own.user + own.system) / 1e6 / replaySeconds) * 100,
    replayServerCpuPct,
  };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const whole = (n: number) => Math.round(n).toLocaleString("en-US");

/**
 * The column's tables (medians of the rounds), with the issue-34 targets; `sqlite` (the sqlite
 * store's median events/s at 1 and 10 events per append, when that column ran) puts each row
 * beside the sqlite store at the same events per append.
 */
export function printPgEventLog(
  rounds: readonly PgRound[],
  about: string,
  sqlite?: { one: number; turn: number },
): void {
  const auto = median(rounds.map((round) => round.auto));
  const row = (label: string, pick: (round: PgRound) => PgAppendRun, sqliteRate = sqlite?.one) => {
    const runs = rounds.map(pick);
    const rate = median(runs.map((run) => run.rate));
    console.log(
      `| ${label} | ${whole(rate)} | ${(rate / auto).toFixed(1)}x | ${sqliteRate ? `${(rate / sqliteRate).toFixed(2)}x` : "-"} | ` +
        `${median(runs.map((run) => run.opsPerTx)).toFixed(0)} | ${Math.max(...runs.map((run) => run.longestBatchMs)).toFixed(0)} ms | ` +
        `${median(runs.map((run) => run.serverCpuPct)).toFixed(0)}% | ${median(runs.map((run) => run.benchCpuPct)).toFixed(0)}% |`,
    );
  };
  console.log(
    `\nPostgreSQL column: ${about}; ${PG_SESSIONS} concurrent sessions, median of ${rounds.length} rounds\n` +
      "(issue 34 targets: >= 50,000 events/s, replay >= 500,000 rows/s)\n",
  );
  console.log(
    "| measure (postgres) | events/s | vs pg autocommit | vs sqlite store, same events/append | appends/tx | longest batch | server CPU | bench CPU |",
  );
  console.log("|---|---|---|---|---|---|---|---|");
  row("store, 1 event/append", (round) => round.one);
  row("store, 10 events/append", (round) => round.turn, sqlite?.turn);
  row("what-if (diagnostic), 1 event/append: 2 statements per batch", (round) => round.whatIf.batched);
  row("what-if (diagnostic), 1 event/append: 2 statements per append, awaited", (round) => round.whatIf.merged);
  row("what-if (diagnostic), 1 event/append: the store's 3, appends pipelined", (round) => round.whatIf.pipelined);
  console.log(`| autocommit, 1 INSERT per transaction, 1 connection | ${whole(auto)} | 1.0x | | 1 | | | |`);
  console.log(`\n| replay (postgres), pages of ${PAGE} | rows/s | bench CPU | server CPU |\n|---|---|---|---|`);
  const pct = (pick: (round: PgRound) => number) => `${median(rounds.map(pick)).toFixed(0)}%`;
  console.log(
    `| via store.read, every event parsed | ${whole(median(rounds.map((round) => round.replay)))} | ` +
      `${pct((round) => round.replayBenchCpuPct)} | ${pct((round) => round.replayServerCpuPct)} |`,
  );
  console.log(
    `| the same query, \`.values()\`, bodies not parsed (diagnostic) | ${whole(median(rounds.map((round) => round.rawReplay)))} | | |`,
  );
}
