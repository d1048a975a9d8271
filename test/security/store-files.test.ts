/**
 * Attacks on the agent's session-store files (issue 13 item 4): another local user reading the
 * store (its directory, database, -wal, -shm and lock file), and recovering a deleted session's
 * text from the raw bytes of the database and WAL files. The daemon runs under a permissive umask
 * (0002) so the modes checked are the ones spar sets, not the environment's.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { chmodSync, existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { SqliteStore } from "../../src/store/sqlite/sqlite-store.ts";
import { type Daemon, startDaemon, tempDir, waitFor } from "../support/daemon.ts";

const PERMISSIVE_UMASK = 0o002;
let previousUmask: number;
let storeDir: string;
let daemon: Daemon;

beforeAll(async () => {
  previousUmask = process.umask(PERMISSIVE_UMASK);
  storeDir = join(tempDir("spar-store-files-"), "state", "spar");
  daemon = await startDaemon({ args: ["--multi-session"], sessionDb: join(storeDir, "sessions.db") });
});
afterAll(async () => {
  await daemon.sigterm();
  process.umask(previousUmask);
});

const modeOf = (path: string) => statSync(path).mode & 0o777;

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${daemon.baseUrl}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/** The raw bytes of the store's database and WAL files (read from this process: the daemon's locks are its own). */
function storeBytes(): string {
  const db = daemon.sessionDb;
  return [db, `${db}-wal`].map((path) => (existsSync(path) ? readFileSync(path).toString("latin1") : "")).join("\n");
}

/**
 * Until the session's turn has completed (its usage counts it). A live `turn-complete` frame is
 * not replayed, so a stream opened after a fast echo turn would never see one.
 */
async function turnDone(session: string): Promise<void> {
  await waitFor(
    async () => {
      const usage = (await (await fetch(`${daemon.baseUrl}/sessions/${session}/usage`)).json()) as {
        overall: { turns: number };
      };
      return usage.overall.turns >= 1 ? true : undefined;
    },
    10_000,
    `the turn of ${session}`,
  );
}

test("another local user cannot read the store: directories spar creates are 0700, the db, -wal, -shm and lock files 0600", async () => {
  expect((await post("/sessions", { sessionID: "modes" })).status).toBe(201);
  const db = daemon.sessionDb;
  for (const path of [db, `${db}-wal`, `${db}-shm`, `${db}.lock`]) {
    expect({ path, mode: modeOf(path).toString(8) }).toEqual({ path, mode: "600" });
  }
  expect(modeOf(storeDir).toString(8)).toBe("700");
  expect(modeOf(join(storeDir, "..")).toString(8)).toBe("700");
});

test("a deleted session's text is not left in the raw bytes of the database or the WAL", async () => {
  const secret = `GONE${crypto.randomUUID().replaceAll("-", "")}`;
  const kept = `KEPT${crypto.randomUUID().replaceAll("-", "")}`;
  for (const [session, text] of [
    ["doomed", secret],
    ["kept", kept],
  ] as const) {
    expect((await post("/sessions", { sessionID: session })).status).toBe(201);
    expect((await post(`/sessions/${session}/inject`, { message: `remember ${text}` })).status).toBe(200);
    await turnDone(session);
  }
  // The scan can see session text: both are in the files now.
  expect(storeBytes()).toContain(secret);
  const deleted = await fetch(`${daemon.baseUrl}/sessions/doomed`, {
    method: "DELETE",
    headers: { "content-type": "application/json" },
  });
  expect(deleted.status).toBe(204);
  // The merge of its log rows (idle, 250 ms) and the WAL scrub after it (a worker checkpoint).
  const bytes = await waitFor(
    () => {
      const now = storeBytes();
      return now.includes(secret) ? undefined : now;
    },
    10_000,
    "the deleted session's text gone from the files",
  );
  expect(bytes.includes(secret)).toBe(false);
  expect(bytes).toContain(kept);
});

test("store files an older version left world-readable are tightened to 0600 when the store opens", async () => {
  const path = join(tempDir("spar-store-old-"), "sessions.db");
  await SqliteStore.open(path, { checkpoint: false }).close();
  // As an older spar left them under umask 022.
  for (const file of [path, `${path}.lock`]) chmodSync(file, 0o644);
  const store = SqliteStore.open(path, { checkpoint: false });
  try {
    await store.createSession({
      app: "spar",
      id: "s1",
      owner: "local",
      viewers: [],
      contributors: [],
      createdAt: "2026-01-01T00:00:00Z",
      lastTouchedAt: "2026-01-01T00:00:00Z",
    });
    for (const file of [path, `${path}.lock`, `${path}-wal`, `${path}-shm`]) {
      expect({ file, mode: modeOf(file).toString(8) }).toEqual({ file, mode: "600" });
    }
  } finally {
    await store.close();
  }
});
