/**
 * The port `svc stop --pause-sessions` gate-pauses a marked session through (wired to the gate
 * pauses by `gatePauser`, src/svc/pause/session-pauses.ts). A session marked under
 * `--pause-sessions` also carries `pause_requested` in its marker, so boot auto-resume leaves it to
 * the operator; its token is not shown anywhere, so the operator pauses it again for a fresh token
 * (D264: a second pause replaces the token) or aborts it.
 */
export interface SessionPauser {
  /** Gate-pause the incident session (a resume token is minted); `reason` is the stop's classification. */
  pauseSession(sessionId: string, reason: string): Promise<void>;
}
