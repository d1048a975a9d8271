/** Shared builders for the sqlite store tests: temp dirs, session records, events. */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AuditEvent, UserMessageEvent } from "../../../src/core/events.ts";
import type { SessionRecord } from "../../../src/core/session-store.ts";
import type { SessionKey } from "../../../src/core/session-key.ts";

const dirs: string[] = [];

export function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "spar-store-"));
  dirs.push(dir);
  return dir;
}

export function tempDb(): string {
  return join(tempDir(), "sessions.db");
}

export function cleanupTempDirs(): void {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
}

export function key(id: string, app = "spar"): SessionKey {
  return { app, id };
}

export function record(id: string, app = "spar"): SessionRecord {
  return {
    app,
    id,
    owner: "local",
    viewers: ["v1"],
    contributors: ["c1", "c2"],
    createdAt: "2026-01-01T00:00:00Z",
    lastTouchedAt: "0001-01-01T00:00:00Z",
  };
}

let counter = 0;

export function audit(label: string, size = 0): AuditEvent {
  counter++;
  return {
    kind: "audit",
    id: `ev-${counter}`,
    ts: "2026-01-01T00:00:00.000Z",
    invocationId: "inv-1",
    author: "agent",
    name: label,
    metadata: { label, pad: "x".repeat(size) },
  };
}

export function userMessage(text: string, promptIds: string[]): UserMessageEvent {
  counter++;
  return {
    kind: "user-message",
    id: `ev-${counter}`,
    ts: "2026-01-01T00:00:00.000Z",
    invocationId: "inv-1",
    author: "user",
    text,
    promptIds,
  };
}

/** The rejection reason of a promise that must reject. */
export async function rejection(promise: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await promise;
  } catch (error) {
    return error as { code?: string; message: string };
  }
  throw new Error("expected the promise to reject");
}

/** Whether the store holds a tombstone for this session (its app among the id's tombstones). */
export async function tombstoned(
  store: { deletedSessions(id: string): Promise<Array<{ app: string }>> },
  key: SessionKey,
): Promise<boolean> {
  return (await store.deletedSessions(key.id)).some((row) => row.app === key.app);
}
