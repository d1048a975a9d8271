/**
 * The sqlite store's log-structured write path: appends land in the `log` table (one row per
 * group commit; called the journal here) and in memory, merges move them into the clustered
 * `event_blocks` table (counted as `events`). Reads spanning both, merge
 * triggers, crash atomicity of merges (SIGKILL of a child mid-churn), reopen with rows left in
 * the journal, deletion, refused merges (real SQLITE_FULL), and migration of a schema v1 file.
 */
import { Database } from "bun:sqlite";
import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { CommittedRow } from "../../../src/core/events.ts";
import { SCHEMA_VERSION } from "../../../src/store/sqlite/migrations.ts";
import { SPAR_APPLICATION_ID } from "../../../src/store/sqlite/open-db.ts";
import { SqliteStore } from "../../../src/store/sqlite/sqlite-store.ts";
import { waitFor } from "../../support/daemon.ts";
import { CHURN_SESSIONS, JOURNALED, MERGED } from "../../fixtures/sqlite-store-holder.ts";
import { audit, cleanupTempDirs, key, record, rejection, tempDb, tombstoned } from "./sqlite-helpers.ts";

afterAll(cleanupTempDirs);

const HOLDER = join(import.meta.dir, "../../fixtures/sqlite-store-holder.ts");
/** Merges only when a test asks for one. */
const MANUAL = { mergeThresholdRows: Number.MAX_SAFE_INTEGER, mergeIdleMs: false } as const;

function seqs(rows: CommittedRow[]): number[] {
  return rows.map((r) => r.seq);
}

function names(rows: CommittedRow[]): string[] {
  return rows.map((r) => (r.event.kind === "audit" ? r.event.name : r.event.kind));
}

/** Deterministic PRNG (mulberry32): a failing case can be replayed from its seed. */
function prng(seed: number): (n: number) => number {
  let a = seed >>> 0;
  return (n) => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 4294967296) * n);
  };
}

/** Every (session_pk, seq) event row in `event_blocks` (each block's JSON array expanded). */
const BLOCK_ROWS = "SELECT b.session_pk AS pk, b.first_seq + e.key AS seq FROM event_blocks b, json_each(b.body) e";
/** Every (session_pk, seq) event row in the log bodies ([[pk, firstSeq, [event...]], ...]) of live sessions. */
const LOG_ROWS =
  "SELECT s.value ->> 0 AS pk, (s.value ->> 1) + e.key AS seq FROM log l, json_each(l.body) s, json_each(s.value, '$[2]') e " +
  "WHERE s.value ->> 0 IN (SELECT pk FROM sessions)";

/** Counts straight from the file (no store open on it): event rows merged, in the journal, distinct. */
function fileCounts(path: string): { events: number; journal: number; distinct: number; version: number } {
  const db = new Database(path);
  try {
    const one = (sql: string) => (db.query(sql).get() as { n: number }).n;
    return {
      events: one(`SELECT count(*) AS n FROM (${BLOCK_ROWS})`),
      journal: one(`SELECT count(*) AS n FROM (${LOG_ROWS})`),
      distinct: one(`SELECT count(*) AS n FROM (${BLOCK_ROWS} UNION ${LOG_ROWS})`),
      version: one("SELECT user_version AS n FROM pragma_user_version"),
    };
  } finally {
    db.close();
  }
}

