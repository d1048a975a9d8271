/**
 * The operator CLI's direct writes to a sqlite store no daemon holds (`sessions resume --token
 * --session-db`, `sessions ack-effects --session-db`): open the store (its lock file refuses it
 * while a daemon serves it, and the CLI says so), find the rows, append one, close. Nothing here
 * serializes against a running daemon, which is why the verbs warn and why a held store is refused.
 */
import { existsSync } from "node:fs";
import { SparError } from "../../core/errors.ts";
import type { AuditEvent } from "../../core/events.ts";
import { uuidv7 } from "../../core/ids.ts";
import { SqliteStore } from "../../store/sqlite/sqlite-store.ts";
import { ACK_ROW, GATE_AUTHOR, GateLedger } from "../../svc/gate/gate-ledger.ts";
import { PAUSE_AUTHOR, foldPauses, resumeRow } from "../../svc/pause/pause-ledger.ts";
import { TOKEN_NOT_FOUND, isResumeToken, tokenDigest } from "../../svc/pause/resume-token.ts";

/** The app svc's coordinator sessions live under. */
const COORDINATOR_APP = "svc";

/** The warning every direct write prints first (docs/svc-pauses.md#without-a-daemon). */
export function directWriteWarning(path: string): string {
  return `warning: writing ${path} directly: this cannot serialize against a running daemon; only do it on a store no svc daemon serves\n`;
}

/** Open the store for one direct write; a store a daemon holds (its lock file) is refused naming --addr. */
export async function withStore<T>(path: string, work: (store: SqliteStore) => Promise<T>): Promise<T> {
  if (!existsSync(path)) throw new SparError("not_found", `no session store at ${path}`);
  let store: SqliteStore;
  try {
    store = SqliteStore.open(path, { checkpoint: false });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (message.includes("in use by another spar daemon"))
      throw new SparError(
        "conflict",
        `a svc daemon holds ${path} (its lock file ${path}.lock is taken): go through it with --addr=<its main listener> instead of --session-db`,
      );
    throw error;
  }
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

const header = (invocationId: string, author: string) => ({
  id: uuidv7(),
  ts: new Date().toISOString(),
  invocationId,
  author,
});

/** Who a direct write is recorded as (docs/svc-pauses.md#without-a-daemon). */
export const DIRECT_RESUME_IDENTITY = "operator resume --token --session-db";
export const DIRECT_ACK_IDENTITY = "operator ack-effects --session-db";

/** Consume a gate pause's token in the store: `resumed`, or `already` for a token used before. */
export async function resumeTokenDirect(path: string, token: string): Promise<{ sessionId: string; already: boolean }> {
  const digest = isResumeToken(token) ? tokenDigest(token) : undefined;
  if (digest === undefined) throw new SparError("not_found", TOKEN_NOT_FOUND);
  return withStore(path, async (store) => {
    for (const record of await store.listSessions()) {
      if (record.app !== COORDINATOR_APP) continue;
      const key = { app: record.app, id: record.id };
      const fold = foldPauses((await store.read(key, 0, Number.MAX_SAFE_INTEGER)).map((row) => row.event));
      const status = fold.tokens.get(digest);
      if (status === undefined) continue;
      if (record.abort)
        throw new SparError("conflict", `session ${JSON.stringify(record.id)} is aborted (${record.abort.reason})`);
      if (status.state === "consumed") return { sessionId: record.id, already: true };
      if (status.state === "superseded")
        throw new SparError(
          "conflict",
          `resume token replaced by a later pause of session ${JSON.stringify(record.id)}`,
        );
      if (Date.parse(status.expiresAt) <= Date.now())
        throw new SparError(
          "conflict",
          `resume token expired ${status.expiresAt} (the pause remains; \`spar svc sessions extend-token\` is the recovery)`,
        );
      const at = new Date().toISOString();
      await store.append(key, [resumeRow(header("svc-pause", PAUSE_AUTHOR), digest, at, DIRECT_RESUME_IDENTITY)]);
      return { sessionId: record.id, already: false };
    }
    throw new SparError("not_found", TOKEN_NOT_FOUND);
  });
}

/** Acknowledge the ambiguous calls of every session of the incident in the store; resolves with how many. */
export async function ackEffectsDirect(path: string, sessionId: string, reason: string): Promise<number> {
  return withStore(path, async (store) => {
    const keys = await store.findSessionsById(sessionId);
    if (!keys.some((key) => key.app === COORDINATOR_APP))
      throw new SparError("not_found", `session not found: ${sessionId}`);
    let acknowledged = 0;
    for (const key of keys) {
      const ambiguous = GateLedger.fold(await store.read(key, 0, Number.MAX_SAFE_INTEGER)).ambiguous();
      if (ambiguous.length === 0) continue;
      const row: AuditEvent = {
        ...header("gate-ack", GATE_AUTHOR),
        kind: "audit",
        name: ACK_ROW,
        metadata: { interrupt_ids: ambiguous.map((entry) => entry.call.interruptId), reason, by: DIRECT_ACK_IDENTITY },
      };
      await store.append(key, [row]);
      acknowledged += ambiguous.length;
    }
    return acknowledged;
  });
}
