/**
 * Request-level fault injection: fail the next N requests (optionally only those matching a
 * method and a path pattern) with a given status code, answered as a Status body. Watch-level
 * faults (drop streams, ERROR mid-stream, compaction) are in the watch hub and the store; the
 * server's `faults` object gathers all of them.
 */
import { type KubeStatus, reasonForCode, statusObject } from "./status.ts";

export interface FailRule {
  /** How many matching requests fail. Default 1. */
  count?: number;
  /** HTTP status code, e.g. 500, 503, 429, 403. */
  code: number;
  message?: string;
  /** Only requests with this method (e.g. GET). */
  method?: string;
  /** Only requests whose path (with query) contains this string or matches this pattern. */
  path?: string | RegExp;
  /** Only list requests (GET without watch) or only watch requests. */
  verb?: "list" | "watch";
  /** Sent as Retry-After for 429 and 503. */
  retryAfterSeconds?: number;
}

interface ArmedRule extends FailRule {
  remaining: number;
}

function isWatch(url: URL): boolean {
  const watch = url.searchParams.get("watch");
  return watch === "true" || watch === "1" || url.pathname.includes("/watch/");
}

export class RequestFaults {
  private rules: ArmedRule[] = [];

  failNext(rule: FailRule): void {
    this.rules.push({ ...rule, remaining: rule.count ?? 1 });
  }

  /** Rules still armed (with their remaining counts). */
  pending(): FailRule[] {
    return this.rules.map(({ remaining, ...rule }) => ({ ...rule, count: remaining }));
  }

  clear(): void {
    this.rules = [];
  }

  /** The Status to answer `request` with, consuming one use of the first matching rule. */
  take(method: string, url: URL): KubeStatus | undefined {
    const target = `${url.pathname}${url.search}`;
    const rule = this.rules.find((candidate) => {
      if (candidate.method && candidate.method.toUpperCase() !== method) return false;
      if (
        candidate.path !== undefined &&
        !(typeof candidate.path === "string" ? target.includes(candidate.path) : candidate.path.test(target))
      )
        return false;
      if (candidate.verb === "watch" && !isWatch(url)) return false;
      if (candidate.verb === "list" && (method !== "GET" || isWatch(url))) return false;
      return true;
    });
    if (!rule) return undefined;
    rule.remaining--;
    if (rule.remaining <= 0) this.rules = this.rules.filter((candidate) => candidate !== rule);
    const message = rule.message ?? `injected failure (${rule.code})`;
    return statusObject(
      rule.code,
      reasonForCode(rule.code),
      message,
      rule.retryAfterSeconds !== undefined ? { retryAfterSeconds: rule.retryAfterSeconds } : undefined,
    );
  }
}
