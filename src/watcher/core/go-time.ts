/**
 * Go's text forms used on the wire: RFC 3339 timestamps with trailing zero fractions trimmed
 * (`2026-07-24T10:00:00Z`, `...:00.5Z`) and `Duration.String()` (`2m30s`, `5m0s`, `1.5s`, `500ms`,
 * `0s`). Pure.
 */

export function rfc3339(epochMs: number): string {
  if (!Number.isFinite(epochMs)) return "0001-01-01T00:00:00Z";
  return new Date(epochMs)
    .toISOString()
    .replace(/\.(\d*?)0*Z$/, (_, digits: string) => (digits === "" ? "Z" : `.${digits}Z`));
}

function trimFraction(value: number): string {
  return String(Number(value.toFixed(9)));
}

export function goDuration(ms: number): string {
  if (ms === 0) return "0s";
  const sign = ms < 0 ? "-" : "";
  const abs = Math.abs(ms);
  if (abs < 1) return `${sign}${trimFraction(abs * 1000)}µs`;
  if (abs < 1000) return `${sign}${trimFraction(abs)}ms`;
  const hours = Math.floor(abs / 3_600_000);
  const minutes = Math.floor((abs % 3_600_000) / 60_000);
  const seconds = trimFraction((abs % 60_000) / 1000);
  if (hours > 0) return `${sign}${hours}h${minutes}m${seconds}s`;
  if (minutes > 0) return `${sign}${minutes}m${seconds}s`;
  return `${sign}${seconds}s`;
}