describe("reads across events and journal", () => {
  test("every (afterSeq, limit, uptoSeq) returns each row once, ascending, whatever the merged head", async () => {
    const rand = prng(20260101);
    const store = SqliteStore.open(tempDb(), MANUAL);
    const ids = ["all-merged", "all-journal", "split-a", "split-b", "empty"];
    await Promise.all(ids.map((id) => store.createSession(record(id))));
    const expected = new Map<string, string[]>(ids.map((id) => [id, []]));
    const appendTo = async (id: string, n: number) => {
      const events = Array.from({ length: n }, (_, j) => audit(`${id}:${(expected.get(id)?.length ?? 0) + j + 1}`));
      await store.append(key(id), events);
      expected.get(id)?.push(...events.map((e) => e.name));
    };
    // Rows reach `events` in several merges, interleaved with more appends.
    for (let round = 0; round < 6; round++) {
      await Promise.all(["all-merged", "split-a", "split-b"].map((id) => appendTo(id, 1 + rand(9))));
      expect(await store.mergeJournal()).toBe(true);
    }
    await Promise.all(["all-journal", "split-a", "split-b"].map((id) => appendTo(id, 1 + rand(12))));
    await appendTo("split-b", 1);
    expect(store.stats.journalRows).toBeGreaterThan(0);

    for (const id of ids) {
      const all = expected.get(id) ?? [];
      const head = all.length;
      expect(await store.head(key(id))).toBe(head);
      expect(names(await store.read(key(id), 0, 10_000))).toEqual(all);
      for (let i = 0; i < 400; i++) {
        const afterSeq = rand(head + 4) - 2;
        const limit = rand(5) === 0 ? 10_000 : rand(head + 3);
        const upto = rand(4) === 0 ? undefined : rand(head + 4) - 1;
        const rows = await store.read(key(id), afterSeq, limit, upto);
        const from = Math.max(0, afterSeq);
        const to = Math.min(head, upto ?? head);
        const want = Array.from({ length: Math.max(0, Math.min(limit, to - from)) }, (_, j) => from + j + 1);
        const context = `${id} afterSeq=${afterSeq} limit=${limit} upto=${upto}`;
        expect(seqs(rows), context).toEqual(want);
        expect(names(rows), context).toEqual(want.map((seq) => all[seq - 1] as string));
      }
    }
    await store.close();
  });

  test("journal rows are served from memory until merged; merged rows read back the same", async () => {
    const store = SqliteStore.open(tempDb(), MANUAL);
    await store.createSession(record("s0"));
    const appended = await store.append(key("s0"), [audit("a"), audit("b")]);
    const fromJournal = await store.read(key("s0"), 0, 10);
    expect(fromJournal).toEqual(appended);
    expect(store.stats.journalRows).toBe(2);
    expect(await store.mergeJournal()).toBe(true);
    expect(store.stats).toMatchObject({ journalRows: 0, merges: 1, mergedRows: 2 });
    expect(await store.read(key("s0"), 0, 10)).toEqual(fromJournal);
    await store.close();
  });
});

describe("merge triggers", () => {
  test("the threshold merges in slices while appends continue; reads stay exact", async () => {
    const store = SqliteStore.open(tempDb(), { mergeThresholdRows: 64, mergeSliceRows: 16, mergeIdleMs: false });
    await Promise.all(Array.from({ length: 10 }, (_, i) => store.createSession(record(`s${i}`))));
    await Promise.all(
      Array.from({ length: 10 }, async (_, i) => {
        for (let n = 1; n <= 60; n++) await store.append(key(`s${i}`), [audit(`s${i}:${n}`)]);
      }),
    );
    const stats = store.stats;
    expect(stats.merges).toBeGreaterThan(10);
    expect(stats.mergedRows).toBeGreaterThan(400);
    expect(stats.journalRows).toBeLessThan(64 + 10);
    expect(stats.mergedRows + stats.journalRows).toBe(600);
    expect(stats.mergeFailures).toBe(0);
    for (let i = 0; i < 10; i++) {
      expect(names(await store.read(key(`s${i}`), 0, 100))).toEqual(
        Array.from({ length: 60 }, (_, n) => `s${i}:${n + 1}`),
      );
    }
    await store.close();
  });

  test("an idle writer merges the journal; close merges the rest", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, { mergeIdleMs: 20 });
    await store.createSession(record("s0"));
    await store.append(key("s0"), [audit("a"), audit("b")]);
    expect(store.stats.journalRows).toBe(2);
    await waitFor(() => (store.stats.journalRows === 0 ? true : undefined), 3000, "the idle merge");
    expect(store.stats.journalRows).toBe(0);
    expect(seqs(await store.read(key("s0"), 0, 10))).toEqual([1, 2]);

    const manual = SqliteStore.open(tempDb(), MANUAL);
    await manual.createSession(record("s0"));
    await manual.append(key("s0"), [audit("c")]);
    await manual.close();
    await store.close();
    expect(fileCounts(path)).toMatchObject({ events: 2, journal: 0 });
  });
});

