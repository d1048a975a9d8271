/**
 * The peer hub's HTTP routes (docs/attach-api.md#peer-hub, registered only with
 * `--attach-peer-hub`): POST /peers, GET /peers, POST /peers/{id}/heartbeat, DELETE /peers/{id}.
 * Thin: parse, authorize, call the PeerHub, map the result. Transport auth, CSRF and the body cap
 * come from the listener's shared guards; the rules (upsert, ownership, leases) live in
 * core/peer-registry.ts.
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
import { Elysia } from "elysia";
import { type Caller, LOCAL_CALLER } from "../http/caller-auth.ts";
import { edgeState } from "../http/edge-state.ts";
import { HttpProblem } from "../http/http-problem.ts";
import { requestUrl } from "../http/request-url.ts";
import { json } from "../http/responses.ts";
import { NoContent, responses } from "../http/wire-schemas.ts";
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

const PeerView = v.looseObject({
  name: v.string(),
  endpoint: v.string(),
  labels: v.record(v.string(), v.string()),
  heartbeat_ttl_sec: v.number(),
  expires_at: v.string(),
});
const PEERS = ["peers"];

/** Whether a request is for one of the peer routes. */
export function isPeerPath(pathname: string): boolean {
  return pathname === "/peers" || pathname.startsWith("/peers/");
}

/**
 * The peer routes. The caller is the one the auth guard resolved (bearer token, mTLS subject or
 * proxy assertion), so a peer is owned by the same identity as everything else it does. With
 * `requireIdentity` an anonymous caller is refused before routing, so before any body is read.
 */
export function peerRoutes(hub: PeerHub, options: PeerRouteOptions) {
  const callerOf = (request: Request): Caller => edgeState(request).caller ?? LOCAL_CALLER;
  return new Elysia({ name: "spar.peers" })
    .onRequest(({ request }) => {
      if (!options.requireIdentity || !isPeerPath(requestUrl(request).pathname)) return;
      if (callerOf(request).source === "anonymous") throw refuseAnonymous();
    })
    .post(
      "/peers",
      ({ body, request }) => {
        const who = callerOf(request);
        const registered = hub.register(who, {
          name: body.name,
          endpoint: body.endpoint,
          ...(body.labels !== undefined ? { labels: body.labels } : {}),
          ...(body.heartbeat_ttl_sec !== undefined ? { heartbeatTtlSec: body.heartbeat_ttl_sec } : {}),
        });
        if (!registered.ok) throw registered.error;
        return json(201, peerWireView(registered.value, who));
      },
      {
        parse: "json",
        body: REGISTRATION_SCHEMA,
        response: responses({ 201: PeerView }, { body: true, extra: [409, 429] }),
        detail: { summary: "Register (or renew by name) a peer", tags: PEERS },
      },
    )
    .get(
      "/peers",
      ({ request }) => {
        const who = callerOf(request);
        const peers = hub
          .list(labelFilters(requestUrl(request)))
          .map((registration) => peerWireView(registration, who));
        return json(200, { peers });
      },
      {
        response: responses({ 200: v.object({ peers: v.array(PeerView) }) }),
        detail: { summary: "List peers, filtered by label=k=v", tags: PEERS },
      },
    )
    .post(
      "/peers/:id/heartbeat",
      ({ params, request }) => {
        const who = callerOf(request);
        const renewed = hub.heartbeat(who, params.id);
        if (!renewed.ok) throw renewed.error;
        return json(200, peerWireView(renewed.value, who));
      },
      {
        response: responses({ 200: PeerView }, { body: true, extra: [404] }),
        detail: { summary: "Extend a peer's lease", tags: PEERS },
      },
    )
    .delete(
      "/peers/:id",
      ({ params, request }) => {
        const removed = hub.deregister(callerOf(request), params.id);
        if (!removed.ok) throw removed.error;
        return new Response(null, { status: 204 });
      },
      {
        response: responses({ 204: NoContent }, { body: true }),
        detail: { summary: "Deregister a peer (owner or admin)", tags: PEERS },
      },
    );
}
