/**
 * The simple commands of a shell command line, for the permission gate (D168): `git add . && git
 * commit -m "a; b" | tee log` reads as `git add .`, `git commit -m "a; b"` and `tee log`. Control
 * operators (`;`, `&`, `&&`, `|`, `||`, newline) split; quotes and backslashes are honoured;
 * redirections (`2>&1`, `&>`) stay in their command. A line whose commands cannot be read off
 * this way (command or process substitution, backticks, subshells and groups, here-documents)
 * answers undefined: the gate then lets no glob allow it. Pure.
 */

/** Characters that end a simple command when unquoted. */
const OPERATORS = new Set([";", "&", "|", "\n"]);

export function shellSegments(command: string): string[] | undefined {
  const segments: string[] = [];
  let current = "";
  let quote: "'" | '"' | undefined;
  for (let i = 0; i < command.length; i++) {
    const char = command[i] as string;
    const next = command[i + 1];
    if (quote === "'") {
      current += char;
      if (char === "'") quote = undefined;
      continue;
    }
    if (char === "\\") {
      current += char + (next ?? "");
      i++;
      continue;
    }
    if (char === "`" || (char === "$" && next === "(")) return undefined;
    if (quote === '"') {
      current += char;
      if (char === '"') quote = undefined;
      continue;
    }
    if (char === "'" || char === '"') {
      quote = char;
      current += char;
      continue;
    }
    if (char === "(" || char === ")" || char === "{" || char === "}") return undefined;
    if (char === "<" && next === "<") return undefined;
    // `2>&1`, `<&3` and `&>file` are redirections, not the `&` operator.
    const redirection = char === "&" && (next === ">" || current.endsWith(">") || current.endsWith("<"));
    if (OPERATORS.has(char) && !redirection) {
      segments.push(current);
      current = "";
      continue;
    }
    current += char;
  }
  if (quote !== undefined) return undefined;
  segments.push(current);
  return segments.map((segment) => segment.trim()).filter((segment) => segment !== "");
}
