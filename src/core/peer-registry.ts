/**
 * PeerRegistry: the peer hub's rules (docs/agent.md#peer-hub, docs/attach-api.md#peer-hub). Owns
 * registrations keyed by name, their owners and leases, label filtering, the wire view, and the
 * plain records a state file holds. Pure: the clock and the id source are injected; no timers, no
 * I/O.
 *
 * Settled here (the pages above say what a client sees):
 * - Upsert by name. A re-registration by the owner keeps the `registration_id` (a peer that lost
 *   its id gets it back by registering again) and replaces endpoint, labels and TTL, renewing the
 *   lease. A re-registration by an admin who is not the owner takes the name over: the admin
 *   becomes owner and a fresh id is minted (the previous owner's id stops working). Anyone else
 *   gets `conflict` (409): the name is taken; the owner is not named.
 * - An expired lease counts as absent everywhere (list, heartbeat, upsert) even before a prune
 *   removes it, so a lapsed name can be claimed by anyone at once.
 * - Heartbeat by id: the owner or an admin; anyone else gets `not_found`, masked like a session
 *   ACL denial. The lease is renewed from now for the registration's own TTL.
 * - Deregister: unknown (or expired) id is a successful no-op; neither owner nor admin is
 *   `forbidden`.
 * - `heartbeat_ttl_sec` defaults to 30; a longer lease than `maxTtlSec` (default one hour) is
 *   granted as `maxTtlSec` (clamped, not refused: the answer carries the effective TTL and
 *   `expires_at`, so a client heartbeats in time). `registration_id` is 128 random bits (`peer-`
 *   + 32 hex digits): it is shown only to the owner or an admin.
 * - Caps (issue 13): at most `maxPerCaller` live registrations per owner and `maxTotal` in all
 *   (re-registering a name one already holds counts nothing new); past either, `too_many_requests`
 *   naming the cap, with the seconds until the earliest lease that would free a place lapses.
 *   Names, endpoints and labels are bounded (PEER_FIELD_LIMITS), here and at restore.
 * - The wire view always carries `labels` (`{}` when none), the effective `heartbeat_ttl_sec` and
 *   `expires_at` (RFC 3339), so a heartbeat answer shows the extended lease. The owner never.
 * - Lists are sorted by name.
 */
import { SparError } from "./errors.ts";
import { type Result, err, ok } from "./result.ts";

export const DEFAULT_HEARTBEAT_TTL_SEC = 30;
/** The largest TTL a request may name at all (larger is a 400); leases are clamped to `maxTtlSec`. */
export const MAX_HEARTBEAT_TTL_SEC = 365 * 24 * 3600;

/** The caps of a registry (configurable: `--attach-peer-max-*`). */
export interface PeerLimits {
  /** Live registrations one owner may hold. */
  maxPerCaller: number;
  /** Live registrations in all. */
  maxTotal: number;
  /** Longest lease granted, seconds; a longer request is granted this. */
  maxTtlSec: number;
}

export const DEFAULT_PEER_LIMITS: Readonly<PeerLimits> = Object.freeze({
  maxPerCaller: 64,
  maxTotal: 1024,
  maxTtlSec: 3600,
});

/** Fixed bounds of one registration's fields (characters). */
export const PEER_FIELD_LIMITS = Object.freeze({
  name: 128,
  endpoint: 2048,
  labels: 16,
  labelKey: 64,
  labelValue: 256,
});

/** Who asks: the registry needs only the identity and the admin flag. */
export interface PeerCaller {
  identity: string;
  admin: boolean;
}

/** A registration as the hub holds it (owner included; never sent as is). */
export interface PeerRegistration {
  registrationId: string;
  name: string;
  endpoint: string;
  labels: Readonly<Record<string, string>>;
  heartbeatTtlSec: number;
  owner: string;
  /** Epoch milliseconds. */
  registeredAt: number;
  /** Epoch milliseconds; the lease has lapsed once `now() >= expiresAt`. */
  expiresAt: number;
}

/** What a caller asks to register (already validated at the edge). */
export interface PeerRegistrationInput {
  name: string;
  endpoint: string;
  labels?: Readonly<Record<string, string>>;
  heartbeatTtlSec?: number;
}

/** One `k=v` label filter: a peer matches when `labels[key] === value`. */
export interface LabelFilter {
  key: string;
  value: string;
}

/** The wire shape of a registration (docs/attach-api.md#peer-hub). */
export interface PeerWireView {
  registration_id?: string;
  name: string;
  endpoint: string;
  labels: Record<string, string>;
  heartbeat_ttl_sec: number;
  expires_at: string;
}

