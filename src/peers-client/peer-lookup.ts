/**
 * Where `call_peer` finds a peer by name: the daemon's own hub in process (`--attach-peer-hub`)
 * or a hub the operator names (`tools.call_peer.hub`), asked with `GET {hub}/peers` (an operator
 * URL: a plain fetch in a client span carrying the trace context, not the outbound guard, as for
 * every URL the operator configures). Only registrations a model may be shown count: a plain name
 * (letters, digits, `_.-`, at most 64), an http(s) endpoint, and no `protocol` label other than
 * `attach` (an `a2a` peer is `call_a2a`'s, D364).
 */
import { tracedFetch } from "../telemetry/client-spans.ts";
import { redactUrl } from "../net/redact-url.ts";
import { peerUrl } from "./peer-attach-client.ts";
import { PEER_NAME } from "./peer-client-flags.ts";

export interface PeerListing {
  name: string;
  endpoint: string;
  labels: Readonly<Record<string, string>>;
}

export interface PeerLookup {
  /** The callable peers now, or a sentence saying why the hub could not be read. */
  list(signal: AbortSignal, bearer: string | undefined): Promise<PeerListing[] | string>;
}

const MAX_HUB_ANSWER = 4 * 1024 * 1024;

/** Whether a registration is an attach peer the model may name. */
export function callablePeer(peer: PeerListing): boolean {
  const protocol = peer.labels.protocol;
  return (
    PEER_NAME.test(peer.name) &&
    URL.canParse(peer.endpoint) &&
    /^https?:$/.test(new URL(peer.endpoint).protocol) &&
    (protocol === undefined || protocol === "attach")
  );
}

/** The daemon's own hub. */
export function localLookup(hub: { list(): readonly PeerListing[] }): PeerLookup {
  return { list: async () => hub.list().filter(callablePeer) };
}

function listings(body: unknown): PeerListing[] | undefined {
  const peers = (body as { peers?: unknown } | null)?.peers;
  if (!Array.isArray(peers)) return undefined;
  return peers.flatMap((peer: unknown) => {
    const row = peer as { name?: unknown; endpoint?: unknown; labels?: unknown } | null;
    if (typeof row?.name !== "string" || typeof row.endpoint !== "string") return [];
    const labels: Record<string, string> = {};
    if (typeof row.labels === "object" && row.labels !== null)
      for (const [key, value] of Object.entries(row.labels)) if (typeof value === "string") labels[key] = value;
    return [{ name: row.name, endpoint: row.endpoint, labels }];
  });
}

/** A hub at `base` (its attach base URL). */
export function remoteLookup(base: string): PeerLookup {
  return {
    async list(signal, bearer) {
      const url = peerUrl(base, "/peers");
      let response: Response;
      try {
        response = await tracedFetch(url, {
          signal,
          headers: {
            accept: "application/json",
            ...(bearer === undefined ? {} : { authorization: `Bearer ${bearer}` }),
          },
        });
      } catch (error) {
        if (signal.aborted) throw signal.reason;
        return `the peer hub ${redactUrl(url)} is unreachable: ${error instanceof Error ? error.message : String(error)}`;
      }
      const text = await response.text();
      if (!response.ok) return `the peer hub answered HTTP ${response.status} to GET ${redactUrl(url)}`;
      if (text.length > MAX_HUB_ANSWER) return `the peer hub's list is larger than ${MAX_HUB_ANSWER} bytes`;
      let parsed: PeerListing[] | undefined;
      try {
        parsed = listings(JSON.parse(text));
      } catch {
        parsed = undefined;
      }
      return parsed === undefined ? "the peer hub's answer is not {peers: [...]}" : parsed.filter(callablePeer);
    },
  };
}
