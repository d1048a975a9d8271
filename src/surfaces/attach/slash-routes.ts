/**
 * The slash operations, POST /slash/<name> (SessionWrite), from one table: the routes and the
 * capabilities frame's `slash_commands` both come from SLASH_COMMANDS, so the frame lists exactly
 * what answers. Every call is authorized first (a denied caller gets the masked 404 and spends
 * nothing), then counted by the per-caller limiter (caller-rate-guard.ts: 10 per minute, burst
 * 5, one limiter per listener; 429 beyond), then run. Every answer carries `_render` (how a client
 * shows it: `markdown`, `text` or `json`). Thin: the session actor works.
 */
import * as v from "valibot";
import { SparError } from "../../core/errors.ts";
import { isSubagentName } from "../../core/subagents.ts";
import type { SessionKey } from "../../core/session-key.ts";
import type { SessionActor } from "../../runtime/session-actor.ts";
import { CallerRateGuard, SLASH_LIMIT } from "../http/caller-rate-guard.ts";
import { json } from "../http/responses.ts";
import { responses } from "../http/wire-schemas.ts";
import type { AttachContext, Caller } from "./attach-context.ts";
import { Elysia } from "elysia";
import { verifiedIdentity, withSession } from "./route-context.ts";

/** What a slash operation runs on: the caller's session, authorized for writing. */
interface SlashSession {
  key: SessionKey;
  actor: SessionActor;
  caller: Caller;
  context: AttachContext;
}

interface SlashCommand<TBody extends v.GenericSchema> {
  /** The request body's schema (an optional body is `v.optional(...)`). */
  body: TBody;
  /** The 200 body, for the OpenAPI document. */
  answer: v.GenericSchema;
  /** Statuses the operation itself can answer besides 200 (404, 429 and the body refusals are added). */
  refusals: ReadonlyArray<409 | 500 | 501 | 503>;
  summary: string;
  run(body: v.InferOutput<TBody>, session: SlashSession): Promise<Record<string, unknown>>;
}

type AnyCommand = SlashCommand<v.GenericSchema>;
const command = <TBody extends v.GenericSchema>(definition: SlashCommand<TBody>) => definition as AnyCommand;

const optionalText = (limit: number, what: string) =>
  v.optional(
    v.pipe(v.string(`${what} must be a string`), v.maxLength(limit, `${what} must be at most ${limit} characters`)),
  );
/** A trimmed optional text; blank is absent. */
const present = (text: string | undefined) => {
  const trimmed = text?.trim();
  return trimmed === "" ? undefined : trimmed;
};

const Render = v.picklist(["markdown", "text", "json"]);
const render = (answer: Record<string, unknown>, kind: "markdown" | "text" | "json") => ({ ...answer, _render: kind });

const SLASH = ["slash"];

