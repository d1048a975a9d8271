/**
 * Event-log benchmark (run: `bun bench/event-log.ts [--rounds=3]`; ~10 s a round). On temp files only:
 *  - store: 100 sessions appending concurrently through SqliteStore, one writer per session
 *    awaiting each append before the next: 1 event per append, and 10 events per append (a
 *    turn's worth of rows). Each group commit writes one `log` row; merges re-encode log rows
 *    into per-session `event_blocks` (D150). Default options, so merges triggered by the threshold run
 *    inside the timed window, and WAL checkpoints run in the checkpointer worker beside it; the
 *    rows still in the journal at the end are then merged and timed too ("incl. merge debt": the
 *    rate if that merge had been paid inside the window). The longest main-thread pause is the
 *    longest group commit or merge transaction (each holds the event loop); "WAL holds" are the
 *    moments writes waited (event loop free) for the WAL to restart, and "max WAL" the largest
 *    -wal file seen. A third run repeats 1 event/append with `checkpoint: false` (SQLite's
 *    automatic checkpoint inside commits, as before the checkpointer) for comparison;
 *  - baseline: rows of the same shape (50,000, a third of a store run: long enough to include WAL
 *    checkpoints) as single-row autocommit prepared INSERTs into a table shaped like the v1-v3
 *    `events` table (clustered by session and seq) on one exclusive-mode
 *    connection that checkpoints in its commits (as the store did before the checkpointer), on a
 *    separate file;
 *  - replay: every session's log from cursor 0 in pages of 1000 via `store.read` (every event
 *    parsed: one JSON.parse per block), for rows merged into `event_blocks` and for rows still in
 *    the log (memory); and raw `.values()` over `event_blocks` without JSON.parse (diagnostic).
 * Three rounds by default; per-round lines on stderr, a table of medians on stdout, with `uptime` load
 * averages from before and after (the machine may be shared with other benchmarks).
 *
 * Then the PostgreSQL column (pg-event-log.ts, D513): the same writers and replay through
 * PostgresStore on a throwaway server over its Unix socket, same number of rounds. `--pg=off`
 * skips it (default: on when /usr/lib/postgresql/15/bin exists, D512); `--pg-seconds=N` (default
 * 5) bounds each of its timed phases; `--only=pg` runs the PostgreSQL column alone.
 */
import { Database } from "bun:sqlite";
import { execSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditEvent } from "../src/core/events.ts";
import { CACHE_KIB, WAL_AUTOCHECKPOINT_PAGES } from "../src/store/sqlite/open-db.ts";
import { SqliteStore, type SqliteStoreOptions } from "../src/store/sqlite/sqlite-store.ts";
import { argFlags } from "./lib.ts";
import { pgColumnWanted, startBenchPostgres } from "./pg-cluster.ts";
import { type PgRound, pgEventLogRound, printPgEventLog } from "./pg-event-log.ts";

const SESSIONS = 100;
const APPENDS_PER_SESSION = 1500;
const TURN_EVENTS = 10;
const AUTOCOMMIT_ROWS = 50_000;
const JOURNAL_REPLAY_PER_SESSION = 600;
const PAGE = 1000;
/** `--rounds=N` (default 3): more rounds steady the medians on a shared machine. */
const ROUNDS = Math.max(1, Number(process.argv.find((arg) => arg.startsWith("--rounds="))?.slice(9) ?? 3) || 3);
const FLAGS = argFlags(process.argv.slice(2));
const PG = pgColumnWanted(FLAGS);
const SQLITE = FLAGS.get("only") !== "pg";
const PG_SECONDS = Math.max(0.2, Number(FLAGS.get("pg-seconds") ?? 5) || 5);

const dir = mkdtempSync(join(tmpdir(), "spar-bench-"));
let files = 0;
const nextFile = () => join(dir, `bench-${files++}.db`);
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

function loadAverage(): string {
  try {
    return execSync("uptime", { encoding: "utf8" })
      .trim()
      .replace(/^.*load average:\s*/, "");
  } catch {
    return "unknown";
  }
}

interface Run {
  /** Committed events/s over the timed window (merges it triggered included). */
  rate: number;
  /** Rows / (window + merging what was left in the journal). */
  rateWithDebt: number;
  opsPerTx: number;
  longestBatchMs: number;
  longestMergeMs: number;
  meanMergeMs: number;
  merges: number;
  debtRows: number;
  walHolds: number;
  longestWalHoldMs: number;
  totalWalHoldMs: number;
  maxWalBytes: number;
  longestCheckpointMs: number;
}

