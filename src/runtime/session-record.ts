/**
 * SessionRecordKeeper: a live session's durable row as its actor sees it (owner, ACL lists,
 * title, last_touched_at) and the in-memory activity clock idle eviction reads. The title and
 * last_touched_at are written through to the store; a failed write is logged, never fatal (the
 * session goes on; the next touch writes again). Knows nothing of turns.
 */
import { titleFromPrompt } from "../core/inbox-bundle.ts";
import type { SessionKey } from "../core/session-key.ts";
import type { SessionRecord, SessionStore } from "../core/session-store.ts";

export interface RecordKeeperDeps {
  store: Pick<SessionStore, "touchSession" | "setTitle">;
  now(): Date;
  logError(message: string): void;
}

/** Longest title kept, in runes (D359; docs/attach-api.md#titles). */
export const MAX_TITLE_RUNES = 60;

/** A title as stored: whitespace trimmed, at most 60 runes; undefined when nothing is left. */
export function cutTitle(title: string): string | undefined {
  const trimmed = title.trim();
  if (trimmed === "") return undefined;
  const runes = Array.from(trimmed);
  return runes.length <= MAX_TITLE_RUNES ? trimmed : runes.slice(0, MAX_TITLE_RUNES).join("").trimEnd();
}

export class SessionRecordKeeper {
  #record: SessionRecord;
  #lastActivity = Date.now();
  readonly #key: SessionKey;
  readonly #deps: RecordKeeperDeps;

  constructor(record: SessionRecord, deps: RecordKeeperDeps) {
    this.#record = record;
    this.#key = { app: record.app, id: record.id };
    this.#deps = deps;
  }

  get record(): SessionRecord {
    return this.#record;
  }

  /** When a request or a turn last touched the session (idle eviction's clock). */
  get lastActivity(): number {
    return this.#lastActivity;
  }

  /** Adopt ACL lists already committed to the store. */
  adoptAcl(viewers: string[], contributors: string[]): void {
    this.#record = { ...this.#record, viewers, contributors };
  }

  /** Mark activity (in memory only). */
  touch(): void {
    this.#lastActivity = Date.now();
  }

  /** Persist last_touched_at (the session list's activity column). */
  persistTouch(): void {
    const at = this.#deps.now().toISOString();
    this.#record = { ...this.#record, lastTouchedAt: at };
    this.#deps.store.touchSession(this.#key, at).catch((error: unknown) => {
      this.#deps.logError(`session ${this.#key.id}: last_touched_at not persisted: ${String(error)}`);
    });
  }

  /**
   * POST /title (D359): the operator's name, trimmed and cut to 60 runes; `""` clears it, so the
   * next turn's prompt names the session again (D42). The row is written before this answers:
   * `persisted` false with `detail` when the write failed (the name lives in memory until the
   * session is rebuilt, then reverts to the stored one).
   */
  async setTitle(title: string): Promise<{ title?: string; persisted: boolean; detail?: string }> {
    const stored = cutTitle(title);
    const { title: _previous, ...rest } = this.#record;
    this.#record = stored === undefined ? rest : { ...rest, title: stored };
    const shown = stored === undefined ? {} : { title: stored };
    try {
      await this.#deps.store.setTitle(this.#key, stored);
      return { ...shown, persisted: true };
    } catch (error) {
      this.#deps.logError(`session ${this.#key.id}: title not persisted: ${String(error)}`);
      return { ...shown, persisted: false, detail: `the title was not stored and will revert: ${String(error)}` };
    }
  }

  /** Name a session that has no title yet after this prompt (D42); an empty prompt names nothing. */
  nameFrom(prompt: string): void {
    if (this.#record.title !== undefined || prompt === "") return;
    const title = titleFromPrompt(prompt);
    if (!title) return;
    this.#record = { ...this.#record, title };
    this.#deps.store.setTitle(this.#key, title).catch((error: unknown) => {
      this.#deps.logError(`session ${this.#key.id}: title not persisted: ${String(error)}`);
    });
  }
}
