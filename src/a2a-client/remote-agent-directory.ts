/**
 * The remote A2A agents a daemon may call, by name (the model names an agent, never a URL):
 * static ones the operator declared (`a2a/*.yaml`, D225's format: svc's config root in name mode,
 * `<cwd>/.agents/a2a/` for `spar agent`) and, for `spar agent` with `--attach-peer-hub`, the
 * peers registered with the label `protocol=a2a` (their endpoint is the agent's base URL or its
 * card URL). A static agent wins a name both have. Owns no HTTP: a2a-client.ts calls them.
 */

export interface RemoteAgentEntry {
  name: string;
  /** The JSON-RPC endpoint; when absent, read from the card. */
  endpoint?: string;
  /** The agent card's full URL. */
  cardUrl?: string;
  /** What the model reads about it (skills, or where it came from). */
  description: string;
  /** `bearer` is the only scheme; absent: no credentials sent. */
  auth?: { type: string; tokenEnv?: string };
  /** The per-call deadline. */
  timeoutMs: number;
  /** Where it was declared, for messages (`a2a/x.yaml`, `peer hub`). */
  source: string;
  /**
   * The operator declared it (a file): the outbound guard also lets its endpoint's and card's own
   * hosts through (never a link-local or metadata address). A peer hub entry, supplied by a remote
   * caller, gets only the operator's `outbound.allow`.
   */
  declared?: boolean;
}

export interface RemoteAgentDirectory {
  /** Every callable agent now (a peer hub's change between two turns shows in the next one). */
  entries(): RemoteAgentEntry[];
}

/** The default per-call deadline when a declaration gives none. */
export const DEFAULT_REMOTE_TIMEOUT_MS = 60_000;

/** The card URL of an A2A base URL: `<base>/.well-known/agent-card.json` (a path ending in `.json` is the card itself). */
export function cardUrlOf(endpoint: string): string {
  const url = new URL(endpoint);
  if (url.pathname.endsWith(".json")) return url.href;
  // The trailing slash matters: without it the relative path replaces the last segment.
  if (!url.pathname.endsWith("/")) url.pathname = `${url.pathname}/`;
  return new URL(".well-known/agent-card.json", url).href;
}

/** Declared agents, then the dynamic ones whose names are not taken. */
export function combinedDirectory(...sources: readonly RemoteAgentDirectory[]): RemoteAgentDirectory {
  return {
    entries() {
      const seen = new Set<string>();
      const all: RemoteAgentEntry[] = [];
      for (const source of sources)
        for (const entry of source.entries()) {
          if (seen.has(entry.name)) continue;
          seen.add(entry.name);
          all.push(entry);
        }
      return all;
    },
  };
}

/** A fixed list. */
export function staticDirectory(entries: readonly RemoteAgentEntry[]): RemoteAgentDirectory {
  return { entries: () => [...entries] };
}

/** A peer registration as the hub lists it (only what is needed here). */
export interface PeerListing {
  name: string;
  endpoint: string;
  labels: Readonly<Record<string, string>>;
}

/** A name the model may be shown: what a remote registrant writes goes into the tool's description. */
const PEER_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/;

/**
 * The peers labelled `protocol=a2a`, called without credentials (a registration carries none;
 * declare the agent in a2a/*.yaml for a bearer). Only the name reaches the model's tool
 * description, and only a plain one (letters, digits, `_.-`, at most 64): a registrant's free text
 * (labels) is never shown to the model.
 */
export function peerDirectory(
  list: () => readonly PeerListing[],
  timeoutMs = DEFAULT_REMOTE_TIMEOUT_MS,
): RemoteAgentDirectory {
  return {
    entries: () =>
      list()
        .filter((peer) => peer.labels.protocol === "a2a" && PEER_NAME.test(peer.name) && URL.canParse(peer.endpoint))
        .map((peer) => ({
          name: peer.name,
          cardUrl: cardUrlOf(peer.endpoint),
          description: "an A2A agent registered with the peer hub",
          timeoutMs,
          source: "peer hub",
        })),
  };
}