async function openWithSessions(options: SqliteStoreOptions = {}): Promise<SqliteStore> {
  const store = SqliteStore.open(nextFile(), options);
  await Promise.all(
    Array.from({ length: SESSIONS }, (_, i) =>
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
  return store;
}

/** 100 writers, one per session, each awaiting its previous append. Leaves the store open. */
async function concurrentAppends(
  perAppend: number,
  options: SqliteStoreOptions = {},
): Promise<{ store: SqliteStore; run: Run }> {
  const store = await openWithSessions(options);
  // Let the checkpointer worker start, as it has long before a daemon's first busy second.
  await new Promise((resolve) => setTimeout(resolve, 50));
  const appends = APPENDS_PER_SESSION / perAppend;
  const before = store.stats;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, i) => {
      const key = keyOf(i);
      for (let n = 0; n < appends; n++) {
        await store.append(
          key,
          Array.from({ length: perAppend }, (_, j) => event(i, n * perAppend + j)),
        );
      }
    }),
  );
  const window = performance.now() - started;
  const after = store.stats;
  const debtRows = after.journalRows;
  const mergeStarted = performance.now();
  if (!(await store.mergeJournal())) throw new Error("merge refused");
  const debtMs = performance.now() - mergeStarted;
  const rows = after.rows - before.rows;
  const run: Run = {
    rate: rows / (window / 1000),
    rateWithDebt: rows / ((window + debtMs) / 1000),
    opsPerTx: (after.ops - before.ops) / (after.transactions - before.transactions),
    longestBatchMs: after.longestBatchMs,
    longestMergeMs: store.stats.longestMergeMs,
    meanMergeMs: store.stats.totalMergeMs / Math.max(1, store.stats.merges),
    merges: after.merges - before.merges,
    debtRows,
    walHolds: after.walHolds - before.walHolds,
    longestWalHoldMs: after.longestWalHoldMs,
    totalWalHoldMs: after.totalWalHoldMs - before.totalWalHoldMs,
    maxWalBytes: Math.max(after.maxWalBytes, walBytes(store.path)),
    longestCheckpointMs: after.longestCheckpointMs,
  };
  return { store, run };
}

function walBytes(path: string): number {
  return statSync(`${path}-wal`, { throwIfNoEntry: false })?.size ?? 0;
}

/**
 * The same rows, one prepared INSERT per autocommit transaction, on a separate file, into a table
 * shaped like the store's v1-v3 `events` table (clustered by session and seq).
 */
