/**
 * PeerRegistry: the peer hub's rules (spec "Peer registration", "Peer hub"). Owns registrations
 * keyed by name, their owners and leases, label filtering, the wire view, and the plain records
 * a state file holds. Pure: the clock and the id source are injected; no timers, no I/O.
 *
 * Decisions where the spec is silent:
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
 * - `heartbeat_ttl_sec` defaults to 30 and is at most one year; `registration_id` is 128 random
 *   bits (`peer-` + 32 hex digits): it is shown only to the owner or an admin.
 * - The wire view always carries `labels` (`{}` when none), the effective `heartbeat_ttl_sec` and
 *   `expires_at` (RFC 3339), so a heartbeat answer shows the extended lease. The owner never.
 * - Lists are sorted by name.
 */
import { SparError } from "./errors.ts";
import { type Result, err, ok } from "./result.ts";

export const DEFAULT_HEARTBEAT_TTL_SEC = 30;
export const MAX_HEARTBEAT_TTL_SEC = 365 * 24 * 3600;

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

/** The wire shape of a registration (spec "Peer registration"). */
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
  if (Number.isNaN(registeredAt) || Number.isNaN(expiresAt)) return err("registered_at or expires_at is not a timestamp");
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
  /** By name. */
  readonly #byName = new Map<string, PeerRegistration>();

  constructor(options: PeerRegistryOptions) {
    this.#now = options.now;
    this.#newId = options.newId ?? newRegistrationId;
  }

  #live(registration: PeerRegistration | undefined): PeerRegistration | undefined {
    return registration !== undefined && registration.expiresAt > this.#now() ? registration : undefined;
  }

  #byId(registrationId: string): PeerRegistration | undefined {
    for (const registration of this.#byName.values()) if (registration.registrationId === registrationId) return this.#live(registration);
    return undefined;
  }

  /** Upsert by name (see the header for who may replace whom). */
  register(caller: PeerCaller, input: PeerRegistrationInput): Result<PeerRegistration, SparError> {
    const name = input.name.trim();
    if (name === "") return err(new SparError("bad_request", "name must not be empty"));
    if (!isPeerEndpoint(input.endpoint)) return err(new SparError("bad_request", "endpoint must be an absolute http or https URL with a host"));
    const ttl = input.heartbeatTtlSec ?? DEFAULT_HEARTBEAT_TTL_SEC;
    if (!isValidTtl(ttl)) return err(new SparError("bad_request", `heartbeat_ttl_sec must be a positive number of at most ${MAX_HEARTBEAT_TTL_SEC}`));
    const existing = this.#live(this.#byName.get(name));
    if (existing && !canManage(caller, existing)) {
      return err(new SparError("conflict", `peer name ${JSON.stringify(name)} is registered by another caller`));
    }
    const keep = existing !== undefined && existing.owner === caller.identity;
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
      if (filters.every((filter) => Object.hasOwn(registration.labels, filter.key) && registration.labels[filter.key] === filter.value)) {
        matches.push(registration);
      }
    }
    return matches.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** Renew a lease from now for the registration's TTL; unknown, lapsed or not the caller's: not found. */
  heartbeat(caller: PeerCaller, registrationId: string): Result<PeerRegistration, SparError> {
    const registration = this.#byId(registrationId);
    if (!registration || !canManage(caller, registration)) {
      return err(new SparError("not_found", `no peer registration ${JSON.stringify(registrationId)} (expired, removed or never registered)`));
    }
    const renewed: PeerRegistration = { ...registration, expiresAt: this.#now() + registration.heartbeatTtlSec * 1000 };
    this.#byName.set(renewed.name, renewed);
    return ok(renewed);
  }

  /** Remove a registration; `removed: false` for an unknown id (idempotent). */
  deregister(caller: PeerCaller, registrationId: string): Result<{ removed: boolean }, SparError> {
    const registration = this.#byId(registrationId);
    if (!registration) return ok({ removed: false });
    if (!canManage(caller, registration)) return err(new SparError("forbidden", "only the peer's owner or an admin may deregister it"));
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
    return [...this.#byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map(toPeerRecord);
  }

  /**
   * Load records (a state file's lines, in order) into the registry: lapsed leases are dropped,
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
      const registration = parsed.value;
      if (registration.expiresAt <= now) {
        report.expired++;
        continue;
      }
      const clash = [...this.#byName.values()].find((held) => held.registrationId === registration.registrationId && held.name !== registration.name);
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
