/**
 * The fold of a gate pause's rows (what the daemon reloads at boot and what `sessions list`
 * reads): the last pause not consumed is active; a later pause supersedes the earlier token; an
 * extension moves the expiry; a resume consumes; tokens are digests, never the token.
 */
import { expect, test } from "bun:test";
import type { EventHeader } from "../../../../src/core/events.ts";
import { extendRow, foldPauses, pauseRow, resumeRow } from "../../../../src/svc/pause/pause-ledger.ts";
import { isResumeToken, mintResumeToken, tokenDigest } from "../../../../src/svc/pause/resume-token.ts";

let n = 0;
const header = (): EventHeader => ({
  id: `e${++n}`,
  ts: "2026-01-01T00:00:00Z",
  invocationId: "svc-pause",
  author: "svc/pause",
});
const pause = (digest: string, mintedAt: string, extra: Record<string, unknown> = {}) =>
  pauseRow(header(), {
    tokenDigest: digest,
    reason: "operator",
    mintedAt,
    expiresAt: "2026-01-08T00:00:00.000Z",
    by: "svc-inject",
    interrupted: false,
    ...extra,
  });

test("a minted token has the reference's shape and its digest is sha256 hex, never the token", () => {
  const token = mintResumeToken();
  expect(isResumeToken(token)).toBe(true);
  expect(tokenDigest(token)).toMatch(/^sha256:[0-9a-f]{64}$/);
  expect(tokenDigest(token)).not.toContain(token.slice(4));
  expect(mintResumeToken()).not.toBe(token);
  expect(isResumeToken("mrt_short")).toBe(false);
});

test("the last pause not consumed is active; extend moves its expiry; a resume consumes it", () => {
  const paused = foldPauses([
    pause("sha256:a", "2026-01-01T00:00:00Z", { message: "m", resumeAt: "2026-01-02T00:00:00.000Z" }),
  ]);
  expect(paused.active).toMatchObject({ tokenDigest: "sha256:a", message: "m", resumeAt: "2026-01-02T00:00:00.000Z" });
  const extended = foldPauses([
    pause("sha256:a", "2026-01-01T00:00:00Z"),
    extendRow(header(), "sha256:a", "2026-01-05T00:00:00.000Z", "op"),
  ]);
  expect(extended.active?.expiresAt).toBe("2026-01-05T00:00:00.000Z");
  const resumed = foldPauses([
    pause("sha256:a", "2026-01-01T00:00:00Z"),
    resumeRow(header(), "sha256:a", "2026-01-01T01:00:00Z", "timer"),
  ]);
  expect(resumed.active).toBeUndefined();
  expect(resumed.tokens.get("sha256:a")).toMatchObject({ state: "consumed", consumedBy: "timer" });
});

test("a second pause supersedes the first's token; consuming the old digest changes nothing of the new pause", () => {
  const fold = foldPauses([
    pause("sha256:a", "2026-01-01T00:00:00Z"),
    pause("sha256:b", "2026-01-01T00:05:00Z", { reason: "ambiguity" }),
    resumeRow(header(), "sha256:zzz", "2026-01-01T01:00:00Z", "op"),
  ]);
  expect(fold.active).toMatchObject({ tokenDigest: "sha256:b", reason: "ambiguity" });
  expect(fold.tokens.get("sha256:a")).toMatchObject({ state: "superseded", supersededAt: "2026-01-01T00:05:00Z" });
});