/** The slash operations this daemon has, by name; the capabilities frame lists exactly these. */
export const SLASH_COMMANDS: Readonly<Record<string, AnyCommand>> = {
  btw: command({
    body: v.object({
      question: v.pipe(
        v.string("question must be a string"),
        v.trim(),
        v.minLength(1, "question must not be empty"),
        v.maxLength(4000, "question must be at most 4000 characters"),
      ),
    }),
    answer: v.object({
      answer: v.optional(v.string()),
      empty: v.optional(v.literal(true)),
      detail: v.optional(v.string()),
      _render: Render,
    }),
    refusals: [500, 503],
    summary: "Ask the model a side question over a read-only copy of the conversation (persists nothing)",
    run: async (body, { actor }) => {
      const answer = await actor.ask(body.question);
      return "answer" in answer ? render(answer, "markdown") : render(answer, "json");
    },
  }),
  compact: command({
    body: v.optional(v.object({ focus: optionalText(2000, "focus") })),
    answer: v.object({
      summary_event_id: v.optional(v.string()),
      summary_text: v.optional(v.string()),
      duration_ms: v.number(),
      skipped: v.optional(v.literal(true)),
      _render: Render,
    }),
    refusals: [409, 500, 503],
    summary: "Summarize the conversation now (everything but the last turn)",
    // A summary call may take minutes with nothing on the wire: the guard lifts the idle timeout
    // while a handler runs (connection-deadlines.ts).
    run: async (body, { actor }) => {
      const result = await actor.compact(present(body?.focus));
      return render(
        {
          ...(result.eventId !== undefined ? { summary_event_id: result.eventId } : {}),
          ...(result.summary !== undefined ? { summary_text: result.summary } : {}),
          duration_ms: result.durationMs,
          ...(result.skipped ? { skipped: true } : {}),
        },
        result.summary !== undefined ? "markdown" : "json",
      );
    },
  }),
  done: command({
    body: v.optional(v.object({ note: optionalText(2000, "note") })),
    answer: v.object({
      checkpoint_event_id: v.optional(v.string()),
      summary_text: v.optional(v.string()),
      task_note: v.optional(v.string()),
      duration_ms: v.number(),
      skipped: v.optional(v.literal(true)),
      _render: Render,
    }),
    refusals: [409, 500, 503],
    summary: "The task is done: checkpoint the conversation (a summary row and the task note)",
    run: async (body, { actor }) => {
      const result = await actor.checkpoint(present(body?.note));
      return render(
        {
          ...(result.eventId !== undefined ? { checkpoint_event_id: result.eventId } : {}),
          ...(result.summary !== undefined ? { summary_text: result.summary } : {}),
          ...(result.taskNote !== undefined ? { task_note: result.taskNote } : {}),
          duration_ms: result.durationMs,
          ...(result.skipped ? { skipped: true } : {}),
        },
        result.summary !== undefined ? "markdown" : "json",
      );
    },
  }),
  replan: command({
    body: v.optional(v.object({ reason: optionalText(500, "reason") })),
    answer: v.object({
      archived_path: v.optional(v.string()),
      plan_was_active: v.boolean(),
      message: v.optional(v.string()),
      _render: Render,
    }),
    refusals: [500, 501],
    summary: "Archive the session's active plan file",
    run: async (body, { actor, caller }) => {
      const result = await actor.replan(present(body?.reason), verifiedIdentity(caller));
      return render(
        {
          ...(result.archivedPath !== undefined ? { archived_path: result.archivedPath } : {}),
          plan_was_active: result.planWasActive,
          message: result.message,
        },
        "text",
      );
    },
  }),
  subagent: command({
    body: v.object({
      name: v.pipe(v.string("name must be a string"), v.minLength(1, "name must not be empty")),
      goal: v.pipe(
        v.string("goal must be a string"),
        v.trim(),
        v.minLength(1, "goal must not be empty"),
        v.maxLength(6000, "goal must be at most 6000 characters"),
      ),
    }),
    answer: v.object({ name: v.string(), id: v.string(), started_at: v.string(), _render: Render }),
    refusals: [503],
    summary: "Start a background subagent of the roster on a goal; it reports back when done (D351)",
    run: async (body, { actor, context }) => {
      context.sessions.refuseWhileDraining();
      if (!isSubagentName(body.name))
        throw new SparError("bad_request", "name must be the name of a configured subagent");
      const { instance } = await actor.subagents.launch(body.name, body.goal, "async");
      return render({ name: instance.name, id: instance.label, started_at: instance.startedAt }, "json");
    },
  }),
};

/** The names POST /slash/<name> accepts, sorted (the capabilities frame's `slash_commands`). */
export const SLASH_COMMAND_NAMES: readonly string[] = Object.freeze(Object.keys(SLASH_COMMANDS).sort());

export function slashRoutes(context: AttachContext) {
  const service = context.sessions;
  // One limiter for the listener (both path shapes mount this one plugin instance).
  const limiter = new CallerRateGuard(SLASH_LIMIT);
  let routes = new Elysia({ name: "spar.attach.slash" }).use(withSession);
  for (const name of SLASH_COMMAND_NAMES) {
    const slash = SLASH_COMMANDS[name] as AnyCommand;
    const path: string = `/slash/${name}`;
    routes = routes.post(
      path,
      async ({ body, target, caller }) => {
        const { key, actor } = await service.open(target, caller, "write");
        limiter.admit(caller);
        return json(200, await slash.run(body, { key, actor, caller, context }));
      },
      {
        parse: "json",
        body: slash.body,
        response: responses({ 200: slash.answer }, { body: true, extra: [404, 429, ...slash.refusals] }),
        detail: { summary: slash.summary, tags: SLASH },
      },
    );
  }
  return routes;
}
