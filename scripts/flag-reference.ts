/**
 * Renders docs/flags.md, the flag reference of `spar agent`, `spar svc` (the daemon and its
 * operator verbs) and `spar watcher watch`, from the flag tables `--help` prints
 * (src/cli/agent-flags.ts AGENT_FLAGS and the tables it spreads, src/cli/svc-flags.ts SVC_FLAGS,
 * the verbs of src/cli/svc-sessions/operator-command.ts, src/cli/watcher-flags.ts WATCHER_FLAGS,
 * all declared as src/config/flag-spec.ts FlagSpec): name, value kind, default, config key, bounds, help.
 * test/docs/flag-reference.test.ts fails when the file differs from what this renders, so the
 * docs and `--help` cannot disagree. Reads the tables only; writes nothing but the one file.
 *
 * Usage: bun scripts/flag-reference.ts           rewrite docs/flags.md
 *        bun scripts/flag-reference.ts --check   exit 1 when docs/flags.md is stale
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { AGENT_FLAGS } from "../src/cli/agent-flags.ts";
import { ATTACH_LIMITS_FLAGS } from "../src/cli/attach-limits-flags.ts";
import { ATTACH_UI_FLAGS } from "../src/cli/attach-ui-flags.ts";
import { type Bounds, type FlagSpec, shownDefault } from "../src/config/flag-spec.ts";
import { GUARDRAIL_FLAGS } from "../src/cli/guardrail-flags.ts";
import { KNOWLEDGE_FLAGS } from "../src/cli/knowledge-flags.ts";
import { MCP_FLAGS } from "../src/cli/mcp-flags.ts";
import { MODEL_FLAGS } from "../src/cli/model-flags.ts";
import { PRICING_FLAGS } from "../src/cli/pricing-flags.ts";
import { SVC_FLAGS } from "../src/cli/svc-flags.ts";
import { OPERATOR_VERBS } from "../src/cli/svc-sessions/operator-command.ts";
import { TELEMETRY_FLAGS } from "../src/cli/telemetry-flags.ts";
import { TOOLS_FLAGS } from "../src/cli/tools-flags.ts";
import { WATCHER_FLAGS } from "../src/cli/watcher-flags.ts";
import { formatDuration } from "../src/core/duration.ts";
import { AGENT_CARD_FLAGS } from "../src/surfaces/attach/agent-card-config.ts";
import { PEER_FLAGS } from "../src/surfaces/peers/peer-flags.ts";

const REPO_ROOT = resolve(import.meta.dir, "..");
export const FLAG_REFERENCE_PATH = join(REPO_ROOT, "docs", "flags.md");

/** The agent's flag groups in `--help` order: each spread table, with the page that explains it. */
const AGENT_GROUPS: ReadonlyArray<{ title: string; page: string; flags: readonly FlagSpec[] }> = [
  { title: "Guardrails and auto-continue", page: "agent.md#guardrails", flags: GUARDRAIL_FLAGS },
  { title: "Peer hub", page: "agent.md#peer-hub", flags: PEER_FLAGS },
  { title: "Agent card", page: "configuration.md#agent-card-file", flags: AGENT_CARD_FLAGS },
  { title: "Pricing", page: "agent.md#pricing", flags: PRICING_FLAGS },
  { title: "Tools and outbound URLs", page: "agent.md#tools", flags: TOOLS_FLAGS },
  { title: "Skills and memory", page: "agent.md#skills-and-memory", flags: KNOWLEDGE_FLAGS },
  { title: "MCP tool servers", page: "agent.md#mcp-tool-servers", flags: MCP_FLAGS },
  { title: "Listener limits", page: "security.md#resource-caps", flags: ATTACH_LIMITS_FLAGS },
  { title: "Dashboard and CORS", page: "attach-api.md#embedded-dashboard", flags: ATTACH_UI_FLAGS },
  { title: "Telemetry", page: "telemetry.md", flags: TELEMETRY_FLAGS },
];

