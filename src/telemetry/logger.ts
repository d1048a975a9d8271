/**
 * Structured logger: one line per record on stderr, `ts level message key=value...`.
 * Levels: debug, info, warn, error. Every line passes through `redactUrl`: a URL with
 * credentials (`https://user:pw@host/`) is logged as `https://***@host/`, whichever module wrote
 * the message (D182), and so is a `password=` query parameter (D483).
 */
import { redactUrl } from "../net/redact-url.ts";
export type LogLevel = "debug" | "info" | "warn" | "error";

/** What redactUrl redacts besides userinfo: worth its parse only when the line has one. */
const PASSWORD_PARAM = /[?&](ssl)?password=/i;

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function createLogger(
  level: LogLevel = "info",
  write: (line: string) => void = (line) => process.stderr.write(line),
): Logger {
  const emit = (at: LogLevel, message: string) => {
    if (ORDER[at] < ORDER[level]) return;
    const text = message.includes("@") || PASSWORD_PARAM.test(message) ? redactUrl(message) : message;
    write(`${new Date().toISOString()} ${at.toUpperCase().padEnd(5)} ${text}\n`);
  };
  return {
    debug: (message) => emit("debug", message),
    info: (message) => emit("info", message),
    warn: (message) => emit("warn", message),
    error: (message) => emit("error", message),
  };
}
