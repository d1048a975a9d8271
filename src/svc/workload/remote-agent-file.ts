/**
 * A static remote A2A agent registration, `<root>/a2a/*.yaml`
 * (docs/svc-workloads.md#remote-a2a-agents): `name` (required), `agent_card_url` and/or `endpoint`
 * (at least one, http or https), `skills`, `auth{type, token_env}`, `timeout_seconds`. Parsed and
 * validated at load; the A2A client (src/a2a-client) calls them, for svc and, from
 * `.agents/a2a/`, for `spar agent`. Pure: the caller reads the file.
 */
import * as v from "valibot";
import { type Result, err, ok } from "../../core/result.ts";
import { count, mapping, nonEmptyText, textList } from "./schema-parts.ts";
import type { RemoteAgent } from "./workload.ts";
import { fieldError, formatIssue, parseYamlMapping } from "./yaml-document.ts";

const isWebUrl = (value: string): boolean => {
  try {
    const url = new URL(value);
    return url.protocol === "http:" || url.protocol === "https:";
  } catch {
    return false;
  }
};

const webUrl = v.pipe(v.string("expected an http or https URL"), v.check(isWebUrl, "expected an http or https URL"));

const REMOTE_AGENT = mapping({
  name: nonEmptyText,
  agent_card_url: v.optional(webUrl),
  endpoint: v.optional(webUrl),
  skills: v.optional(textList, []),
  auth: v.optional(mapping({ type: nonEmptyText, token_env: v.optional(nonEmptyText) })),
  timeout_seconds: v.optional(count),
});

export function parseRemoteAgentFile(source: string, file: string): Result<RemoteAgent> {
  const document = parseYamlMapping(source, file);
  if (!document.ok) return document;
  const parsed = v.safeParse(REMOTE_AGENT, document.value);
  if (!parsed.success) return err(parsed.issues.map((issue) => formatIssue(file, issue)).join("\n"));
  const raw = parsed.output;
  if (raw.agent_card_url === undefined && raw.endpoint === undefined)
    return err(fieldError(file, "endpoint", "required: give endpoint or agent_card_url"));
  const agent: RemoteAgent = { name: raw.name, skills: raw.skills, file };
  if (raw.agent_card_url !== undefined) agent.agentCardUrl = raw.agent_card_url;
  if (raw.endpoint !== undefined) agent.endpoint = raw.endpoint;
  if (raw.auth !== undefined)
    agent.auth = { type: raw.auth.type, ...(raw.auth.token_env === undefined ? {} : { tokenEnv: raw.auth.token_env }) };
  if (raw.timeout_seconds !== undefined) agent.timeoutSeconds = raw.timeout_seconds;
  return ok(agent);
}
