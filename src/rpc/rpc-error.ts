/**
 * RpcError: how the RPC layer fails a request or reports a fault of the connection, with a code
 * the owner maps to its own words (a turn worker "crashed", a tool host "speaks v2"). Owns only
 * the codes and the error class.
 */

export type RpcErrorCode =
  /** The peer's handler threw, or the peer has no handler for the method. */
  | "remote"
  /** The requester abandoned the request (`PendingRequest.abandon`); a later answer is ignored. */
  | "abandoned"
  /** The connection was closed (by its owner, or because the transport went away). */
  | "closed"
  /** The transport reported an uncaught error in the peer (a worker that threw). */
  | "crashed"
  /** The peer answered the handshake with another channel version. */
  | "version-mismatch";

export class RpcError extends Error {
  readonly code: RpcErrorCode;

  constructor(code: RpcErrorCode, message: string) {
    super(message);
    this.name = "RpcError";
    this.code = code;
  }
}

/** A version mismatch, with both numbers for the owner's message. */
export class RpcVersionError extends RpcError {
  readonly localVersion: number;
  readonly peerVersion: number;

  constructor(channel: string, localVersion: number, peerVersion: number) {
    super("version-mismatch", `${channel} speaks v${peerVersion}, this side v${localVersion}`);
    this.localVersion = localVersion;
    this.peerVersion = peerVersion;
  }
}

/** The text of anything thrown, for an `error` answer. */
export function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