/** Table cell text: pipes escaped, line breaks flattened. */
function cell(text: string | undefined): string {
  if (text === undefined || text === "") return "";
  return text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}

function code(text: string | undefined): string {
  return text === undefined || text === "" ? "" : `\`${text.replace(/\|/g, "\\|")}\``;
}

function agentRow(flag: FlagSpec): string {
  const value = flag.kind === "bool" ? "" : `=<${flag.kind}>`;
  return `| ${code(`--${flag.name}${value}`)} | ${code(shownDefault(flag))} | ${code(flag.configKey)} | ${cell(flag.help)} |`;
}

function agentTable(flags: readonly FlagSpec[]): string[] {
  return ["| flag | default | config key | meaning |", "|---|---|---|---|", ...flags.map(agentRow)];
}

function agentSection(): string[] {
  const grouped = new Set(AGENT_GROUPS.flatMap((group) => group.flags));
  const daemon = AGENT_FLAGS.filter((flag) => !grouped.has(flag));
  const lines = [
    "## `spar agent`",
    "",
    `${AGENT_FLAGS.length} flags. Flags win over the config file's key ([configuration.md](configuration.md)); a flag`,
    "without a config key is set on the command line only.",
    "",
    "### Listener, store, model and turns",
    "",
    ...agentTable(daemon),
  ];
  for (const group of AGENT_GROUPS) {
    const present = group.flags.filter((flag) => AGENT_FLAGS.includes(flag));
    if (present.length === 0) continue;
    lines.push(
      "",
      `### ${group.title}`,
      "",
      `Explained in [${group.page}](${group.page}).`,
      "",
      ...agentTable(present),
    );
  }
  return lines;
}

/** svc's flag groups in `--help` order: its own first, then the tables it shares with the agent (same keys). */
const SVC_GROUPS: ReadonlyArray<{ title: string; page: string; flags: readonly FlagSpec[] }> = [
  { title: "Model", page: "agent.md#model-providers", flags: MODEL_FLAGS },
  { title: "Pricing", page: "agent.md#pricing", flags: PRICING_FLAGS },
  { title: "MCP tool servers", page: "agent.md#mcp-tool-servers", flags: MCP_FLAGS },
  { title: "Listener limits", page: "security.md#resource-caps", flags: ATTACH_LIMITS_FLAGS },
  { title: "Dashboard and CORS", page: "attach-api.md#embedded-dashboard", flags: ATTACH_UI_FLAGS },
  { title: "Telemetry", page: "telemetry.md", flags: TELEMETRY_FLAGS },
];

function svcSection(): string[] {
  const shared = new Set(SVC_GROUPS.flatMap((group) => group.flags));
  const own = SVC_FLAGS.filter((flag) => !shared.has(flag));
  const lines = [
    "## `spar svc`",
    "",
    `${SVC_FLAGS.length} flags. svc's own settings are under \`svc.*\` keys of its config file; the settings it`,
    "shares with the agent keep the agent's keys ([svc.md](svc.md#settings)). Tokens and rates come from",
    "`SVC_*` environment variables, never flags.",
    "",
    "### The daemon",
    "",
    ...agentTable(own),
  ];
  for (const group of SVC_GROUPS) {
    const present = SVC_FLAGS.filter((flag) => group.flags.includes(flag));
    if (present.length === 0) continue;
    lines.push(
      "",
      `### ${group.title} (svc)`,
      "",
      `Explained in [${group.page}](${group.page}).`,
      "",
      ...agentTable(present),
    );
  }
  return lines;
}

function verbRow(flag: FlagSpec): string {
  const value = flag.kind === "bool" ? "" : `=<${flag.kind}>`;
  return `| ${code(`--${flag.name}${value}`)} | ${code(shownDefault(flag))} | ${cell(flag.help)} |`;
}

