/**
 * The agent card: GET (and HEAD) `/.well-known/agent-card.json`, an A2A v0.3.0 AgentCard built
 * per request from the merged AgentCardSettings (agent-card-config.ts), the loaded skill bundles
 * and the listener's auth config. Served ahead of authentication on the exact path only.
 *
 * - Discovery only: the card's `url` is where the daemon is reached, but the daemon speaks no
 *   A2A JSON-RPC there, so `capabilities` advertises nothing and `preferredTransport` is omitted.
 * - `url` is `external_url` when set, else derived per request (public-origin.ts, D333): scheme
 *   from a trusted proxy's X-Forwarded-Proto (http or https) else the request's; host from a
 *   trusted proxy's X-Forwarded-Host, else a Host the listener vouches for (loopback, its allowed
 *   hosts, its own address), else the listener's own address. Responses carry `Vary` on those
 *   headers and `Cache-Control: no-cache`.
 * - Skills: one entry per loaded bundle (tags `["skill"]`, re-read on every fetch) merged with
 *   the card file's `extra_skills`; a curated skill replaces the bundle skill with its id in place.
 * - Without a description (from any layer) the path answers a card-shaped 404:
 *   `{"error": "no agent card is configured: ...", "card": null}`.
 * - Other methods get 405 with `Allow: GET, HEAD` from RouteTable.unmatched, which serves public
 *   paths without authentication and skips the CSRF guard. No POST/PUT/PATCH/DELETE handlers are
 *   registered on purpose: a registered write route runs the CSRF guard first, so a plain POST
 *   would get 415 instead of 405, and the extra methods would show up in `Allow`.
 * Must not: authenticate, read files, or serve anything but the card.
 */
import { JSON_HEADERS } from "../http/responses.ts";
import { LOOPBACK_ONLY_ORIGIN, type PublicOrigin, publicBaseUrl } from "../http/public-origin.ts";
import type { AgentCardSettings, CuratedSkill } from "./agent-card-config.ts";
import { Elysia } from "elysia";
import * as v from "valibot";
import { type TrustedProxies, isTrustedProxy } from "../http/trusted-proxies.ts";
import {
  A2A_PROTOCOL_VERSION,
  type AgentCard,
  type AgentSkill,
  type SecurityScheme,
} from "../../protocols/a2a/a2a-wire.ts";

export const AGENT_CARD_PATH = "/.well-known/agent-card.json";

/** A loaded skill bundle as the card lists it (name and description from its front matter). */
export interface BundleSkill {
  id: string;
  name: string;
  description: string;
}

export interface AgentCardOptions {
  /** The listener requires the shared bearer token (`--attach-token`). */
  bearer: boolean;
  /** The listener requires client certificates (`attach.client_ca`). */
  mtls: boolean;
  /** The loaded skill bundles, called on every card fetch; internal tools are never listed. */
  skills: () => readonly BundleSkill[];
  /** Which Host names the card may repeat, and the listener's own address (D333). Default: loopback only. */
  origin?: PublicOrigin;
}

const TEXT_MODES = ["text/plain"];

/** Bundle skills (tags `["skill"]`) merged with curated ones; curated wins on id collision. */
export function mergeSkills(bundles: readonly BundleSkill[], curated: readonly CuratedSkill[]): AgentSkill[] {
  const byId = new Map<string, AgentSkill>();
  for (const bundle of bundles)
    byId.set(bundle.id, { id: bundle.id, name: bundle.name, description: bundle.description, tags: ["skill"] });
  for (const skill of curated)
    byId.set(skill.id, {
      ...skill,
      tags: [...skill.tags],
      ...(skill.examples ? { examples: [...skill.examples] } : {}),
    });
  return [...byId.values()];
}

/**
 * docs/configuration.md#agent-card-file: no gate omits both; otherwise each scheme declared and ONE
 * entry requiring all (AND).
 */