describe("deletion", () => {
  test("deleting a session drops its journal rows and memory; a re-created session starts empty", async () => {
    const path = tempDb();
    const store = SqliteStore.open(path, MANUAL);
    await Promise.all([store.createSession(record("a")), store.createSession(record("b"))]);
    await store.append(key("a"), [audit("a1"), audit("a2")]);
    await store.mergeJournal();
    await store.append(key("a"), [audit("a3")]);
    await store.append(key("b"), [audit("b1")]);
    expect(store.stats.journalRows).toBe(2);
    // Append and delete in one batch: the rows appended in the same transaction go too.
    const [, deleted] = await Promise.all([store.append(key("a"), [audit("a4")]), store.deleteSession(key("a"))]);
    expect(deleted).toBe(true);
    expect(store.stats.journalRows).toBe(1);
    expect(await store.read(key("a"), 0, 10)).toEqual([]);
    await store.createSession(record("a"));
    expect(await store.head(key("a"))).toBe(0);
    expect(seqs(await store.append(key("a"), [audit("new")]))).toEqual([1]);
    expect(names(await store.read(key("a"), 0, 10))).toEqual(["new"]);
    await store.close();
    expect(fileCounts(path)).toMatchObject({ events: 2, journal: 0 });
  });
});

describe("refused merges (real SQLITE_FULL via max_page_count)", () => {
  test("the journal stays as it was, reads are exact, the failure is counted and retried later", async () => {
    const path = tempDb();
    // Grow the file, then close: the merge frees the journal's pages, leaving free pages inside the cap.
    const setup = SqliteStore.open(path);
    await Promise.all([setup.createSession(record("a")), setup.createSession(record("b"))]);
    for (let i = 0; i < 10; i++)
      await setup.append(
        key("b"),
        Array.from({ length: 10 }, () => audit("b", 3000)),
      );
    await setup.close();

    const store = SqliteStore.open(path, {
      maxPageCount: 1,
      mergeThresholdRows: Number.MAX_SAFE_INTEGER,
      mergeIdleMs: 20,
    });
    let appended = 0;
    for (;;) {
      const outcome = await store.append(key("a"), [audit(`a:${appended + 1}`, 3000)]).then(
        () => "ok",
        (error: { code?: string }) => error.code,
      );
      if (outcome !== "ok") {
        expect(outcome).toBe("unavailable");
        break;
      }
      appended++;
      if (appended > 10_000) throw new Error("the cap never refused a write");
    }
    expect(appended).toBeGreaterThan(5);
    const before = store.stats;
    expect(before.journalRows).toBe(appended);

    expect(await store.mergeJournal()).toBe(false);
    const after = store.stats;
    expect(after.mergeFailures).toBe(before.mergeFailures + 1);
    expect(after.journalRows).toBe(appended);
    expect(after.mergedRows).toBe(before.mergedRows);
    expect(await store.head(key("a"))).toBe(appended);
    const rows = await store.read(key("a"), 0, 100_000);
    expect(names(rows)).toEqual(Array.from({ length: appended }, (_, i) => `a:${i + 1}`));

    // Deleting b frees its pages; the scheduled retry then merges without being asked.
    expect(await store.deleteSession(key("b"))).toBe(true);
    await waitFor(() => (store.stats.journalRows === 0 ? true : undefined), 5000, "the retried merge");
    expect(store.stats.journalRows).toBe(0);
    expect(store.stats.mergedRows).toBe(before.mergedRows + appended);
    expect(await store.read(key("a"), 0, 100_000)).toEqual(rows);
    await store.close();
    expect(fileCounts(path)).toMatchObject({ events: appended, journal: 0 });
  });

  test("a refused group commit leaves the journal memory untouched", async () => {
    const store = SqliteStore.open(tempDb(), { maxPageCount: 1, ...MANUAL });
    await store.createSession(record("a"));
    await store.append(key("a"), [audit("small")]);
    const before = store.stats;
    const failed = await rejection(
      store.append(
        key("a"),
        Array.from({ length: 4 }, () => audit("big", 20_000)),
      ),
    );
    expect(failed.code).toBe("unavailable");
    expect(store.stats.journalRows).toBe(before.journalRows);
    expect(store.stats.refused).toBe(before.refused + 1);
    expect(seqs(await store.read(key("a"), 0, 10))).toEqual([1]);
    expect(seqs(await store.append(key("a"), [audit("next")]))).toEqual([2]);
    expect(names(await store.read(key("a"), 0, 10))).toEqual(["small", "next"]);
    await store.close();
  });
});

