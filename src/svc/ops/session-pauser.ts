/**
 * The port `svc stop --pause-sessions` gate-pauses a marked session through. Gate pauses and
 * resume tokens are built beside the drain (issue 16, item 1); until they are wired in here the
 * drain uses NOT_WIRED_PAUSER, which pauses nothing and says so in the daemon's log. Either way a
 * session marked under `--pause-sessions` carries `pause_requested` in its marker, so boot
 * auto-resume leaves it to the operator.
 */
export interface SessionPauser {
  /** Gate-pause the incident session (a resume token is minted); `reason` is the stop's classification. */
  pauseSession(sessionId: string, reason: string): Promise<void>;
  /** False for the stand-in: the drain logs that nothing was paused. */
  readonly wired: boolean;
}

export const NOT_WIRED_PAUSER: SessionPauser = {
  wired: false,
  pauseSession: () => Promise.resolve(),
};
