/**
 * GET /memory (SessionRead): `{sources: [{scope, path, bytes}]}`, the AGENTS.md files the system
 * prompt carries, broadest first. GET /skills (SessionRead): `{skills: [{name, description}]}`,
 * the loaded bundles. POST /reload (SessionWrite, no body): re-reads memory, skills and every
 * other registered part; `{memory, skills, mcp, errors}` (counts per part, problems named; a bad
 * SKILL.md is an entry in `errors`, never a failure of the call). Without a knowledge provider the
 * reads answer their zero bodies and the reload answers zero counts.
 */
import { json } from "../http/responses.ts";
import type { AttachContext } from "./attach-context.ts";
import { Elysia } from "elysia";
import { withSession } from "./route-context.ts";
import * as v from "valibot";
import { responses } from "../http/wire-schemas.ts";

const MemoryAnswer = v.object({
  sources: v.array(v.looseObject({ scope: v.string(), path: v.string(), bytes: v.number() })),
});
const SkillsAnswer = v.object({ skills: v.array(v.looseObject({ name: v.string(), description: v.string() })) });
const ReloadAnswer = v.object({ memory: v.number(), skills: v.number(), mcp: v.number(), errors: v.array(v.string()) });
const KNOWLEDGE = ["skills and memory"];

export function knowledgeRoutes(context: AttachContext) {
  const service = context.sessions;
  return new Elysia({ name: "spar.attach.knowledge" })
    .use(withSession)
    .get(
      "/memory",
      async ({ target, caller }) => {
        await service.authorize(target, caller, "read");
        return json(200, { sources: context.knowledge?.memorySources() ?? [] });
      },
      {
        response: responses({ 200: MemoryAnswer }, { extra: [404] }),
        detail: { summary: "The memory files in the system prompt", tags: KNOWLEDGE },
      },
    )
    .get(
      "/skills",
      async ({ target, caller }) => {
        await service.authorize(target, caller, "read");
        return json(200, { skills: context.knowledge?.skillRows() ?? [] });
      },
      {
        response: responses({ 200: SkillsAnswer }, { extra: [404] }),
        detail: { summary: "The skill bundles", tags: KNOWLEDGE },
      },
    )
    .post(
      "/reload",
      async ({ target, caller }) => {
        await service.authorize(target, caller, "write");
        const none = { memory: 0, skills: 0, mcp: 0, errors: [] };
        return json(200, context.knowledge ? await context.knowledge.reloads.reloadAll() : none);
      },
      {
        response: responses({ 200: ReloadAnswer }, { body: true, extra: [404] }),
        detail: { summary: "Re-read memory, skills and mcp.json", tags: KNOWLEDGE },
      },
    );
}
