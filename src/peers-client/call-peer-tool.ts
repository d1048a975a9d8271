/**
 * The `call_peer` tool (D364): the model hands a prompt to another spar agent it names (a peer
 * registered with the hub, never a URL) and reads the peer's answer. `PeerTools` puts it in front
 * of another runner and catalog (as `call_a2a` is): always offered while configured, listed with
 * `source: "other"`, classed `mutating` for the permission gate (the peer may act: ask mode asks).
 * It runs on the main thread: async fetches, no child process.
 *
 * A call: one deadline (`timeout_seconds`) and the turn's cancel bound the hub lookup and every
 * step against the peer; the bearer is read from the variable `token_env` names at each call (an
 * unset or empty variable is an error naming it, the call is not made: D366); an unknown peer is
 * an error naming the known ones. The answer is `{peer, session_id, text, truncated}`, the text
 * capped at `max_response_bytes`. The bearer's value is replaced by `[redacted]` anywhere in a
 * result, so a peer echoing it cannot hand it to the model.
 */
import * as v from "valibot";
import type { ToolSpec } from "../core/model.ts";
import type { ToolCatalog, ToolRunResult, ToolRunner } from "../core/tool-catalog.ts";
import { toolInputSchema } from "../tools/tool-input-schema.ts";
import { ToolsInFront } from "../tools/tools-in-front.ts";
import type { PeerAttachClient, PeerCallOutcome } from "./peer-attach-client.ts";
import type { PeerLookup } from "./peer-lookup.ts";

export const CALL_PEER = "call_peer";

export interface CallPeerOptions {
  /** The variable holding the bearer for the hub and the peers; undefined: no credentials sent. */
  tokenEnv: string | undefined;
  timeoutMs: number;
  maxResponseBytes: number;
}

const CallInput = v.object({
  peer: v.pipe(
    v.string("peer must be a string"),
    v.minLength(1, "peer must not be empty"),
    v.maxLength(64, "peer must be at most 64 characters"),
    v.description("The peer agent's name as registered with the peer hub."),
  ),
  prompt: v.pipe(
    v.string("prompt must be a string"),
    v.minLength(1, "prompt must not be empty"),
    v.maxLength(6 * 1024, "prompt must be at most 6144 characters (the peer's inject body is capped at 8 KiB)"),
    v.description("The task for the peer, with all the context it needs: it starts a fresh session."),
  ),
});

const INPUT_SCHEMA = toolInputSchema(CallInput);

export const CALL_PEER_SPEC: ToolSpec = {
  name: CALL_PEER,
  description:
    "Delegate a task to another agent (a peer registered with the peer hub), by name. The peer runs the prompt in a fresh session of its own and this returns its answer text and that session's id. An unknown name is answered with the names known.",
  inputSchema: INPUT_SCHEMA,
};

const failure = (output: Record<string, unknown>): ToolRunResult => ({ output, isError: true });

/** Every string in `value` with `secret` replaced by `[redacted]`. */
export function scrubSecret(value: Record<string, unknown>, secret: string | undefined): Record<string, unknown> {
  if (secret === undefined || secret === "") return value;
  return JSON.parse(
    JSON.stringify(value, (_key, item) => (typeof item === "string" ? item.split(secret).join("[redacted]") : item)),
  );
}

/** The model's view of an outcome. */
export function peerResult(peer: string, outcome: PeerCallOutcome): ToolRunResult {
  if (outcome.ok)
    return {
      output: { peer, session_id: outcome.sessionId, text: outcome.text, truncated: outcome.truncated },
      isError: false,
    };
  return failure({
    peer,
    error: outcome.error,
    ...(outcome.sessionId === undefined ? {} : { session_id: outcome.sessionId }),
    ...(outcome.status === undefined ? {} : { status: outcome.status }),
    ...(outcome.text === undefined ? {} : { text: outcome.text, truncated: outcome.truncated ?? false }),
  });
}

/** Runs `call_peer` calls. */
export class PeerCaller {
  readonly #lookup: PeerLookup;
  readonly #client: PeerAttachClient;
  readonly #options: CallPeerOptions;
  readonly #env: Readonly<Record<string, string | undefined>>;

  constructor(
    lookup: PeerLookup,
    client: PeerAttachClient,
    options: CallPeerOptions,
    env: Readonly<Record<string, string | undefined>> = process.env,
  ) {
    this.#lookup = lookup;
    this.#client = client;
    this.#options = options;
    this.#env = env;
  }

  /** The bearer now; a string error when its variable is named but unset. */
  #bearer(): { bearer: string | undefined } | { error: string } {
    const name = this.#options.tokenEnv;
    if (name === undefined) return { bearer: undefined };
    const value = this.#env[name];
    if (value === undefined || value.trim() === "")
      return { error: `the variable ${name} (tools.call_peer.token_env) is not set: the call was not made` };
    return { bearer: value };
  }

  async run(args: unknown, cancel: AbortSignal): Promise<ToolRunResult> {
    const parsed = v.safeParse(CallInput, args);
    if (!parsed.success) {
      const issue = parsed.issues[0];
      return failure({
        error: `invalid input for ${CALL_PEER}: ${issue ? `${v.getDotPath(issue) ?? "input"}: ${issue.message}` : "invalid"}`,
      });
    }
    const { peer, prompt } = parsed.output;
    const credentials = this.#bearer();
    if ("error" in credentials) return failure({ peer, error: credentials.error });
    const { bearer } = credentials;
    const seconds = this.#options.timeoutMs / 1000;
    const signal = AbortSignal.any([cancel, AbortSignal.timeout(this.#options.timeoutMs)]);
    const progress: { sessionId?: string; path?: string } = {};
    try {
      const peers = await this.#lookup.list(signal, bearer);
      if (typeof peers === "string") return failure({ peer, error: scrubSecret({ e: peers }, bearer).e });
      const found = peers.find((entry) => entry.name === peer);
      if (found === undefined)
        return failure({
          peer,
          error: `no peer ${JSON.stringify(peer)} is registered with the hub (known: ${peers.map((entry) => entry.name).join(", ") || "none"})`,
        });
      const outcome = await this.#client.call({
        endpoint: found.endpoint,
        bearer,
        prompt,
        maxResponseBytes: this.#options.maxResponseBytes,
        signal,
        progress,
      });
      const result = peerResult(peer, outcome);
      return { ...result, output: scrubSecret(result.output, bearer) };
    } catch (thrown) {
      if (!signal.aborted) throw thrown;
      const error = cancel.aborted
        ? "stopped: the turn was cancelled"
        : `no answer within ${seconds} s (timeout_seconds)`;
      return failure({ peer, error, ...(progress.sessionId === undefined ? {} : { session_id: progress.sessionId }) });
    }
  }
}

/** Another runner and catalog with `call_peer` in front. */
export class PeerTools extends ToolsInFront {
  constructor(inner: ToolRunner & ToolCatalog, caller: PeerCaller) {
    super(inner, {
      specs: () => [CALL_PEER_SPEC],
      toolClass: "mutating",
      source: "other",
      run: (call, signal) => caller.run(call.args, signal),
    });
  }
}