/** Spawns the holder in `mode`; `onLine` sees each complete stdout line; resolves the child. */
function spawnHolder(mode: string, path: string, onLine: (line: string) => void) {
  const child = Bun.spawn([process.execPath, HOLDER, mode, path], { stdout: "pipe", stderr: "inherit" });
  const done = (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of child.stdout) {
      buffered += decoder.decode(chunk, { stream: true });
      const lines = buffered.split("\n");
      buffered = lines.pop() ?? "";
      for (const line of lines) onLine(line);
    }
    // A partial last line (cut by SIGKILL) is ignored.
  })();
  return { child, done };
}

describe("crashes", () => {
  test("SIGKILL while appending and merging: every reported commit is present exactly once, seqs contiguous", async () => {
    const path = tempDb();
    const committed = new Map<string, number>();
    for (let round = 0; round < 6; round++) {
      let merges = 0;
      let lines = 0;
      const { promise: busy, resolve } = Promise.withResolvers<void>();
      const goal = 30 + round * 20;
      const { child, done } = spawnHolder("churn", path, (line) => {
        const [tag, a, b] = line.split(" ");
        if (tag === "c" && a !== undefined) {
          committed.set(a, Math.max(committed.get(a) ?? 0, Number(b)));
          lines++;
        } else if (tag === "m") merges = Number(a);
        else if (line.startsWith("{")) throw new Error(`holder failed: ${line}`);
        if (merges >= goal && lines >= 200) resolve();
      });
      const timeout = setTimeout(resolve, 15_000); // deadline: the assertions below say what was missing
      await busy;
      clearTimeout(timeout);
      // Pacing: land somewhere in the middle of the churn rather than right after a report.
      await Bun.sleep(Math.floor(Math.random() * 15));
      child.kill("SIGKILL");
      await child.exited;
      await done;
      expect(merges).toBeGreaterThanOrEqual(goal);

      const counts = fileCounts(path);
      expect(counts.version).toBe(SCHEMA_VERSION);
      expect(counts.distinct).toBe(counts.events + counts.journal);

      const store = SqliteStore.open(path, MANUAL);
      for (let i = 0; i < CHURN_SESSIONS; i++) {
        const id = `c${i}`;
        const head = await store.head(key(id));
        expect(head).toBeGreaterThanOrEqual(committed.get(id) ?? 0);
        const rows = await store.read(key(id), 0, 1_000_000);
        expect(seqs(rows)).toEqual(Array.from({ length: head }, (_, j) => j + 1));
        expect(names(rows)).toEqual(rows.map((r) => `${id}:${r.seq}`));
        committed.set(id, head);
      }
      expect(store.stats.journalRows).toBe(counts.journal);
      await store.close();
    }
  }, 60_000);

  test("rows left in the journal by a crash are served after reopen, and merged later", async () => {
    const path = tempDb();
    const { promise: ready, resolve } = Promise.withResolvers<void>();
    const { child, done } = spawnHolder("journal", path, (line) => {
      if (line.startsWith("ready")) resolve();
      else if (line.startsWith("{")) throw new Error(`holder failed: ${line}`);
    });
    await ready;
    child.kill("SIGKILL");
    await child.exited;
    await done;
    expect(fileCounts(path)).toMatchObject({ events: MERGED, journal: JOURNALED });

    const store = SqliteStore.open(path, MANUAL);
    expect(store.stats.journalRows).toBe(JOURNALED);
    const head = MERGED + JOURNALED;
    expect(await store.head(key("j"))).toBe(head);
    const all = await store.read(key("j"), 0, 1000);
    expect(seqs(all)).toEqual(Array.from({ length: head }, (_, i) => i + 1));
    expect(names(all)).toEqual(all.map((r) => `j:${r.seq}`));
    expect(seqs(await store.read(key("j"), MERGED - 2, 4))).toEqual([MERGED - 1, MERGED, MERGED + 1, MERGED + 2]);
    expect(seqs(await store.append(key("j"), [audit("next")]))).toEqual([head + 1]);
    await store.close();
    expect(fileCounts(path)).toMatchObject({ events: head + 1, journal: 0 });
  });
});

