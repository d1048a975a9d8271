/**
 * An incident as the operator CLI reads it from a store: the coordinator session (app `svc`) and
 * the specialist sessions of the same id (apps `svc.<name>`, D235), each with its committed rows.
 * `readIncidents` groups a StoreReader's sessions so; everything downstream of it (state,
 * questions, decisions) is pure over `Incident`. Reads only.
 */
import type { CommittedRow } from "../../core/events.ts";
import type { SessionRecord } from "../../core/session-store.ts";
import type { StoreReader } from "../../core/store-reader.ts";
import { ZERO_TIME } from "../../core/zero-time.ts";

/** The app of svc's coordinator sessions; a specialist's is `svc.<name>`. */
export const COORDINATOR_APP = "svc";

export interface IncidentSession {
  record: SessionRecord;
  rows: readonly CommittedRow[];
}

export interface Incident {
  /** The session id every session of the incident shares (`incident-<uid>`). */
  id: string;
  coordinator: IncidentSession;
  /** Specialist sessions, by app name order. */
  specialists: IncidentSession[];
}

/** The specialist an app belongs to (`svc.worker` -> `worker`); undefined for any other app. */
export function specialistOf(app: string): string | undefined {
  return app.startsWith(`${COORDINATOR_APP}.`) ? app.slice(COORDINATOR_APP.length + 1) : undefined;
}

/** Every session of the incident, coordinator first. */
export function incidentSessions(incident: Incident): IncidentSession[] {
  return [incident.coordinator, ...incident.specialists];
}

/** The workload the incident ran: its coordinator agent is `<workload>_coordinator` (D235, D224). */
export function incidentWorkload(incident: Incident): string {
  for (const row of incident.coordinator.rows) {
    const author = row.event.author;
    if (author.endsWith("_coordinator")) return author.slice(0, -"_coordinator".length);
  }
  return "";
}

/** Nothing ever happened in it: no row in any of its sessions and never touched (the core's `default` session). */
export function isEmptyIncident(incident: Incident): boolean {
  return incidentSessions(incident).every(
    (session) => session.rows.length === 0 && session.record.lastTouchedAt === ZERO_TIME,
  );
}

/** The latest activity of the incident: its sessions' last touch, last row or abort, whichever is latest. */
export function lastEventAt(incident: Incident): string {
  let latest = "";
  for (const session of incidentSessions(incident)) {
    const last = session.rows[session.rows.length - 1]?.event.ts ?? "";
    for (const candidate of [session.record.lastTouchedAt, last, session.record.abort?.at ?? ""]) {
      if (candidate === ZERO_TIME) continue;
      if (candidate !== "" && Date.parse(candidate) > (latest === "" ? Number.NEGATIVE_INFINITY : Date.parse(latest)))
        latest = candidate;
    }
  }
  return latest;
}

/**
 * The incidents of the store (a coordinator session and its specialists), oldest coordinator
 * first; `id` reads only that incident. Sessions of other apps are not incidents and are skipped.
 */
export async function readIncidents(reader: StoreReader, id?: string): Promise<Incident[]> {
  const records = (await reader.listSessions()).filter((record) => id === undefined || record.id === id);
  const coordinators = records.filter((record) => record.app === COORDINATOR_APP);
  const specialists = records
    .filter((record) => specialistOf(record.app) !== undefined)
    .sort((a, b) => (a.app < b.app ? -1 : a.app > b.app ? 1 : 0));
  const grouped = coordinators.map((coordinator) => ({
    coordinator,
    specialists: specialists.filter((record) => record.id === coordinator.id),
  }));
  const keys = grouped
    .flatMap((group) => [group.coordinator, ...group.specialists])
    .map((record) => ({
      app: record.app,
      id: record.id,
    }));
  const rows = await reader.readRows(keys);
  let next = 0;
  const take = (record: SessionRecord): IncidentSession => ({ record, rows: rows[next++] ?? [] });
  return grouped.map((group) => ({
    id: group.coordinator.id,
    coordinator: take(group.coordinator),
    specialists: group.specialists.map(take),
  }));
}