/** One line of a state file: everything needed to restore a registration, ownership included. */
export interface PeerRecord {
  registration_id: string;
  name: string;
  endpoint: string;
  labels: Record<string, string>;
  heartbeat_ttl_sec: number;
  owner: string;
  registered_at: string;
  expires_at: string;
}

export interface RestoreReport {
  restored: number;
  /** Records whose lease had lapsed at restore time. */
  expired: number;
  /** Why records were refused (one message per record, no secrets). */
  skipped: string[];
}

export interface PeerRegistryOptions {
  now: () => number;
  newId?: () => string;
  /** Defaults: DEFAULT_PEER_LIMITS. */
  limits?: Partial<PeerLimits>;
}

/** 128 random bits: the id authenticates heartbeats and deletes, so it must not be guessable. */
export function newRegistrationId(): string {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  let hex = "";
  for (const byte of bytes) hex += byte.toString(16).padStart(2, "0");
  return `peer-${hex}`;
}

/** An absolute http or https URL with a host, written out in full (`http:foo` is refused). */
export function isPeerEndpoint(text: string): boolean {
  if (!/^https?:\/\/[^/?#\s]/i.test(text)) return false;
  try {
    const url = new URL(text);
    return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "";
  } catch {
    return false;
  }
}

/** Parse one `label=k=v` filter value: the key is what precedes the first `=`, and must not be empty. */
export function parseLabelFilter(text: string): Result<LabelFilter, string> {
  const eq = text.indexOf("=");
  if (eq <= 0) return err(`label filter ${JSON.stringify(text)} must be key=value`);
  return ok({ key: text.slice(0, eq), value: text.slice(eq + 1) });
}

export function isValidTtl(seconds: number): boolean {
  return Number.isFinite(seconds) && seconds > 0 && seconds <= MAX_HEARTBEAT_TTL_SEC;
}

/** Why a name, endpoint or label set is over PEER_FIELD_LIMITS (naming the field), or undefined. */
export function fieldLimitProblem(fields: {
  name: string;
  endpoint: string;
  labels?: Readonly<Record<string, string>> | undefined;
}): string | undefined {
  const limits = PEER_FIELD_LIMITS;
  if (fields.name.length > limits.name) return `name must be at most ${limits.name} characters`;
  if (fields.endpoint.length > limits.endpoint) return `endpoint must be at most ${limits.endpoint} characters`;
  const labels = Object.entries(fields.labels ?? {});
  if (labels.length > limits.labels) return `labels: at most ${limits.labels} labels`;
  for (const [key, value] of labels) {
    if (key.length === 0 || key.length > limits.labelKey)
      return `labels: a key must be 1 to ${limits.labelKey} characters`;
    if (value.length > limits.labelValue)
      return `labels.${key}: a value must be at most ${limits.labelValue} characters`;
  }
  return undefined;
}

function canManage(caller: PeerCaller, registration: PeerRegistration): boolean {
  return caller.admin || caller.identity === registration.owner;
}

/** The wire view for one caller: `registration_id` only for the owner or an admin. */
export function peerWireView(registration: PeerRegistration, caller: PeerCaller): PeerWireView {
  return {
    ...(canManage(caller, registration) ? { registration_id: registration.registrationId } : {}),
    name: registration.name,
    endpoint: registration.endpoint,
    labels: { ...registration.labels },
    heartbeat_ttl_sec: registration.heartbeatTtlSec,
    expires_at: new Date(registration.expiresAt).toISOString(),
  };
}

export function toPeerRecord(registration: PeerRegistration): PeerRecord {
  return {
    registration_id: registration.registrationId,
    name: registration.name,
    endpoint: registration.endpoint,
    labels: { ...registration.labels },
    heartbeat_ttl_sec: registration.heartbeatTtlSec,
    owner: registration.owner,
    registered_at: new Date(registration.registeredAt).toISOString(),
    expires_at: new Date(registration.expiresAt).toISOString(),
  };
}

/** Check a record's fields beyond their types; returns the registration or why it is refused. */
function fromPeerRecord(record: PeerRecord): Result<PeerRegistration, string> {
  const registeredAt = Date.parse(record.registered_at);
  const expiresAt = Date.parse(record.expires_at);
  if (record.registration_id === "") return err("empty registration_id");
  if (record.name.trim() === "") return err("empty name");
  if (record.owner === "") return err("empty owner");
  if (!isPeerEndpoint(record.endpoint)) return err("endpoint is not an absolute http or https URL with a host");
  if (!isValidTtl(record.heartbeat_ttl_sec)) return err("heartbeat_ttl_sec out of range");
  const overLimit = fieldLimitProblem(record);
  if (overLimit !== undefined) return err(overLimit);
  if (Number.isNaN(registeredAt) || Number.isNaN(expiresAt))
    return err("registered_at or expires_at is not a timestamp");
  return ok({
    registrationId: record.registration_id,
    name: record.name,
    endpoint: record.endpoint,
    labels: { ...record.labels },
    heartbeatTtlSec: record.heartbeat_ttl_sec,
    owner: record.owner,
    registeredAt,
    expiresAt,
  });
}

export class PeerRegistry {
  readonly #now: () => number;
  readonly #newId: () => string;
  readonly #limits: PeerLimits;
  /** By name. */
  readonly #byName = new Map<string, PeerRegistration>();

  constructor(options: PeerRegistryOptions) {
    this.#now = options.now;
    this.#newId = options.newId ?? newRegistrationId;
    this.#limits = { ...DEFAULT_PEER_LIMITS, ...options.limits };
  }

  get limits(): Readonly<PeerLimits> {
    return this.#limits;
  }

  /** Registrations held, lapsed ones not yet pruned included. */
  get size(): number {
    return this.#byName.size;
  }

  /**
   * Refuse one more registration for `owner` past a cap: `too_many_requests` naming it, with the
   * seconds until the earliest lease that would free a place lapses (`retry_after_seconds`).
   */
  #capProblem(owner: string): SparError | undefined {
    const now = this.#now();
    const live = [...this.#byName.values()].filter((registration) => registration.expiresAt > now);
    const owned = live.filter((registration) => registration.owner === owner);
    const over =
      owned.length >= this.#limits.maxPerCaller
        ? { cap: "registrations_per_caller", limit: this.#limits.maxPerCaller, held: owned }
        : live.length >= this.#limits.maxTotal
          ? { cap: "registrations_total", limit: this.#limits.maxTotal, held: live }
          : undefined;
    if (over === undefined) return undefined;
    const earliest = Math.min(...over.held.map((registration) => registration.expiresAt));
    const retryAfter = Math.max(1, Math.ceil((earliest - now) / 1000));
    const whose = over.cap === "registrations_per_caller" ? "this caller holds" : "the hub holds";
    return new SparError(
      "too_many_requests",
      `${whose} ${over.held.length} peer registrations, the cap (${over.cap} = ${over.limit}): deregister one, or retry once a lease lapses`,
      {
        cap: over.cap,
        limit: over.limit,
        retry_after_seconds: retryAfter,
      },
    );
  }

  #live(registration: PeerRegistration | undefined): PeerRegistration | undefined {
    return registration !== undefined && registration.expiresAt > this.#now() ? registration : undefined;
  }

  #byId(registrationId: string): PeerRegistration | undefined {
    for (const registration of this.#byName.values())
      if (registration.registrationId === registrationId) return this.#live(registration);
    return undefined;
  }

  /** Upsert by name (see the header for who may replace whom). */
  register(caller: PeerCaller, input: PeerRegistrationInput): Result<PeerRegistration, SparError> {
    const name = input.name.trim();
    if (name === "") return err(new SparError("bad_request", "name must not be empty"));
    if (!isPeerEndpoint(input.endpoint))
      return err(new SparError("bad_request", "endpoint must be an absolute http or https URL with a host"));
    const requested = input.heartbeatTtlSec ?? DEFAULT_HEARTBEAT_TTL_SEC;
    if (!isValidTtl(requested))
      return err(
        new SparError("bad_request", `heartbeat_ttl_sec must be a positive number of at most ${MAX_HEARTBEAT_TTL_SEC}`),
      );
    const overLimit = fieldLimitProblem({ name, endpoint: input.endpoint, labels: input.labels });
    if (overLimit !== undefined) return err(new SparError("bad_request", overLimit));
    const ttl = Math.min(requested, this.#limits.maxTtlSec);
    const existing = this.#live(this.#byName.get(name));
    if (existing && !canManage(caller, existing)) {
      return err(new SparError("conflict", `peer name ${JSON.stringify(name)} is registered by another caller`));
    }
    const keep = existing !== undefined && existing.owner === caller.identity;
    if (!keep) {
      const capped = this.#capProblem(caller.identity);
      // An admin taking a name over adds to the admin's count, not to the total.
      if (capped !== undefined && !(existing !== undefined && capped.details.cap === "registrations_total"))
        return err(capped);
    }
    const now = this.#now();
    const registration: PeerRegistration = {
      registrationId: keep ? existing.registrationId : this.#newId(),
      name,
      endpoint: input.endpoint,
      labels: { ...(input.labels ?? {}) },
      heartbeatTtlSec: ttl,
      owner: caller.identity,
      registeredAt: keep ? existing.registeredAt : now,
      expiresAt: now + ttl * 1000,
    };
    this.#byName.set(name, registration);
    return ok(registration);
  }

  /** Live registrations matching every filter, sorted by name. */
  list(filters: readonly LabelFilter[] = []): PeerRegistration[] {
    const matches: PeerRegistration[] = [];
    for (const registration of this.#byName.values()) {
      if (!this.#live(registration)) continue;
      if (
        filters.every(
          (filter) =>
            Object.hasOwn(registration.labels, filter.key) && registration.labels[filter.key] === filter.value,
        )
      ) {
        matches.push(registration);
      }
    }
    return matches.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Renew a lease from now for the registration's TTL; unknown, lapsed or not the caller's: not found. */
  heartbeat(caller: PeerCaller, registrationId: string): Result<PeerRegistration, SparError> {
    const registration = this.#byId(registrationId);
    if (!registration || !canManage(caller, registration)) {
      return err(
        new SparError(
          "not_found",
          `no peer registration ${JSON.stringify(registrationId)} (expired, removed or never registered)`,
        ),
      );
    }
    const renewed: PeerRegistration = { ...registration, expiresAt: this.#now() + registration.heartbeatTtlSec * 1000 };
    this.#byName.set(renewed.name, renewed);
    return ok(renewed);
  }

  /** Remove a registration; `removed: false` for an unknown id (idempotent). */
  deregister(caller: PeerCaller, registrationId: string): Result<{ removed: boolean }, SparError> {
    const registration = this.#byId(registrationId);
    if (!registration) return ok({ removed: false });
    if (!canManage(caller, registration))
      return err(new SparError("forbidden", "only the peer's owner or an admin may deregister it"));
    this.#byName.delete(registration.name);
    return ok({ removed: true });
  }

  /** Drop lapsed leases; returns what was dropped. */
  prune(): PeerRegistration[] {
    const now = this.#now();
    const dropped: PeerRegistration[] = [];
    for (const [name, registration] of this.#byName) {
      if (registration.expiresAt <= now) {
        this.#byName.delete(name);
        dropped.push(registration);
      }
    }
    return dropped;
  }

  /** Every held registration (lapsed ones not yet pruned included) as plain records. */
  snapshot(): PeerRecord[] {
    return [...this.#byName.values()]
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
      .map(toPeerRecord);
  }

  /**
   * Load records (a state file's lines, in order) into the registry: lapsed leases are dropped,
   * leases and TTLs longer than `maxTtlSec` are cut to it, records past the caps or the field
   * limits are refused,
   * a later record for the same name replaces an earlier one, a record reusing another name's id
   * is refused.
   */
  restore(records: readonly PeerRecord[]): RestoreReport {
    const report: RestoreReport = { restored: 0, expired: 0, skipped: [] };
    const now = this.#now();
    for (const [index, record] of records.entries()) {
      const parsed = fromPeerRecord(record);
      if (!parsed.ok) {
        report.skipped.push(`record ${index + 1}: ${parsed.error}`);
        continue;
      }
      const registration = clampLease(parsed.value, now, this.#limits.maxTtlSec);
      if (registration.expiresAt <= now) {
        report.expired++;
        continue;
      }
      if (!this.#byName.has(registration.name) && this.#capProblem(registration.owner) !== undefined) {
        report.skipped.push(`record ${index + 1}: over the registration caps`);
        continue;
      }
      const clash = [...this.#byName.values()].find(
        (held) => held.registrationId === registration.registrationId && held.name !== registration.name,
      );
      if (clash) {
        report.skipped.push(`record ${index + 1}: registration_id already used by another name`);
        continue;
      }
      if (!this.#byName.has(registration.name)) report.restored++;
      this.#byName.set(registration.name, registration);
    }
    return report;
  }
}

/** A lease granted under looser limits (an older state file), cut to `maxTtlSec` from `now`. */
function clampLease(registration: PeerRegistration, now: number, maxTtlSec: number): PeerRegistration {
  const heartbeatTtlSec = Math.min(registration.heartbeatTtlSec, maxTtlSec);
  const expiresAt = Math.min(registration.expiresAt, now + maxTtlSec * 1000);
  return heartbeatTtlSec === registration.heartbeatTtlSec && expiresAt === registration.expiresAt
    ? registration
    : { ...registration, heartbeatTtlSec, expiresAt };
}
