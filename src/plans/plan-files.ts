/**
 * A session's plan files (D358): one directory per session under the plans root (`agent.plans_dir`,
 * default `<workspace>/.agents/plans`), `<root>/<session id>/plan-<seq>.md`, owner-only (0700
 * directories, 0600 files: src/fs/private-files.ts). The active plan is the newest one (highest
 * seq) still in that directory; archiving moves it into the directory's `archive/` folder, where
 * it is kept and never active again. Plans are written by the model's plan tool (issue 33) and
 * archived by `POST /slash/replan`. Knows nothing of sessions beyond their id.
 */
import { existsSync, mkdirSync, readdirSync, renameSync } from "node:fs";
import { join } from "node:path";
import { PRIVATE_DIRECTORY_MODE, ensurePrivateDirectoryFor, writePrivateFile } from "../fs/private-files.ts";

const PLAN_FILE = /^plan-(\d{1,15})\.md$/;
export const ARCHIVE_FOLDER = "archive";

export interface PlanFile {
  path: string;
  seq: number;
}

export class PlanFiles {
  readonly root: string;

  /** `root`: an absolute directory; it and a session's directory are created when first written. */
  constructor(root: string) {
    this.root = root;
  }

  /** The directory of a session's plans (session ids are path-safe: letters, digits, `._:@-`). */
  dirOf(sessionId: string): string {
    return join(this.root, sessionId);
  }

  /** The session's plans still in its directory, oldest first. */
  list(sessionId: string): PlanFile[] {
    const dir = this.dirOf(sessionId);
    if (!existsSync(dir)) return [];
    const plans: PlanFile[] = [];
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const match = entry.isFile() ? PLAN_FILE.exec(entry.name) : null;
      if (match) plans.push({ path: join(dir, entry.name), seq: Number(match[1]) });
    }
    return plans.sort((a, b) => a.seq - b.seq);
  }

  /** The active plan: the newest unarchived `plan-<seq>.md`; undefined when there is none. */
  active(sessionId: string): PlanFile | undefined {
    return this.list(sessionId).at(-1);
  }

  /** Write the session's next plan (seq one past every plan it has had, archived ones included). */
  write(sessionId: string, text: string): PlanFile {
    const dir = this.dirOf(sessionId);
    const seq = Math.max(0, ...this.#allSeqs(sessionId)) + 1;
    const path = join(dir, `plan-${seq}.md`);
    ensurePrivateDirectoryFor(path);
    writePrivateFile(path, text);
    return { path, seq };
  }

  /** Move the active plan into `archive/`; undefined when there was none. Returns the archived path. */
  archiveActive(sessionId: string): { from: string; to: string } | undefined {
    const plan = this.active(sessionId);
    if (!plan) return undefined;
    const archive = join(this.dirOf(sessionId), ARCHIVE_FOLDER);
    mkdirSync(archive, { recursive: true, mode: PRIVATE_DIRECTORY_MODE });
    let to = join(archive, `plan-${plan.seq}.md`);
    // A plan of that number archived before (written again by hand): keep both.
    for (let copy = 2; existsSync(to); copy++) to = join(archive, `plan-${plan.seq}.${copy}.md`);
    renameSync(plan.path, to);
    return { from: plan.path, to };
  }

  #allSeqs(sessionId: string): number[] {
    const seqs = this.list(sessionId).map((plan) => plan.seq);
    const archive = join(this.dirOf(sessionId), ARCHIVE_FOLDER);
    if (!existsSync(archive)) return seqs;
    for (const name of readdirSync(archive)) {
      const match = /^plan-(\d{1,15})(?:\.\d+)?\.md$/.exec(name);
      if (match) seqs.push(Number(match[1]));
    }
    return seqs;
  }
}
