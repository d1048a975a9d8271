/**
 * Building a specialist session's write gate: its policy from the workload's roster (what is
 * read-only, each tool's own name and input schema), its grant keeper (change sets of the
 * incident's specialists, preconditions read through the tool servers, proposed changes checked
 * against the tools' schemas), and where its approved calls run.
 */
import type { CommittedRow } from "../../core/events.ts";
import { uuidv7 } from "../../core/ids.ts";
import { type Result, err, ok } from "../../core/result.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { ToolRunner } from "../../core/tool-catalog.ts";
import type { ExecutorSession } from "../../runtime/executor.ts";
import type { AuditRecord } from "../gate/audit-log.ts";
import type { ChangeSet } from "../gate/change-set.ts";
import { GrantKeeper } from "../gate/grant-keeper.ts";
import { WriteGate } from "../gate/write-gate.ts";
import type { OnMutation } from "../workload/workload.ts";
import type { AgentProfile, AgentRoster } from "./agent-roster.ts";
import type { ToolSchemas } from "./tool-schemas.ts";

/** A precondition read that takes longer fails (the grant cannot be confirmed). */
const PRECONDITION_READ_MS = 30_000;

export interface GateFactoryDeps {
  roster: AgentRoster;
  schemas: ToolSchemas;
  runner: ToolRunner;
  onMutation: OnMutation;
  changeSetTtlMs: number;
  rows(key: SessionKey): Promise<CommittedRow[]>;
  /** The change sets the incident's specialists proposed. */
  changeSets(sessionId: string): Promise<ChangeSet[]>;
  audit(record: AuditRecord): void;
}

export function newWriteGate(session: ExecutorSession, profile: AgentProfile, deps: GateFactoryDeps): WriteGate {
  const { roster, schemas } = deps;
  return new WriteGate({
    sessionId: session.key.id,
    agent: profile.name,
    journal: session.journal,
    inner: session.tools,
    runner: deps.runner,
    prepareTools: () => session.context.prepareTools(),
    history: () => session.conversation.history,
    readRows: () => deps.rows(session.key),
    policy: {
      onMutation: deps.onMutation,
      readOnly: (tool) => roster.readOnly(tool),
      describe: (tool) => {
        const served = roster.served(tool);
        return served === undefined ? { name: tool } : { name: served.tool, inputSchema: served.inputSchema };
      },
      schemaProblem: (tool, args) => {
        const schema = roster.served(tool)?.inputSchema;
        return schema === undefined ? "the tool declares no input schema" : schemas.problem(schema, args);
      },
    },
    grants: new GrantKeeper({
      journal: session.journal,
      specialist: profile.name,
      changeSets: () => deps.changeSets(session.key.id),
      preconditionOf: (tool) => roster.precondition(tool),
      readPrecondition: (tool, args) => readTool(roster, deps.runner, tool, args),
      checkProposed: (tool, args) => {
        const served = roster.servedByOwnName(tool);
        if (served === undefined) return `the workload declares no tool ${JSON.stringify(tool)}`;
        return schemas.problem(served.inputSchema, args);
      },
      ttlMs: deps.changeSetTtlMs,
      now: () => new Date(),
    }),
    audit: (record) => deps.audit(record),
  });
}

/** Run a read-only tool by its own name (a precondition read): its structured result, else its text. */
async function readTool(
  roster: AgentRoster,
  runner: ToolRunner,
  tool: string,
  args: Record<string, unknown>,
): Promise<Result<unknown, string>> {
  const served = roster.servedByOwnName(tool);
  if (served === undefined) return err(`no tool server offers ${tool}`);
  const result = await runner.run(
    { callId: `precondition-${uuidv7()}`, name: served.name, args },
    AbortSignal.timeout(PRECONDITION_READ_MS),
  );
  if (result.isError) return err(String(result.output.error ?? "the read failed"));
  if (result.output.structured !== undefined) return ok(result.output.structured);
  const text = result.output.content;
  if (typeof text !== "string") return ok(result.output);
  try {
    return ok(JSON.parse(text));
  } catch {
    return ok(text);
  }
}