async function autocommit(): Promise<number> {
  const path = nextFile();
  const db = new Database(path, { create: true, strict: true });
  db.exec(
    "CREATE TABLE events (session_pk INTEGER NOT NULL, seq INTEGER NOT NULL, ts TEXT NOT NULL, author TEXT NOT NULL, " +
      "kind TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (session_pk, seq)) WITHOUT ROWID, STRICT",
  );
  db.exec("PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL");
  db.exec(`PRAGMA cache_size = -${CACHE_KIB}; PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  const insert = db.prepare<unknown, [number, number, string, string, string, string]>(
    "INSERT INTO events (session_pk, seq, ts, author, kind, payload) VALUES (?, ?, ?, ?, ?, ?)",
  );
  const started = performance.now();
  for (let n = 0; n < AUTOCOMMIT_ROWS; n++) {
    const session = n % SESSIONS;
    const ev = event(session, n);
    insert.run(session + 1, Math.floor(n / SESSIONS) + 1, ev.ts, ev.author, ev.kind, JSON.stringify(ev));
  }
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return AUTOCOMMIT_ROWS / seconds;
}

/** Every session's log from cursor 0, in pages of PAGE rows, through the store. */
async function replay(store: SqliteStore, perSession: number): Promise<number> {
  let rows = 0;
  const started = performance.now();
  for (let i = 0; i < SESSIONS; i++) {
    let cursor = 0;
    for (;;) {
      const page = await store.read(keyOf(i), cursor, PAGE);
      if (page.length === 0) break;
      rows += page.length;
      cursor = page[page.length - 1]?.seq ?? cursor;
    }
  }
  if (rows !== SESSIONS * perSession) throw new Error(`replayed ${rows} rows`);
  return rows / ((performance.now() - started) / 1000);
}

/** A store whose rows all sit in the journal (no merge), filled in 60-row appends. */
async function journalOnlyStore(): Promise<SqliteStore> {
  const store = await openWithSessions({ mergeThresholdRows: Number.MAX_SAFE_INTEGER, mergeIdleMs: false });
  const chunk = 60;
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, i) => {
      for (let n = 0; n < JOURNAL_REPLAY_PER_SESSION; n += chunk) {
        await store.append(
          keyOf(i),
          Array.from({ length: chunk }, (_, j) => event(i, n + j)),
        );
      }
    }),
  );
  if (store.stats.journalRows !== SESSIONS * JOURNAL_REPLAY_PER_SESSION) throw new Error("rows left the journal");
  return store;
}

/** Diagnostic: every session's `event_blocks` rows as raw `.values()`, block bodies left unparsed. */
function rawReplay(path: string): number {
  const db = new Database(path, { readonly: true, strict: true });
  db.exec(`PRAGMA cache_size = -${CACHE_KIB}`);
  const q = db.prepare<unknown, [number, number]>(
    "SELECT last_seq, first_seq, body FROM event_blocks WHERE session_pk = ? AND first_seq > ? ORDER BY first_seq",
  );
  for (let i = 1; i <= SESSIONS; i++) q.values(i, 0); // warm the cache like the store's replay
  let rows = 0;
  const started = performance.now();
  for (let i = 1; i <= SESSIONS; i++) {
    for (const [last, first] of q.values(i, 0) as [number, number][]) rows += last - first + 1;
  }
  db.close();
  return rows / ((performance.now() - started) / 1000);
}

/** The longest time one transaction held the main thread. */
const pause = (run: Run) => Math.max(run.longestBatchMs, run.longestMergeMs);
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

const runs: Record<"one" | "turn" | "inCommit", Run[]> = { one: [], turn: [], inCommit: [] };
const num: Record<"auto" | "replayEvents" | "replayJournal" | "rawReplay", number[]> = {
  auto: [],
  replayEvents: [],
  replayJournal: [],
  rawReplay: [],
};

const loadBefore = loadAverage();
const began = performance.now();
for (let round = 1; SQLITE && round <= ROUNDS; round++) {
  const one = await concurrentAppends(1);
  runs.one.push(one.run);
  // Every row is in `events` now (the debt was merged); replay twice, the first warms the cache.
  await replay(one.store, APPENDS_PER_SESSION);
  num.replayEvents.push(await replay(one.store, APPENDS_PER_SESSION));
  const path = one.store.path;
  await one.store.close();
  num.rawReplay.push(rawReplay(path));

  const turn = await concurrentAppends(TURN_EVENTS);
  runs.turn.push(turn.run);
  await turn.store.close();

  const inCommit = await concurrentAppends(1, { checkpoint: false });
  runs.inCommit.push(inCommit.run);
  await inCommit.store.close();

  const journal = await journalOnlyStore();
  num.replayJournal.push(await replay(journal, JOURNAL_REPLAY_PER_SESSION));
  await journal.close();

  num.auto.push(await autocommit());
  console.error(
    `round ${round}: 1-event ${fmt(one.run.rate)}/s (pause ${pause(one.run).toFixed(0)} ms), ` +
      `${TURN_EVENTS}-event ${fmt(turn.run.rate)}/s (pause ${pause(turn.run).toFixed(0)} ms), ` +
      `1-event checkpoint in commits ${fmt(inCommit.run.rate)}/s (pause ${pause(inCommit.run).toFixed(0)} ms), autocommit ${fmt(num.auto.at(-1) ?? 0)}/s, replay events ${fmt(num.replayEvents.at(-1) ?? 0)}/s, ` +
      `replay journal ${fmt(num.replayJournal.at(-1) ?? 0)}/s (load ${loadAverage()})`,
  );
}
rmSync(dir, { recursive: true, force: true });
const loadAfter = loadAverage();

if (SQLITE) printSqlite();
const pgRounds: PgRound[] = [];
if (PG) await pgColumn();
console.log(`\ntotal ${((performance.now() - began) / 1000).toFixed(1)} s`);

/** The PostgreSQL column's rounds, each line on stderr, then its tables. */
async function pgColumn(): Promise<void> {
  const pg = await startBenchPostgres();
  try {
    const about = await pg.describe();
    for (let round = 1; round <= ROUNDS; round++) {
      const r = await pgEventLogRound(pg, PG_SECONDS);
      pgRounds.push(r);
      console.error(
        `postgres round ${round}: 1-event ${fmt(r.one.rate)}/s, ${TURN_EVENTS}-event ${fmt(r.turn.rate)}/s, ` +
          `what-if batched ${fmt(r.whatIf.batched.rate)}/s, merged ${fmt(r.whatIf.merged.rate)}/s, pipelined ${fmt(r.whatIf.pipelined.rate)}/s, autocommit ${fmt(r.auto)}/s, replay ${fmt(r.replay)}/s (load ${loadAverage()})`,
      );
    }
    printPgEventLog(
      pgRounds,
      about,
      SQLITE ? { one: median(runs.one.map((x) => x.rate)), turn: median(runs.turn.map((x) => x.rate)) } : undefined,
    );
  } catch (error) {
    console.error(`postgres column FAILED: ${error instanceof Error ? error.message : String(error)}`);
    process.exitCode = 1;
  } finally {
    await pg.stop();
  }
}

function printSqlite(): void {
  const auto = median(num.auto);
  const mib = (bytes: number) => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
  const storeRow = (label: string, list: Run[]) => {
    const rate = median(list.map((x) => x.rate));
    const withDebt = median(list.map((x) => x.rateWithDebt));
    const batch = Math.max(...list.map((x) => x.longestBatchMs));
    const merge = Math.max(...list.map((x) => x.longestMergeMs));
    const mean = median(list.map((x) => x.meanMergeMs));
    const holds = median(list.map((x) => x.walHolds));
    const hold = Math.max(...list.map((x) => x.longestWalHoldMs));
    const holdTotal = median(list.map((x) => x.totalWalHoldMs));
    const wal = Math.max(...list.map((x) => x.maxWalBytes));
    const ckpt = Math.max(...list.map((x) => x.longestCheckpointMs));
    console.log(
      `| ${label} | ${fmt(rate)} | ${(rate / auto).toFixed(1)}x | ${fmt(withDebt)} (${(withDebt / auto).toFixed(1)}x) | ` +
        `${fmt(median(list.map((x) => x.opsPerTx)))} | ${fmt(median(list.map((x) => x.merges)))} | ` +
        `**${Math.max(batch, merge).toFixed(0)} ms** | ${batch.toFixed(0)} ms | ${mean.toFixed(0)} / ${merge.toFixed(0)} ms | ` +
        (holds > 0 || hold > 0
          ? `${fmt(holds)}: ${hold.toFixed(0)} ms, ${holdTotal.toFixed(0)} ms total | `
          : "none | ") +
        `${ckpt > 0 ? `${ckpt.toFixed(0)} ms` : "in commits"} | ${wal > 0 ? mib(wal) : "n/a"} |`,
    );
  };

  console.log(
    `\nevent log bench: ${SESSIONS} concurrent sessions x ${APPENDS_PER_SESSION} events, payload ${JSON.stringify(event(0, 0)).length} B, ` +
      `WAL, synchronous=NORMAL, median of ${ROUNDS} rounds (longest pauses and WAL: max); load average before ${loadBefore}, after ${loadAfter}\n` +
      "(targets: >= 150,000 events/s, >= 3x autocommit, replay >= 1,000,000 rows/s)\n",
  );
  console.log(
    "| measure | events/s | vs autocommit | incl. merge debt | appends/tx | merges in window | longest main-thread pause | " +
      "longest batch | merge mean / longest | WAL holds (median n: longest, total) | longest checkpoint (worker) | max WAL |",
  );
  console.log("|---|---|---|---|---|---|---|---|---|---|---|---|");
  storeRow("store, 1 event/append", runs.one);
  storeRow(`store, ${TURN_EVENTS} events/append`, runs.turn);
  storeRow("store, 1 event/append, `checkpoint: false` (checkpoints inside commits)", runs.inCommit);
  console.log(`| autocommit, 1 prepared INSERT per transaction | ${fmt(auto)} | 1.0x | | 1 | | | | | | | |`);
  console.log(
    "\n(a pause is one transaction holding the event loop; with `checkpoint: false` it includes the WAL auto-checkpoint of " +
      `whichever transaction crosses ${WAL_AUTOCHECKPOINT_PAGES} WAL pages. A WAL hold delays writes only: the event loop runs meanwhile)`,
  );
  console.log(`\n| replay via store.read, pages of ${PAGE} | rows/s |\n|---|---|`);
  console.log(
    `| rows merged into event_blocks (every event parsed, one JSON.parse per block) | ${fmt(median(num.replayEvents))} |`,
  );
  console.log(`| rows still in the log (memory) | ${fmt(median(num.replayJournal))} |`);
  console.log(`| raw .values() on event_blocks, bodies not parsed (diagnostic) | ${fmt(median(num.rawReplay))} |`);
}