describe("schema v1 files", () => {
  /** The v1 schema exactly as shipped (migration 1), with rows the v1 code would have written. */
  function writeV1File(path: string): void {
    const db = new Database(path, { create: true });
    db.exec("PRAGMA journal_mode = WAL");
    db.exec(`PRAGMA application_id = ${SPAR_APPLICATION_ID}`);
    db.exec(`
      CREATE TABLE sessions (pk INTEGER PRIMARY KEY AUTOINCREMENT, app TEXT NOT NULL, sid TEXT NOT NULL,
        owner TEXT NOT NULL, viewers TEXT NOT NULL, contributors TEXT NOT NULL, title TEXT,
        created_at TEXT NOT NULL, last_touched_at TEXT NOT NULL, UNIQUE (app, sid)) STRICT;
      CREATE INDEX sessions_by_sid ON sessions (sid);
      CREATE TABLE events (session_pk INTEGER NOT NULL, seq INTEGER NOT NULL, ts TEXT NOT NULL,
        author TEXT NOT NULL, kind TEXT NOT NULL, payload TEXT NOT NULL, PRIMARY KEY (session_pk, seq)) WITHOUT ROWID, STRICT;
      CREATE TABLE inbox (ord INTEGER PRIMARY KEY, session_pk INTEGER NOT NULL, prompt_id TEXT NOT NULL,
        message TEXT NOT NULL, queued_at TEXT NOT NULL, wake INTEGER NOT NULL, drained INTEGER NOT NULL DEFAULT 0,
        UNIQUE (session_pk, prompt_id)) STRICT;
      CREATE INDEX inbox_pending ON inbox (session_pk, ord) WHERE drained = 0;
      CREATE INDEX inbox_wake ON inbox (session_pk) WHERE drained = 0 AND wake = 1;
      CREATE TABLE tombstones (app TEXT NOT NULL, sid TEXT NOT NULL, deleted_at TEXT NOT NULL,
        PRIMARY KEY (app, sid)) WITHOUT ROWID, STRICT;
      PRAGMA user_version = 1;
    `);
    db.query(
      "INSERT INTO sessions (app, sid, owner, viewers, contributors, title, created_at, last_touched_at) VALUES ('spar', 'old', 'local', '[\"v1\"]', '[]', 'Old', '2025-01-01T00:00:00Z', '0001-01-01T00:00:00Z')",
    ).run();
    const insert = db.query("INSERT INTO events VALUES (1, ?, ?, ?, ?, ?)");
    for (let seq = 1; seq <= 5; seq++) {
      const event = audit(`old:${seq}`);
      insert.run(seq, event.ts, event.author, event.kind, JSON.stringify(event));
    }
    db.query(
      "INSERT INTO inbox (session_pk, prompt_id, message, queued_at, wake) VALUES (1, 'p1', 'hi', 't', 1)",
    ).run();
    db.query("INSERT INTO tombstones VALUES ('spar', 'gone', 't')").run();
    db.close();
  }

  test("a v1 file opens, is migrated to the journal schema, and keeps working", async () => {
    const path = tempDb();
    writeV1File(path);
    expect(fileCounts.bind(null, path)).toThrow(/no such table: event_blocks/);

    const store = SqliteStore.open(path, MANUAL);
    expect((await store.getSession(key("old")))?.title).toBe("Old");
    expect(await store.head(key("old"))).toBe(5);
    expect(names(await store.read(key("old"), 0, 10))).toEqual([1, 2, 3, 4, 5].map((n) => `old:${n}`));
    expect((await store.pendingInbox(key("old"))).map((i) => i.promptId)).toEqual(["p1"]);
    expect(await tombstoned(store, key("gone"))).toBe(true);
    // v6: tombstones written before it have no owner.
    expect(await store.deletedSessions("gone")).toEqual([{ app: "spar", owner: "" }]);
    const rows = await store.append(key("old"), [audit("new:6")], { drainedPromptIds: ["p1"] });
    expect(seqs(rows)).toEqual([6]);
    expect(store.stats.journalRows).toBe(1);
    expect(names(await store.read(key("old"), 3, 10))).toEqual(["old:4", "old:5", "new:6"]);
    expect(await store.pendingInbox(key("old"))).toEqual([]);
    await store.close();

    expect(fileCounts(path)).toMatchObject({ events: 6, journal: 0, version: SCHEMA_VERSION });
    const again = SqliteStore.open(path);
    expect(await again.head(key("old"))).toBe(6);
    await again.close();
  });
});
