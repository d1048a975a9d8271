/**
 * Event-log benchmark (run: `bun bench/event-log.ts`; about 35 s). On temp files only:
 *  - group commit: 100 sessions appending concurrently through SqliteStore, one writer per
 *    session awaiting each append: 1 event per append (flush on microtask, and on setImmediate),
 *    10 events per append (a turn's worth of rows), and 1 event per append with synchronous=FULL;
 *  - baseline: the same rows as single-row autocommit prepared INSERTs, same schema and pragmas,
 *    on a separate file (NORMAL and FULL);
 *  - diagnostics without the store: raw 100-row transactions, interleaved over 100 sessions or
 *    all to one session; raw replay without JSON.parse;
 *  - replay: every session's log read from cursor 0 in pages of 1000 via `read` (parsed events).
 * Three rounds; prints per-round lines on stderr and a table of medians on stdout.
 */
import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditEvent } from "../src/core/events.ts";
import type { FlushOn } from "../src/store/sqlite/group-commit.ts";
import { CACHE_KIB, WAL_AUTOCHECKPOINT_PAGES } from "../src/store/sqlite/open-db.ts";
import { SqliteStore } from "../src/store/sqlite/sqlite-store.ts";

type Sync = "NORMAL" | "FULL";

const SESSIONS = 100;
const APPENDS_PER_SESSION = 600;
const FULL_APPENDS_PER_SESSION = 200;
const TURN_EVENTS = 10;
const AUTOCOMMIT_ROWS: Record<Sync, number> = { NORMAL: 10_000, FULL: 1_000 };
const RAW_ROWS = 50_000;
const PAGE = 1000;
const ROUNDS = 3;

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

interface Scenario {
  flushOn: FlushOn;
  perAppend: number;
  synchronous: Sync;
  appendsPerSession: number;
}

interface Run {
  path: string;
  store: SqliteStore;
  rate: number;
  opsPerTx: number;
  longestBatchMs: number;
}

