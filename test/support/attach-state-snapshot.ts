/**
 * What a refused request to the attach API could change, read cheaply from an in-process daemon
 * (no request for the session state): every session's row and ACL; for the watched sessions their
 * event-log head, permission mode, patterns and approvals, guardrail state, pause state and inbox
 * depth; the price book as GET /pricing shows it; and the peer registry. Peers are compared apart:
 * a lease may lapse between two snapshots, so a refusal may only lose expired registrations.
 */
import type { SessionKey } from "../../src/core/session-key.ts";
import type { InProcessAgent } from "./in-process-agent.ts";
import { TRANSPORT_TOKEN } from "./tenant-daemon.ts";

export interface StateSnapshot {
  /** Everything but the peers, as one comparable string. */
  state: string;
  /** Registration id -> its admin view, with `expires_at`. */
  peers: Map<string, string>;
  /** Some watched session has a turn running, a compaction, or work it will start. */
  busy: boolean;
}

export interface StateReader {
  read(): Promise<StateSnapshot>;
  /** What differs from `before` in a way no refusal may cause (empty: nothing). */
  changes(before: StateSnapshot, after: StateSnapshot): string[];
}

const adminHeaders = { "x-attach-token": TRANSPORT_TOKEN, authorization: "Bearer tok-root" };

export function stateReader(agent: InProcessAgent, watched: readonly SessionKey[], pricingPath: string): StateReader {
  const host = agent.agent.host;
  const getJson = async (path: string): Promise<unknown> => {
    const response = await agent.handle(new Request(`${agent.baseUrl}${path}`, { headers: adminHeaders }));
    return response.status === 200 ? await response.json() : { status: response.status };
  };
  return {
    async read() {
      const sessions = (await host.list()).map(({ record }) => [
        record.app,
        record.id,
        record.owner,
        record.viewers,
        record.contributors,
        record.title ?? null,
      ]);
      sessions.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b)));
      let busy = false;
      const details = [];
      for (const key of watched) {
        const actor = await host.actor(key);
        const status = actor.status();
        busy ||= actor.turnInFlight || status.compacting === true;
        details.push({
          key: `${key.app}/${key.id}`,
          head: await host.store.head(key),
          perms: actor.tools.info(),
          guards: actor.guards.info(),
          state: status.state,
          pauseReason: status.pause_reason ?? null,
          pending: actor.pendingCount,
        });
      }
      const pricing = await getJson(pricingPath);
      const listed = (await getJson("/peers")) as { peers?: Array<{ registration_id?: string }> };
      const peers = new Map<string, string>();
      for (const peer of listed.peers ?? []) peers.set(peer.registration_id ?? "", JSON.stringify(peer));
      return { state: JSON.stringify({ sessions, details, pricing }), peers, busy };
    },
    changes(before, after) {
      const found: string[] = [];
      if (before.state !== after.state) found.push(`state: ${firstDifference(before.state, after.state)}`);
      const now = Date.now();
      for (const [id, view] of after.peers) {
        if (before.peers.get(id) !== view) found.push(`peer ${id}: ${before.peers.get(id) ?? "(absent)"} -> ${view}`);
      }
      for (const [id, view] of before.peers) {
        const expires = Date.parse((JSON.parse(view) as { expires_at: string }).expires_at);
        if (!after.peers.has(id) && expires > now) found.push(`peer ${id} removed before its lease ended`);
      }
      return found;
    },
  };
}

/** The two strings around their first differing character, for a readable failure. */
function firstDifference(before: string, after: string): string {
  let at = 0;
  while (at < before.length && before[at] === after[at]) at++;
  const from = Math.max(0, at - 120);
  return `...${before.slice(from, at + 120)}... -> ...${after.slice(from, at + 120)}...`;
}