function securityFields(
  options: Pick<AgentCardOptions, "bearer" | "mtls">,
): Pick<AgentCard, "securitySchemes" | "security"> {
  const schemes: Record<string, SecurityScheme> = {};
  const requirement: Record<string, string[]> = {};
  if (options.bearer) {
    schemes.bearer = { type: "http", scheme: "Bearer" };
    requirement.bearer = [];
  }
  if (options.mtls) {
    schemes.mtls = { type: "mutualTLS" };
    requirement.mtls = [];
  }
  if (Object.keys(schemes).length === 0) return {};
  return { securitySchemes: schemes, security: [requirement] };
}

/** The A2A v0.3.0 card for one request; undefined when no layer set a description. */
export function buildAgentCard(
  settings: AgentCardSettings,
  request: Request,
  options: AgentCardOptions,
  viaTrustedProxy = false,
): AgentCard | undefined {
  if (settings.description === undefined) return undefined;
  return {
    name: settings.name,
    description: settings.description,
    url: settings.externalUrl ?? publicBaseUrl(request, options.origin ?? LOOPBACK_ONLY_ORIGIN, viaTrustedProxy),
    version: settings.version,
    protocolVersion: A2A_PROTOCOL_VERSION,
    ...(settings.provider
      ? { provider: { organization: settings.provider.organization, url: settings.provider.url } }
      : {}),
    ...(settings.documentationUrl ? { documentationUrl: settings.documentationUrl } : {}),
    capabilities: { streaming: false, pushNotifications: false, stateTransitionHistory: false },
    defaultInputModes: [...TEXT_MODES],
    defaultOutputModes: [...TEXT_MODES],
    skills: mergeSkills(options.skills(), settings.extraSkills),
    ...securityFields(options),
  };
}

const NOT_CONFIGURED = {
  error:
    'no agent card is configured: set a description (config agent.description, "description" in .agents/agent-card.json, or --agent-card-description)',
  card: null,
} as const;

const CARD_HEADERS = { "cache-control": "no-cache", vary: "Host, X-Forwarded-Host, X-Forwarded-Proto" } as const;

/**
 * GET and HEAD on the exact card path, public. `card` is called on every fetch, so a later layer
 * (the embedding API) may set or change the settings after registration; undefined or no
 * description answers the card-shaped 404.
 */
/** The card as documented: its fields are the A2A v0.3.0 AgentCard's. */
const CardSchema = v.looseObject({
  name: v.string(),
  description: v.string(),
  url: v.string(),
  version: v.string(),
  protocolVersion: v.string(),
});

export function agentCardRoutes(
  card: () => AgentCardSettings | undefined,
  options: AgentCardOptions,
  trustedProxies: TrustedProxies | undefined,
) {
  const answer = (request: Request, server: PeerLookup | null): { status: number; body: string } => {
    const settings = card();
    const viaTrustedProxy =
      trustedProxies !== undefined && isTrustedProxy(server?.requestIP(request)?.address, trustedProxies);
    const built = settings ? buildAgentCard(settings, request, options, viaTrustedProxy) : undefined;
    return built ? { status: 200, body: JSON.stringify(built) } : { status: 404, body: JSON.stringify(NOT_CONFIGURED) };
  };
  return new Elysia({ name: "spar.attach.agent-card" })
    .get(
      AGENT_CARD_PATH,
      ({ request, server }) => {
        const { status, body } = answer(request, server);
        return new Response(body, { status, headers: { ...JSON_HEADERS, ...CARD_HEADERS } });
      },
      {
        response: { 200: CardSchema, 404: v.looseObject({ error: v.string(), card: v.null() }) },
        detail: { summary: "The A2A v0.3.0 agent card (no auth)", tags: ["daemon"] },
      },
    )
    .head(
      AGENT_CARD_PATH,
      ({ request, server }) => {
        const { status, body } = answer(request, server);
        const length = String(new TextEncoder().encode(body).byteLength);
        return new Response(null, { status, headers: { ...JSON_HEADERS, ...CARD_HEADERS, "content-length": length } });
      },
      {
        response: { 200: v.undefined(), 404: v.undefined() },
        detail: { summary: "The agent card's headers (no auth)", tags: ["daemon"] },
      },
    );
}

interface PeerLookup {
  requestIP(request: Request): { address: string } | null;
}
