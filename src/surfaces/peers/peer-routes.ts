/**
 * The peer hub's HTTP routes (spec "Peer hub", registered only with `--attach-peer-hub`):
 * POST /peers, GET /peers, POST /peers/{id}/heartbeat, DELETE /peers/{id}. Thin: parse,
 * authorize, call the PeerHub, map the result. Transport auth and the CSRF guard come from the
 * RouteTable; the rules (upsert, ownership, leases) live in core/peer-registry.ts.
 *
 * - With `requireIdentity` (multi-session auth) every peer route answers 401
 *   (`WWW-Authenticate: Bearer realm="attach-multisession"`) to an anonymous caller, before the
 *   body is read. Without it the single local caller owns everything.
 * - POST /peers: 16 KiB body cap (413), JSON validated by valibot (unknown fields ignored);
 *   a bad `endpoint`, empty `name`, non-string label or non-positive TTL is a 400 naming the field,
 *   as is a name, endpoint or label set over PEER_FIELD_LIMITS; a name held by another caller is a
 *   409 (admins take it over); past a registration cap, 429 with Retry-After and a body naming
 *   the cap. A lease longer than the hub's maximum is granted as that maximum. 201 with the wire
 *   view (its `heartbeat_ttl_sec` and `expires_at` are the lease granted).
 * - GET /peers: `label=k=v` filters, all must match; a malformed one is a 400. Other query
 *   parameters are ignored. 200 `{peers: [...]}`, `registration_id` only on the caller's own
 *   (or on all, for an admin).
 * - POST /peers/{id}/heartbeat: no body read. 200 with the renewed view; 404 for an unknown,
 *   lapsed or someone else's id.
 * - DELETE /peers/{id}: 204, also for an unknown id; 403 when neither owner nor admin.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import {
  type LabelFilter,
  MAX_HEARTBEAT_TTL_SEC,
  isPeerEndpoint,
  parseLabelFilter,
  peerWireView,
} from "../../core/peer-registry.ts";
import type { Caller } from "../attach/attach-context.ts";
import type { RouteTable } from "../attach/route-table.ts";
import { HttpProblem } from "../http/http-problem.ts";
import { readJsonBody, validate } from "../http/request-body.ts";
import { json } from "../http/responses.ts";
import type { PeerHub } from "./peer-hub.ts";

export const PEER_BODY_LIMIT = 16 * 1024;

export interface PeerRouteOptions {
  /** Multi-session auth: anonymous callers get 401 on every peer route. */
  requireIdentity: boolean;
}

const REGISTRATION_SCHEMA = v.object({
  name: v.pipe(
    v.string("must be a string"),
    v.check((name) => name.trim() !== "", "must not be empty"),
  ),
  endpoint: v.pipe(
    v.string("must be a string holding an absolute http or https URL with a host"),
    v.check(isPeerEndpoint, "must be an absolute http or https URL with a host"),
  ),
  labels: v.optional(
    v.pipe(
      v.unknown(),
      v.check(
        (labels) => typeof labels === "object" && labels !== null && !Array.isArray(labels),
        "must be an object of string to string",
      ),
      v.record(v.string(), v.string("label values must be strings")),
    ),
  ),
  heartbeat_ttl_sec: v.optional(
    v.pipe(
      v.number("must be a number"),
      v.check((ttl) => Number.isFinite(ttl) && ttl > 0, "must be a positive number"),
      v.maxValue(MAX_HEARTBEAT_TTL_SEC, `must be at most ${MAX_HEARTBEAT_TTL_SEC}`),
    ),
  ),
});

function refuseAnonymous(): HttpProblem {
  return new HttpProblem(
    "unauthorized",
    "peer endpoints need an authenticated caller: send Authorization: Bearer <your token>",
    {
      "www-authenticate": 'Bearer realm="attach-multisession"',
    },
  );
}

function labelFilters(url: URL): LabelFilter[] {
  return url.searchParams.getAll("label").map((text) => {
    const parsed = parseLabelFilter(text);
    if (!parsed.ok) throw new SparError("bad_request", parsed.error);
    return parsed.value;
  });
}

/**
 * The caller is the one the RouteTable resolved for the request (bearer token, mTLS subject or
 * proxy assertion), so a peer is owned by the same identity as everything else it does.
 */
export function registerPeerRoutes(table: RouteTable, hub: PeerHub, options: PeerRouteOptions): void {
  const identify = (who: Caller): Caller => {
    if (options.requireIdentity && who.source === "anonymous") throw refuseAnonymous();
    return who;
  };

  table.add("POST", "/peers", async ({ request, caller }) => {
    const who = identify(caller);
    const body = await readJsonBody(request, PEER_BODY_LIMIT);
    if (!body.ok) throw body.error;
    if (body.value === undefined) throw new SparError("bad_request", "request body is empty");
    const input = validate(REGISTRATION_SCHEMA, body.value);
    if (!input.ok) throw input.error;
    const registered = hub.register(who, {
      name: input.value.name,
      endpoint: input.value.endpoint,
      ...(input.value.labels !== undefined ? { labels: input.value.labels } : {}),
      ...(input.value.heartbeat_ttl_sec !== undefined ? { heartbeatTtlSec: input.value.heartbeat_ttl_sec } : {}),
    });
    if (!registered.ok) throw registered.error;
    return json(201, peerWireView(registered.value, who));
  });

  table.add("GET", "/peers", ({ url, caller }) => {
    const who = identify(caller);
    const peers = hub.list(labelFilters(url)).map((registration) => peerWireView(registration, who));
    return json(200, { peers });
  });

  table.add("POST", "/peers/:id/heartbeat", ({ params, caller }) => {
    const who = identify(caller);
    const renewed = hub.heartbeat(who, params.id ?? "");
    if (!renewed.ok) throw renewed.error;
    return json(200, peerWireView(renewed.value, who));
  });

  table.add("DELETE", "/peers/:id", ({ params, caller }) => {
    const who = identify(caller);
    const removed = hub.deregister(who, params.id ?? "");
    if (!removed.ok) throw removed.error;
    return new Response(null, { status: 204 });
  });
}
