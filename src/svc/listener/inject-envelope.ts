/**
 * The body of svc's `POST /inject`: the cluster watcher's incident envelope (every field optional,
 * an unknown field refused), the session it names (`incident-<uid>`, or `gke-triage-default` for
 * an empty uid; ids ending `:mast-ops` are reserved for the daemon's own rows) and the user
 * message the model sees (`INJECT ` and the envelope re-encoded in its field order, zero values
 * included: docs/wire-compat.md#svcs-inherited-names). Pure.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { isValidName } from "../../core/session-key.ts";
import { ZERO_TIME } from "../../core/zero-time.ts";

/**
 * The suffix of the session ids the daemon keeps its markers under, reserved on every write
 * (docs/wire-compat.md#svcs-inherited-names).
 */
export const RESERVED_SUFFIX = ":mast-ops";
/** The session an envelope without a uid goes to. */
export const DEFAULT_INCIDENT_SESSION = "gke-triage-default";

const text = v.optional(v.string());

export const InjectEnvelope = v.strictObject(
  {
    kind: text,
    reason: text,
    namespace: text,
    kind_of_object: text,
    name: text,
    container: text,
    uid: text,
    message: text,
    count: v.optional(v.pipe(v.number(), v.integer("count must be a whole number"), v.minValue(0))),
    first_seen: text,
    last_seen: text,
    cluster: text,
    context: v.optional(v.record(v.string(), v.unknown())),
  },
  (issue) => (issue.expected === "never" ? "unknown field" : "the body must be a JSON object of the incident envelope"),
);

export type InjectEnvelope = v.InferOutput<typeof InjectEnvelope>;

/** The session an envelope is for; 400 for a reserved or unusable id. */
export function incidentSessionId(envelope: InjectEnvelope): string {
  const uid = envelope.uid ?? "";
  const id = uid === "" ? DEFAULT_INCIDENT_SESSION : `incident-${uid}`;
  refuseUnwritableId(id, `payload uid ${JSON.stringify(uid)} derives`);
  return id;
}

/**
 * The check of every write endpoint's session id: 400 for a reserved id (`:mast-ops`) or one no
 * session can carry. `named` opens the message (`payload uid "x" derives`, `session_id names`).
 */
export function refuseUnwritableId(id: string, named: string): void {
  if (id.endsWith(RESERVED_SUFFIX)) {
    throw new SparError(
      "bad_request",
      `${named} reserved session ID ${JSON.stringify(id)}: ids ending ${RESERVED_SUFFIX} are the daemon's own`,
    );
  }
  if (!isValidName(id)) {
    throw new SparError(
      "bad_request",
      `${named} session ID ${JSON.stringify(id)}: a session id is 1-128 letters, digits, . _ : @ -`,
    );
  }
}

/** The user message of an inject: `INJECT ` and the envelope in its field order, zero values included. */
export function injectMessage(envelope: InjectEnvelope): string {
  const ordered = {
    kind: envelope.kind ?? "",
    reason: envelope.reason ?? "",
    namespace: envelope.namespace ?? "",
    kind_of_object: envelope.kind_of_object ?? "",
    name: envelope.name ?? "",
    ...(envelope.container ? { container: envelope.container } : {}),
    uid: envelope.uid ?? "",
    message: envelope.message ?? "",
    count: envelope.count ?? 0,
    first_seen: envelope.first_seen ?? ZERO_TIME,
    last_seen: envelope.last_seen ?? ZERO_TIME,
    cluster: envelope.cluster ?? "",
    context: envelope.context ?? {},
  };
  return `INJECT ${JSON.stringify(ordered)}`;
}
