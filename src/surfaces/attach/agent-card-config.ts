/**
 * Agent-card configuration: the `--agent-card-*` flag table and the merge of the card's layers
 * (docs/configuration.md#agent-card-file) into one AgentCardSettings, in order config
 * `agent.description` < card file (`.agents/agent-card.json`, envelope `version: 1`) < flags. The
 * embedding library API, the fourth layer, edits the returned settings. Owns reading and validating
 * the card file; bad input is a startup error returned as a Result naming the file (or flag) and
 * field, never thrown. Builds no card and registers no route (agent-card.ts does).
 */
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import * as v from "valibot";
import type { ConfigMap } from "../../config/config-file.ts";
import type { FlagSpec, FlagValue } from "../../config/flag-spec.ts";
import { type Result, err, ok } from "../../core/result.ts";

/** A skill listed in the card file's `extra_skills` ("curated"; wins over a bundle with its id). */
export interface CuratedSkill {
  id: string;
  name: string;
  description: string;
  tags: string[];
  examples?: string[];
}

export interface AgentCardProvider {
  organization: string;
  url: string;
}

/** The merged card configuration; without a `description` the card path answers 404. */
export interface AgentCardSettings {
  name: string;
  description?: string;
  /** The card's `version` (its file's and the wire's field `agent_version`); defaults to the build version. */
  version: string;
  documentationUrl?: string;
  provider?: AgentCardProvider;
  /** Canonical card `url`; when unset it is derived per request. */
  externalUrl?: string;
  extraSkills: CuratedSkill[];
  /** The card file that was read (absolute path), for the startup log; unset when none was. */
  cardFile?: string;
}

export interface AgentCardInput {
  /** The agent config file's map; `agent.description` is read. */
  config: ConfigMap;
  /** Parsed flag values keyed by flag name without dashes (only the AGENT_CARD_FLAGS are read). */
  flags: ReadonlyMap<string, FlagValue>;
  /** Resolves the card file path. */
  cwd: string;
  /** Default card `version`: the build version. */
  version: string;
  /** Default card `name`: the first registrant's app name, else the daemon's default name. */
  defaultName: string;
}

export const DEFAULT_AGENT_CARD_FILE = ".agents/agent-card.json";
export const AGENT_CARD_FILE_VERSION = 1;

export const AGENT_CARD_FLAGS: FlagSpec[] = [
  {
    name: "agent-card-description",
    kind: "string",
    help: "agent card description; a description from any layer enables GET /.well-known/agent-card.json",
    configKey: "agent.description",
  },
  {
    name: "agent-card-external-url",
    kind: "string",
    help: "canonical card url (absolute http or https URL); otherwise derived per request from Host, X-Forwarded-Proto and X-Forwarded-Host",
  },
  { name: "agent-card-name", kind: "string", help: "agent card name", defaultText: "the first registrant's app name" },
  {
    name: "agent-card-version",
    kind: "string",
    help: "the agent's own version on the card",
    defaultText: "the build version",
  },
  {
    name: "agent-card-provider-org",
    kind: "string",
    help: "card provider organization (needs a provider url from the card file or --agent-card-provider-url)",
  },
  {
    name: "agent-card-provider-url",
    kind: "string",
    help: "card provider URL (needs a provider organization from the card file or --agent-card-provider-org)",
  },
  { name: "agent-card-docs-url", kind: "string", help: "card documentation URL" },
  {
    name: "agent-card-config",
    kind: "string",
    help: "agent card file (JSON, envelope version 1); - skips loading it",
    defaultText: DEFAULT_AGENT_CARD_FILE,
  },
];

