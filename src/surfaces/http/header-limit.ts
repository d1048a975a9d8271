/**
 * The size limit of a request's header section, answered as JSON. Bun refuses headers past its
 * own limit with a bodiless 431 before any handler runs; the daemon's launchers (scripts/spar,
 * the compiled binary) raise Bun's limit to BUN_HEADER_LIMIT so that this one, lower, decides and
 * the answer names the limit. Run from source without the runtime flag, Bun's 16 KiB limit
 * answers first, still a 431 but with an empty body.
 */
import { SparError } from "../../core/errors.ts";

/** The daemon's limit: name, value and separators of every header. */
export const HEADER_LIMIT = 16 * 1024;
/** Bun's own limit as the launchers set it (`--max-http-header-size`). */
export const BUN_HEADER_LIMIT = 64 * 1024;

export function checkHeaderSize(request: Request): void {
  let size = 0;
  request.headers.forEach((value, name) => {
    size += name.length + value.length + 4;
  });
  if (size > HEADER_LIMIT) {
    throw new SparError("headers_too_large", `request headers are larger than ${HEADER_LIMIT} bytes (${size})`);
  }
}