function operatorSection(): string[] {
  const lines = [
    "## `spar svc sessions` and `spar svc stop`",
    "",
    "The operator verbs ([svc-cli.md](svc-cli.md), [svc-pauses.md](svc-pauses.md)); command line only.",
  ];
  for (const verb of OPERATOR_VERBS) {
    lines.push("", `### \`spar svc ${verb.name}\``, "", `\`spar svc ${verb.usage}\``, "");
    lines.push("| flag | default | meaning |", "|---|---|---|", ...verb.flags.map(verbRow));
  }
  return lines;
}

function boundsText(bounds: Bounds, kind: FlagSpec["kind"]): string {
  const show = (value: number) => (kind === "duration" ? formatDuration(value) : String(value));
  const parts: string[] = [];
  if (bounds.min !== undefined) parts.push(`>= ${show(bounds.min)}`);
  if (bounds.above !== undefined) parts.push(`> ${show(bounds.above)}`);
  if (bounds.max !== undefined) parts.push(`<= ${show(bounds.max)}`);
  if (bounds.below !== undefined) parts.push(`< ${show(bounds.below)}`);
  return `${parts.join(", ")}${bounds.zeroOk ? " (or 0)" : ""}`;
}

function watcherValues(flag: FlagSpec): string {
  if (flag.choices) return flag.choices.map((choice) => code(choice)).join(", ");
  if (flag.bounds) return cell(boundsText(flag.bounds, flag.kind));
  return "";
}

function watcherRow(flag: FlagSpec): string {
  const value = flag.kind === "bool" ? "" : `=<${flag.kind === "repeatable" ? "string, repeatable" : flag.kind}>`;
  const name = `${code(`--${flag.name}${value}`)}${flag.core ? " (core)" : ""}`;
  return `| ${name} | ${code(shownDefault(flag))} | ${watcherValues(flag)} | ${cell(flag.help)} |`;
}

function watcherSection(): string[] {
  const core = WATCHER_FLAGS.filter((flag) => flag.core).length;
  return [
    "## `spar watcher watch`",
    "",
    `${WATCHER_FLAGS.length} flags, ${core} of them the frozen core surface (marked core: renaming or removing one is`,
    "a breaking change, pinned by `test/unit/watcher/watcher-flags.test.ts`). The watcher has no config",
    "file. What the flags this build acts on do: [watcher.md](watcher.md).",
    "",
    "| flag | default | allowed | meaning |",
    "|---|---|---|---|",
    ...WATCHER_FLAGS.map(watcherRow),
  ];
}

/** The whole of docs/flags.md. */
export function renderFlagReference(): string {
  const lines = [
    "# Flag reference",
    "",
    "<!-- Generated by `bun scripts/flag-reference.ts` from the flag tables; do not edit by hand.",
    "     test/docs/flag-reference.test.ts fails when this file is not what the script renders. -->",
    "",
    "Every flag of `spar agent`, `spar svc` (the daemon and its operator verbs) and `spar watcher watch`,",
    "rendered from the same tables `--help` prints.",
    "Durations use Go notation (`500ms`, `30s`, `5m`, `1h30m0s`); a bool flag alone means true",
    "(`--multi-session`), or takes `=true` / `=false`. The fake apiserver's flags are in",
    "[fake-apiserver.md](fake-apiserver.md).",
    "",
    ...agentSection(),
    "",
    ...svcSection(),
    "",
    ...operatorSection(),
    "",
    ...watcherSection(),
  ];
  return `${lines.join("\n")}\n`;
}

if (import.meta.main) {
  const rendered = renderFlagReference();
  if (process.argv.includes("--check")) {
    const current = readFileSync(FLAG_REFERENCE_PATH, "utf8");
    if (current !== rendered) {
      process.stderr.write("docs/flags.md is stale: run bun scripts/flag-reference.ts\n");
      process.exit(1);
    }
  } else {
    writeFileSync(FLAG_REFERENCE_PATH, rendered);
    process.stdout.write(`wrote ${FLAG_REFERENCE_PATH}\n`);
  }
}
