/**
 * Dispatch-shape workloads for tests (reference 1.7): write a workload directory from its
 * `workload.yaml` lines and its specialists' front matter and instructions, and start svc on it
 * with a scripted model. The rest (inject, resume, stored rows) is test/support/gated-workload.ts.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { SessionEvent } from "../../src/core/events.ts";
import type { DaemonOptions } from "./daemon.ts";
import { tempDir } from "./daemon.ts";
import { TOKEN, storedRows } from "./gated-workload.ts";
import { writeScript } from "./scripted.ts";

export interface SpecialistFile {
  /** Front matter lines (`description:` is added when missing). */
  front: string[];
  instruction?: string;
}

/** Write a workload directory; `files` are extra files (relative path -> text). */
export function shapeWorkload(
  bundle: string[],
  specialists: Record<string, SpecialistFile>,
  files: Record<string, string> = {},
): string {
  const directory = tempDir("spar-shape-");
  mkdirSync(join(directory, "specialists"));
  writeFileSync(join(directory, "workload.yaml"), `${bundle.join("\n")}\n`);
  for (const [name, file] of Object.entries(specialists)) {
    const front = file.front.some((line) => line.startsWith("description:"))
      ? file.front
      : [`description: The ${name} specialist.`, ...file.front];
    const text = ["---", ...front, "---", file.instruction ?? `You are ${name}.`, ""].join("\n");
    writeFileSync(join(directory, "specialists", `${name}.tmpl`), text);
  }
  for (const [path, text] of Object.entries(files)) writeFileSync(join(directory, path), text);
  return directory;
}

/** svc on the workload with a scripted model and the inject token. */
export function shapeDaemonOptions(
  directory: string,
  lines: readonly unknown[],
  extra: { sessionDb?: string; env?: Record<string, string> } = {},
): DaemonOptions {
  return {
    role: "svc",
    ...(extra.sessionDb === undefined ? {} : { sessionDb: extra.sessionDb }),
    args: [`--workload=${directory}`, "--model=scripted"],
    env: { SVC_SCRIPT: writeScript(lines), SVC_INJECT_TOKEN: TOKEN, ...extra.env },
  };
}

/** The events of a stored session (read once the daemon has stopped). */
export async function storedEvents(sessionDb: string, app: string, id: string): Promise<SessionEvent[]> {
  return (await storedRows(sessionDb, app, id)).map((row) => row.event);
}

/** The audit rows of one name among `events`. */
export function auditRows(events: readonly SessionEvent[], name: string): Array<Record<string, unknown>> {
  return events.flatMap((event) => (event.kind === "audit" && event.name === name ? [event.metadata] : []));
}
