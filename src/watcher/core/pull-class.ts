/**
 * Image-pull cause classification (docs/watcher-pipeline.md#image-pull-causes): terminal, retryable
 * or unknown, from the event message with the image reference blanked out first (so `denied` in an
 * image name does not count). A memo carries the cause of `Failed to pull image` over to the
 * causeless events that follow it: per object uid for 10 minutes, else a retryable class per
 * registry host for 2 minutes. Pure; the caller passes the clock.
 */

export type PullClass = "terminal" | "retryable" | "unknown";

const TERMINAL = [
  "manifest unknown",
  "not found",
  "notfound",
  "repository does not exist",
  "denied",
  "unauthorized",
  "authentication required",
  "401 unauthorized",
  "403 forbidden",
  "invalid reference format",
  "invalidimagename",
  "errimageneverpull",
  "no space left on device",
];

const RETRYABLE = [
  "toomanyrequests",
  "too many requests",
  "quota exceeded",
  "500 internal server error",
  "502 bad gateway",
  "503 service unavailable",
  "504 gateway timeout",
  "i/o timeout",
  "tls handshake timeout",
  "connection reset by peer",
  "connection refused",
  "unexpected eof",
  "context deadline exceeded",
  "temporary failure in name resolution",
];

/** The quoted image reference of a message (`image "repo/x:tag"`), if any. */
export function imageReference(message: string): string | undefined {
  return /image "([^"]+)"/.exec(message)?.[1];
}

/** Registry host of an image: the first path segment when that looks like a host, else docker.io. */
export function registryHost(image: string): string {
  const slash = image.indexOf("/");
  if (slash === -1) return "docker.io";
  const first = image.slice(0, slash);
  return first.includes(".") || first.includes(":") || first === "localhost" ? first : "docker.io";
}

function imageParts(image: string): string[] {
  const parts = new Set<string>([image]);
  const at = image.indexOf("@");
  const withoutDigest = at === -1 ? image : image.slice(0, at);
  if (at !== -1) parts.add(image.slice(at + 1));
  parts.add(withoutDigest);
  const lastSlash = withoutDigest.lastIndexOf("/");
  const colon = withoutDigest.lastIndexOf(":");
  const withoutTag = colon > lastSlash ? withoutDigest.slice(0, colon) : withoutDigest;
  if (colon > lastSlash) parts.add(withoutDigest.slice(colon + 1));
  parts.add(withoutTag);
  const slash = withoutTag.indexOf("/");
  if (slash !== -1) parts.add(withoutTag.slice(slash + 1));
  const encoded = [...parts].map((part) => part.replaceAll("/", "%2f").replaceAll(":", "%3a").replaceAll("@", "%40"));
  return [...parts, ...encoded]
    .map((part) => part.toLowerCase())
    .filter((part) => part.length >= 3)
    .sort((a, b) => b.length - a.length);
}

/** Classify one message on its own; `undefined` when it names no cause at all. */
export function classifyPullCause(message: string): PullClass | undefined {
  let text = message.toLowerCase();
  const image = imageReference(message);
  if (image) for (const part of imageParts(image)) text = text.split(part).join(" ");
  if (TERMINAL.some((marker) => text.includes(marker))) return "terminal";
  if (RETRYABLE.some((marker) => text.includes(marker))) return "retryable";
  return /failed to pull image/.test(text) ? "unknown" : undefined;
}

const UID_TTL_MS = 10 * 60_000;
const HOST_TTL_MS = 2 * 60_000;
const MAX_ENTRIES = 4096;

/** Remembers causes so the causeless follow-up events of a pull failure inherit them. */
export class PullClassMemo {
  private readonly byUid = new Map<string, { pullClass: PullClass; at: number }>();
  private readonly byHost = new Map<string, { pullClass: PullClass; at: number }>();

  /** The class of this message: its own cause, else the memo's; records what it learns. */
  classify(uid: string, message: string, now: number): PullClass {
    const own = classifyPullCause(message);
    const image = imageReference(message);
    const host = image ? registryHost(image) : undefined;
    if (own) {
      this.remember(this.byUid, uid, own, now);
      if (own === "retryable" && host) this.remember(this.byHost, host, own, now);
      return own;
    }
    const byUid = this.byUid.get(uid);
    if (byUid && now - byUid.at <= UID_TTL_MS) return byUid.pullClass;
    const byHost = host ? this.byHost.get(host) : undefined;
    if (byHost && now - byHost.at <= HOST_TTL_MS) return byHost.pullClass;
    return "unknown";
  }

  private remember(
    map: Map<string, { pullClass: PullClass; at: number }>,
    key: string,
    pullClass: PullClass,
    now: number,
  ): void {
    map.delete(key);
    map.set(key, { pullClass, at: now });
    if (map.size > MAX_ENTRIES) {
      const oldest = map.keys().next().value;
      if (oldest !== undefined) map.delete(oldest);
    }
  }
}