const text = v.pipe(v.string("must be a string"), v.trim(), v.nonEmpty("must not be empty"));
const absoluteUrl = v.pipe(v.string("must be a string"), v.trim(), v.url("must be an absolute URL"));
const httpUrl = v.pipe(absoluteUrl, v.regex(/^https?:\/\//i, "must be an http or https URL"));
const textList = v.array(text, "must be an array of strings");

const CuratedSkillSchema = v.strictObject(
  {
    id: text,
    name: text,
    description: text,
    tags: v.optional(textList, ["curated"]),
    examples: v.optional(textList),
  },
  "must be an object {id, name, description, tags?, examples?}",
);

const CardFileSchema = v.strictObject(
  {
    version: v.literal(AGENT_CARD_FILE_VERSION),
    name: v.optional(text),
    description: v.optional(text),
    agent_version: v.optional(text),
    documentation_url: v.optional(absoluteUrl),
    provider: v.optional(
      v.strictObject({ organization: text, url: absoluteUrl }, "must be an object {organization, url}"),
    ),
    external_url: v.optional(httpUrl),
    extra_skills: v.optional(v.array(CuratedSkillSchema, "must be an array of skills")),
  },
  "must be an object",
);

type CardFile = v.InferOutput<typeof CardFileSchema>;

function describeIssue(issue: v.BaseIssue<unknown>): string {
  const path = v.getDotPath(issue);
  if (path === null) return issue.message;
  if (issue.type === "strict_object" && issue.expected === "never") return `unknown field ${JSON.stringify(path)}`;
  if (issue.received === "undefined") return `field ${JSON.stringify(path)} is required`;
  return `field ${JSON.stringify(path)} ${issue.message}`;
}

/** Parse the card file's JSON text; errors name the file and the field. */
export function parseAgentCardFile(path: string, source: string): Result<CardFile> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(source);
  } catch (error) {
    return err(`agent card file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    return err(`agent card file ${path} must be a JSON object ({"version": ${AGENT_CARD_FILE_VERSION}, ...})`);
  const version = (parsed as Record<string, unknown>).version;
  if (version === undefined)
    return err(`agent card file ${path}: field "version" is required (${AGENT_CARD_FILE_VERSION})`);
  if (version !== AGENT_CARD_FILE_VERSION) {
    return err(
      `agent card file ${path}: unsupported version ${JSON.stringify(version)} (this build reads version ${AGENT_CARD_FILE_VERSION})`,
    );
  }
  const result = v.safeParse(CardFileSchema, parsed);
  if (!result.success) {
    const issue = result.issues[0];
    return err(`agent card file ${path}: ${issue ? describeIssue(issue) : "invalid"}`);
  }
  const file = result.output;
  const setFields = Object.keys(file).filter((key) => key !== "version" && file[key as keyof CardFile] !== undefined);
  if (setFields.length === 1 && setFields[0] === "extra_skills") {
    return err(
      `agent card file ${path}: field "extra_skills" is the only field set; a card file that sets only extra_skills is rejected (set description, name or another card field)`,
    );
  }
  const ids = new Set<string>();
  for (const [index, skill] of (file.extra_skills ?? []).entries()) {
    if (ids.has(skill.id))
      return err(`agent card file ${path}: field "extra_skills.${index}.id" repeats id ${JSON.stringify(skill.id)}`);
    ids.add(skill.id);
  }
  return ok(file);
}

/** Which file to read: `undefined` for none; `required` when it was named explicitly. */
function cardFileLocation(input: AgentCardInput): Result<{ path: string; required: boolean } | undefined> {
  const named = input.flags.get("agent-card-config");
  if (named === undefined) return ok({ path: join(input.cwd, DEFAULT_AGENT_CARD_FILE), required: false });
  if (typeof named !== "string" || named.trim() === "")
    return err("--agent-card-config needs a file path, or - to skip the card file");
  if (named === "-") return ok(undefined);
  return ok({ path: resolve(input.cwd, named), required: true });
}

function readCardFile(input: AgentCardInput): Result<{ path: string; file: CardFile } | undefined> {
  const location = cardFileLocation(input);
  if (!location.ok) return location;
  if (location.value === undefined) return ok(undefined);
  const { path, required } = location.value;
  let source: string;
  try {
    source = readFileSync(path, "utf8");
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOENT" && !required) return ok(undefined);
    if (code === "ENOENT")
      return err(`agent card file ${path} does not exist (named by --agent-card-config; pass - to skip it)`);
    return err(`agent card file ${path} cannot be read: ${(error as Error).message}`);
  }
  const file = parseAgentCardFile(path, source);
  return file.ok ? ok({ path, file: file.value }) : file;
}

const FLAG_SCHEMAS = {
  "agent-card-description": text,
  "agent-card-name": text,
  "agent-card-version": text,
  "agent-card-provider-org": text,
  "agent-card-external-url": httpUrl,
  "agent-card-provider-url": absoluteUrl,
  "agent-card-docs-url": absoluteUrl,
} as const;

type CardFlag = keyof typeof FLAG_SCHEMAS;
type CardFlagValues = Partial<Record<CardFlag, string>>;

function readFlags(flags: ReadonlyMap<string, FlagValue>): Result<CardFlagValues> {
  const values: CardFlagValues = {};
  for (const [name, schema] of Object.entries(FLAG_SCHEMAS) as Array<[CardFlag, v.GenericSchema<unknown, string>]>) {
    const raw = flags.get(name);
    if (raw === undefined) continue;
    const result = v.safeParse(schema, raw);
    if (!result.success) return err(`--${name} ${result.issues[0]?.message ?? "is invalid"}`);
    values[name] = result.output;
  }
  return ok(values);
}

function configDescription(config: ConfigMap): Result<string | undefined> {
  const value = config.get("agent.description");
  if (value === undefined || value === null) return ok(undefined);
  if (typeof value !== "string") return err(`config agent.description must be a string, got ${JSON.stringify(value)}`);
  return ok(value.trim() === "" ? undefined : value.trim());
}

function mergeProvider(file: CardFile | undefined, flags: CardFlagValues): Result<AgentCardProvider | undefined> {
  const organization = flags["agent-card-provider-org"] ?? file?.provider?.organization;
  const url = flags["agent-card-provider-url"] ?? file?.provider?.url;
  if (organization === undefined && url === undefined) return ok(undefined);
  if (organization === undefined)
    return err(
      "--agent-card-provider-url needs a provider organization too (--agent-card-provider-org or provider.organization in the card file)",
    );
  if (url === undefined)
    return err(
      "--agent-card-provider-org needs a provider url too (--agent-card-provider-url or provider.url in the card file)",
    );
  return ok({ organization, url });
}

/**
 * Merge the card layers: config `agent.description`, then the card file, then the flags. A missing
 * default card file is not an error; a missing file named by `--agent-card-config` is.
 */
export function loadAgentCardSettings(input: AgentCardInput): Result<AgentCardSettings> {
  const fromConfig = configDescription(input.config);
  if (!fromConfig.ok) return fromConfig;
  const loaded = readCardFile(input);
  if (!loaded.ok) return loaded;
  const flags = readFlags(input.flags);
  if (!flags.ok) return flags;
  const file = loaded.value?.file;
  const flag = flags.value;
  const provider = mergeProvider(file, flag);
  if (!provider.ok) return provider;

  const settings: AgentCardSettings = {
    name: flag["agent-card-name"] ?? file?.name ?? input.defaultName,
    version: flag["agent-card-version"] ?? file?.agent_version ?? input.version,
    extraSkills: (file?.extra_skills ?? []).map(({ examples, ...skill }) =>
      examples === undefined ? skill : { ...skill, examples },
    ),
  };
  const description = flag["agent-card-description"] ?? file?.description ?? fromConfig.value;
  if (description !== undefined) settings.description = description;
  const documentationUrl = flag["agent-card-docs-url"] ?? file?.documentation_url;
  if (documentationUrl !== undefined) settings.documentationUrl = documentationUrl;
  if (provider.value !== undefined) settings.provider = provider.value;
  const externalUrl = flag["agent-card-external-url"] ?? file?.external_url;
  if (externalUrl !== undefined) settings.externalUrl = externalUrl;
  if (loaded.value !== undefined) settings.cardFile = loaded.value.path;
  return ok(settings);
}
