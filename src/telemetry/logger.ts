/**
 * Structured logger: one line per record on stderr, `ts level message key=value...`.
 * Levels: debug, info, warn, error.
 */
export type LogLevel = "debug" | "info" | "warn" | "error";

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export function createLogger(level: LogLevel = "info", write: (line: string) => void = (line) => process.stderr.write(line)): Logger {
  const emit = (at: LogLevel, message: string) => {
    if (ORDER[at] < ORDER[level]) return;
    write(`${new Date().toISOString()} ${at.toUpperCase().padEnd(5)} ${message}\n`);
  };
  return {
    debug: (message) => emit("debug", message),
    info: (message) => emit("info", message),
    warn: (message) => emit("warn", message),
    error: (message) => emit("error", message),
  };
}
