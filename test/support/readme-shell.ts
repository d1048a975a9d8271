/**
 * Reading the README's tours as commands: a section's `sh` blocks as command lines (continuations
 * joined, comments dropped), shell words (quotes honoured, `$VAR` expanded from a given map), a
 * curl line as a request, and a spawned process whose output is collected while it runs. The
 * README tour test (test/docs/readme-tour.test.ts) replays the pages with these, so a command the
 * README prints is the command that runs.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { REPO_ROOT, waitFor } from "./daemon.ts";

export const README = readFileSync(join(REPO_ROOT, "README.md"), "utf8");

/** The README's `## title` section, up to the next `## ` heading. */
export function readmeSection(title: string): string {
  const start = README.indexOf(`\n## ${title}\n`);
  if (start === -1) throw new Error(`README has no section "${title}"`);
  const end = README.indexOf("\n## ", start + 1);
  return README.slice(start, end === -1 ? undefined : end);
}

/** The command lines of the `sh` blocks of `markdown`, in order: continuations joined, comments out. */
export function shellLines(markdown: string): string[] {
  const blocks = [...markdown.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((match) => match[1] ?? "");
  return blocks
    .flatMap((block) => block.replace(/\\\n\s*/g, "").split("\n"))
    .map((line) => line.replace(/\s+#\s.*$/, "").trim())
    .filter((line) => line !== "" && !line.startsWith("#"));
}

/** Split a command line into words: single quotes literal, double quotes and bare words expand `$VAR`. */
export function shellWords(line: string, vars: Record<string, string> = {}): string[] {
  const expand = (text: string) =>
    text.replace(/\$(\w+)|\$\{(\w+)\}/g, (_, a: string | undefined, b: string | undefined) => {
      const name = a ?? b ?? "";
      const value = vars[name];
      if (value === undefined) throw new Error(`$${name} is not set for: ${line}`);
      return value;
    });
  const words: string[] = [];
  for (const match of line.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+?)(?=\s|$|'|")/g)) {
    const [, single, double, bare] = match;
    const piece = single ?? (double !== undefined ? expand(double.replace(/\\(.)/g, "$1")) : expand(bare ?? ""));
    // A quoted part glued to a bare one (`--response='{...}'`) is one word.
    const glued = match.index > 0 && !/\s/.test(line[match.index - 1] ?? " ");
    if (glued && words.length > 0) words[words.length - 1] += piece;
    else words.push(piece);
  }
  return words;
}

export interface CurlRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
  stream: boolean;
}

/** The request a `curl` command line makes (the flags the README uses: -X, -H, -d, -N, -s). */
export function curlRequest(line: string, vars: Record<string, string> = {}): CurlRequest {
  const words = shellWords(line, vars);
  if (words[0] !== "curl") throw new Error(`not a curl line: ${line}`);
  const request: CurlRequest = { method: "GET", url: "", headers: {}, body: undefined, stream: false };
  for (let i = 1; i < words.length; i++) {
    const word = words[i] ?? "";
    if (word === "-N") request.stream = true;
    else if (word === "-s") continue;
    else if (word.startsWith("-X")) request.method = word.length > 2 ? word.slice(2) : (words[++i] ?? "");
    else if (word === "-H") {
      const header = words[++i] ?? "";
      const colon = header.indexOf(":");
      request.headers[header.slice(0, colon).trim().toLowerCase()] = header.slice(colon + 1).trim();
    } else if (word === "-d") {
      request.body = words[++i] ?? "";
      if (request.method === "GET") request.method = "POST";
    } else if (!word.startsWith("-")) request.url = word;
    else throw new Error(`curl flag ${word} is not one the README tour runner knows: ${line}`);
  }
  return request;
}

/** Send `request` with its URL's origin replaced by `base`. */
export function send(request: CurlRequest, base: string): Promise<Response> {
  const url = new URL(request.url);
  return fetch(`${base}${url.pathname}${url.search}`, {
    method: request.method,
    headers: request.headers,
    ...(request.body === undefined ? {} : { body: request.body }),
  });
}

export interface RunningProcess {
  stdout(): string;
  stderr(): string;
  exited: Promise<number>;
  /** Wait until `pattern` shows in stdout or stderr; answers its match. */
  waitFor(stream: "stdout" | "stderr", pattern: RegExp, what: string, timeoutMs?: number): Promise<RegExpExecArray>;
  stop(): Promise<number>;
}

/** Spawn `command` in the repository, collecting its output while it runs. */
export function spawnCollected(command: string[], env: Record<string, string> = {}): RunningProcess {
  const child = Bun.spawn(command, {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdin: "ignore",
    stdout: "pipe",
    stderr: "pipe",
  });
  const out = { stdout: "", stderr: "" };
  const drain = async (name: "stdout" | "stderr", stream: ReadableStream<Uint8Array>) => {
    const decoder = new TextDecoder();
    for await (const chunk of stream as unknown as AsyncIterable<Uint8Array>)
      out[name] += decoder.decode(chunk, { stream: true });
  };
  void drain("stdout", child.stdout).catch(() => undefined);
  void drain("stderr", child.stderr).catch(() => undefined);
  return {
    stdout: () => out.stdout,
    stderr: () => out.stderr,
    exited: child.exited,
    waitFor: (stream, pattern, what, timeoutMs = 15_000) =>
      waitFor(() => pattern.exec(out[stream]) ?? undefined, timeoutMs, `${what}; stderr:\n${out.stderr}`),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      return await child.exited;
    },
  };
}
