/**
 * A specialist `.tmpl` (docs/svc-workloads.md#specialist-files): YAML front matter between `---`
 * lines (leading whitespace allowed before the first), the trimmed body is the instruction. Every
 * front-matter key of the table: name (default: the file name), description (required), mode,
 * capability, model or tier, budget, output_schema (relative to the file's directory, loaded and
 * checked), tools.mcp (absent: inherit; `[]`: none), tools.builtin, tools.skills (only `[]`). Reads
 * the file and its schema.
 */
import { basename, dirname, resolve } from "node:path";
import * as v from "valibot";
import { type Result, err, ok } from "../../core/result.ts";
import { readText } from "./read-text.ts";
import { loadOutputSchema } from "./output-schema.ts";
import { amount, count, listOf, mapping, nonEmptyText, oneOf, text, textList } from "./schema-parts.ts";
import type { Specialist, SpecialistBudget } from "./workload.ts";
import { fieldError, formatIssue, parseYamlMapping, prefixLines } from "./yaml-document.ts";

/** What a specialist may be called: it is a tool name to the coordinator's model. */
export const SPECIALIST_NAME = /^[A-Za-z0-9_-]{1,64}$/;

const FRONT_MATTER = mapping({
  name: v.optional(
    v.pipe(
      v.string("expected 1-64 letters, digits, _ or -"),
      v.regex(SPECIALIST_NAME, "expected 1-64 letters, digits, _ or -"),
    ),
  ),
  description: nonEmptyText,
  mode: v.optional(oneOf(["Task", "SingleTurn"]), "Task"),
  capability: v.optional(oneOf(["read_only", "change_executor"]), "read_only"),
  model: v.optional(nonEmptyText),
  tier: v.optional(oneOf(["small", "mid", "frontier"])),
  budget: v.optional(
    mapping({
      max_turns: v.optional(count),
      max_cost_usd: v.optional(amount),
      max_wallclock_seconds: v.optional(count),
    }),
    {},
  ),
  output_schema: v.optional(nonEmptyText),
  tools: v.optional(
    mapping({
      mcp: v.optional(listOf(mapping({ server: nonEmptyText, tools: v.optional(textList) }))),
      builtin: v.optional(textList, []),
      skills: v.optional(
        v.pipe(listOf(text), v.maxLength(0, "expected [] (skills are not supported in a specialist)")),
      ),
    }),
    {},
  ),
});

type FrontMatter = v.InferOutput<typeof FRONT_MATTER>;

/** `---\n<yaml>\n---\n<body>`: the opening line may be preceded by whitespace; both lines alone. */
function splitFrontMatter(source: string, file: string): Result<{ yaml: string; body: string }> {
  const normalized = source
    .replace(/^\uFEFF/, "")
    .replace(/\r\n/g, "\n")
    .replace(/^\s+/, "");
  if (!/^---[ \t]*\n/.test(normalized))
    return err(`${file}: front matter missing: the file must start with a line ---`);
  const opening = normalized.indexOf("\n") + 1;
  const closing = /^---[ \t]*$/m.exec(normalized.slice(opening));
  if (closing === null) return err(`${file}: front matter not closed: no line --- after it`);
  const end = opening + closing.index;
  return ok({ yaml: normalized.slice(opening, end), body: normalized.slice(end + closing[0].length) });
}

function budgetOf(raw: FrontMatter["budget"]): SpecialistBudget {
  const budget: SpecialistBudget = {};
  if (raw.max_turns !== undefined) budget.maxTurns = raw.max_turns;
  if (raw.max_cost_usd !== undefined) budget.maxCostUsd = raw.max_cost_usd;
  if (raw.max_wallclock_seconds !== undefined) budget.maxWallclockSeconds = raw.max_wallclock_seconds;
  return budget;
}

function toSpecialist(raw: FrontMatter, name: string, instruction: string, file: string): Specialist {
  const specialist: Specialist = {
    name,
    description: raw.description,
    mode: raw.mode,
    capability: raw.capability,
    budget: budgetOf(raw.budget),
    tools: {
      mcp:
        raw.tools.mcp === undefined
          ? "inherit"
          : raw.tools.mcp.map((grant) =>
              grant.tools === undefined ? { server: grant.server } : { server: grant.server, tools: grant.tools },
            ),
      builtin: raw.tools.builtin,
    },
    instruction,
    file,
  };
  if (raw.model !== undefined) specialist.model = raw.model;
  if (raw.tier !== undefined) specialist.tier = raw.tier;
  return specialist;
}

/** Parse one specialist from its text; `file` is its path (the schema resolves against its directory). */
export function parseSpecialistFile(source: string, file: string): Result<Specialist> {
  const parts = splitFrontMatter(source, file);
  if (!parts.ok) return parts;
  const document = parseYamlMapping(parts.value.yaml, file);
  if (!document.ok) return document;
  const parsed = v.safeParse(FRONT_MATTER, document.value);
  if (!parsed.success) return err(parsed.issues.map((issue) => formatIssue(file, issue)).join("\n"));
  const raw = parsed.output;
  if (raw.model !== undefined && raw.tier !== undefined)
    return err(fieldError(file, "tier", "not allowed together with model: declare one of the two"));
  const name = raw.name ?? basename(file).replace(/\.tmpl$/, "");
  if (!SPECIALIST_NAME.test(name))
    return err(
      fieldError(
        file,
        "name",
        `expected 1-64 letters, digits, _ or -, got ${JSON.stringify(name)} (from the file name)`,
      ),
    );
  const specialist = toSpecialist(raw, name, parts.value.body.trim(), file);
  if (raw.output_schema !== undefined) {
    const schema = loadOutputSchema(resolve(dirname(file), raw.output_schema));
    if (!schema.ok) return err(prefixLines(`${file}: output_schema: `, schema.error));
    specialist.outputSchema = schema.value;
  }
  return ok(specialist);
}

/** Read and parse the `.tmpl` at `file`. */
export function loadSpecialistFile(file: string): Result<Specialist> {
  const read = readText(file);
  if (!read.ok) return read;
  const source = read.value;
  return parseSpecialistFile(source, file);
}