/** 100 writers, one per session, each awaiting its previous append. */
async function groupCommit(s: Scenario): Promise<Run> {
  const path = nextFile();
  const store = SqliteStore.open(path, { flushOn: s.flushOn, synchronous: s.synchronous });
  await Promise.all(
    Array.from({ length: SESSIONS }, (_, i) =>
      store.createSession({ ...keyOf(i), owner: "bench", viewers: [], contributors: [], createdAt: "t", lastTouchedAt: "t" }),
    ),
  );
  const appends = s.appendsPerSession / s.perAppend;
  const before = store.stats;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: SESSIONS }, async (_, i) => {
      const key = keyOf(i);
      for (let n = 0; n < appends; n++) {
        await store.append(key, Array.from({ length: s.perAppend }, (_, j) => event(i, n * s.perAppend + j)));
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  const after = store.stats;
  const opsPerTx = (after.ops - before.ops) / (after.transactions - before.transactions);
  return { path, store, rate: (after.rows - before.rows) / seconds, opsPerTx, longestBatchMs: after.longestBatchMs };
}

/** A file with the store's schema, opened raw with the store's pragmas. */
async function rawDb(synchronous: Sync): Promise<Database> {
  const path = nextFile();
  await SqliteStore.open(path).close();
  const db = new Database(path, { strict: true });
  db.exec(`PRAGMA locking_mode = EXCLUSIVE; PRAGMA journal_mode = WAL; PRAGMA synchronous = ${synchronous}`);
  db.exec(`PRAGMA cache_size = -${CACHE_KIB}; PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
  return db;
}

const INSERT = "INSERT INTO events (session_pk, seq, ts, author, kind, payload) VALUES (?, ?, ?, ?, ?, ?)";

/** The same rows, one prepared INSERT per autocommit transaction, on a separate file. */
async function autocommit(synchronous: Sync): Promise<number> {
  const db = await rawDb(synchronous);
  const insert = db.prepare<unknown, [number, number, string, string, string, string]>(INSERT);
  const rows = AUTOCOMMIT_ROWS[synchronous];
  const started = performance.now();
  for (let n = 0; n < rows; n++) {
    const session = n % SESSIONS;
    const ev = event(session, n);
    insert.run(session + 1, Math.floor(n / SESSIONS) + 1, ev.ts, ev.author, ev.kind, JSON.stringify(ev));
  }
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return rows / seconds;
}

/** Diagnostic, no store: 100 prepared INSERTs per transaction, interleaved or to one session. */
async function rawTransactions(interleaved: boolean): Promise<number> {
  const db = await rawDb("NORMAL");
  const insert = db.prepare<unknown, [number, number, string, string, string, string]>(INSERT);
  const payload = JSON.stringify(event(0, 0));
  const tx = db.transaction((base: number) => {
    for (let n = base; n < base + SESSIONS; n++) {
      if (interleaved) insert.run((n % SESSIONS) + 1, Math.floor(n / SESSIONS) + 1, "t", "agent", "audit", payload);
      else insert.run(1, n + 1, "t", "agent", "audit", payload);
    }
  }).immediate;
  const started = performance.now();
  for (let base = 0; base < RAW_ROWS; base += SESSIONS) tx(base);
  const seconds = (performance.now() - started) / 1000;
  db.close();
  return RAW_ROWS / seconds;
}

/** Every session's log from cursor 0, in pages of PAGE rows, through the store. */
async function replay(store: SqliteStore): Promise<number> {
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
  if (rows !== SESSIONS * APPENDS_PER_SESSION) throw new Error(`replayed ${rows} rows`);
  return rows / ((performance.now() - started) / 1000);
}

/** Diagnostic: the same pages as raw `.values()` rows, payloads left unparsed. */
function rawReplay(path: string): number {
  const db = new Database(path, { readonly: true, strict: true });
  db.exec(`PRAGMA cache_size = -${CACHE_KIB}`);
  const q = db.prepare<unknown, [number, number, number]>(
    "SELECT seq, payload FROM events WHERE session_pk = ? AND seq > ? ORDER BY seq LIMIT ?",
  );
  for (let i = 1; i <= SESSIONS; i++) q.values(i, 0, PAGE); // warm the cache like the store's replay
  let rows = 0;
  const started = performance.now();
  for (let i = 1; i <= SESSIONS; i++) {
    for (let cursor = 0; ; ) {
      const page = q.values(i, cursor, PAGE);
      if (page.length === 0) break;
      rows += page.length;
      cursor = Number(page[page.length - 1]?.[0]);
    }
  }
  db.close();
  return rows / ((performance.now() - started) / 1000);
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0;
const fmt = (n: number) => Math.round(n).toLocaleString("en-US");

const SCENARIOS: Record<string, Scenario> = {
  micro: { flushOn: "microtask", perAppend: 1, synchronous: "NORMAL", appendsPerSession: APPENDS_PER_SESSION },
  immediate: { flushOn: "immediate", perAppend: 1, synchronous: "NORMAL", appendsPerSession: APPENDS_PER_SESSION },
  turn: { flushOn: "microtask", perAppend: TURN_EVENTS, synchronous: "NORMAL", appendsPerSession: APPENDS_PER_SESSION },
  full: { flushOn: "microtask", perAppend: 1, synchronous: "FULL", appendsPerSession: FULL_APPENDS_PER_SESSION },
};
const runs: Record<string, Run[]> = { micro: [], immediate: [], turn: [], full: [] };
const num: Record<string, number[]> = { auto: [], autoFull: [], rawMixed: [], rawOne: [], replay: [], rawReplay: [] };

const began = performance.now();
for (let round = 1; round <= ROUNDS; round++) {
  for (const [name, scenario] of Object.entries(SCENARIOS)) {
    const run = await groupCommit(scenario);
    runs[name]?.push(run);
    if (name === "micro") num.replay?.push(await replay(run.store));
    await run.store.close();
    if (name === "micro") num.rawReplay?.push(rawReplay(run.path));
  }
  num.auto?.push(await autocommit("NORMAL"));
  num.autoFull?.push(await autocommit("FULL"));
  num.rawMixed?.push(await rawTransactions(true));
  num.rawOne?.push(await rawTransactions(false));
  const last = (k: string) => fmt(runs[k]?.at(-1)?.rate ?? 0);
  console.error(
    `round ${round}: 1-event ${last("micro")}/s, immediate ${last("immediate")}/s, ${TURN_EVENTS}-event ${last("turn")}/s, ` +
      `FULL ${last("full")}/s, autocommit ${fmt(num.auto?.at(-1) ?? 0)}/s, FULL autocommit ${fmt(num.autoFull?.at(-1) ?? 0)}/s`,
  );
}
rmSync(dir, { recursive: true, force: true });

const med = (k: string) => median(num[k] ?? []);
const row = (label: string, rate: number, vs: number, perTx: string, note = "") =>
  console.log(`| ${label} | ${fmt(rate)} | ${(rate / vs).toFixed(1)}x | ${perTx} | ${note} |`);
const storeRow = (label: string, k: string, vs: number, note = "") => {
  const list = runs[k] ?? [];
  const rate = median(list.map((x) => x.rate));
  const pause = Math.max(...list.map((x) => x.longestBatchMs));
  row(label, rate, vs, fmt(median(list.map((x) => x.opsPerTx))), `longest batch ${pause.toFixed(0)} ms${note}`);
};

console.log(
  `\nevent log bench: ${SESSIONS} concurrent sessions, payload ${JSON.stringify(event(0, 0)).length} B, WAL, ` +
    `median of ${ROUNDS} rounds (targets: >= 150,000 events/s, >= 3x autocommit, replay >= 1,000,000 rows/s)\n`,
);
console.log("| measure (synchronous=NORMAL unless noted) | events/s | vs autocommit | appends/tx | note |");
console.log("|---|---|---|---|---|");
storeRow("store, 1 event/append, flush on microtask", "micro", med("auto"));
storeRow("store, 1 event/append, flush on setImmediate", "immediate", med("auto"));
storeRow(`store, ${TURN_EVENTS} events/append, flush on microtask`, "turn", med("auto"));
row("autocommit, 1 prepared INSERT per transaction", med("auto"), med("auto"), "1");
row("raw, no store: 100 INSERTs/tx, 1 row per session", med("rawMixed"), med("auto"), "100 rows", "diagnostic");
row("raw, no store: 100 INSERTs/tx, all to 1 session", med("rawOne"), med("auto"), "100 rows", "diagnostic");
storeRow("store, 1 event/append, synchronous=FULL", "full", med("autoFull"), ", vs FULL autocommit");
row("autocommit, synchronous=FULL", med("autoFull"), med("autoFull"), "1");
console.log(`\n| replay, pages of ${PAGE} | rows/s |\n|---|---|`);
console.log(`| store.read() (events parsed) | ${fmt(med("replay"))} |`);
console.log(`| raw .values(), payload not parsed (diagnostic) | ${fmt(med("rawReplay"))} |`);
console.log(`\ntotal ${((performance.now() - began) / 1000).toFixed(1)} s`);
