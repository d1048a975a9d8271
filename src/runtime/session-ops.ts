/**
 * The session operations a daemon can relay to the daemon serving the session (D489): each takes
 * the live actor and JSON arguments and resolves to a JSON answer, so it runs the same on the
 * daemon that received the request (it holds the session) and on the holder (a committed
 * command). Authorization is done by the receiving daemon before anything is relayed.
 */
import type { ResetRequest } from "../core/guardrails.ts";
import type { ResumeMode } from "../core/pause-gate.ts";
import type { AnswerInput } from "../core/permission-answer.ts";
import type { SessionAbort } from "../core/session-store.ts";
import type { InjectResult, InterruptResult, StatusInfo, SubagentRef } from "./actor-types.ts";
import type { ResetOutcome } from "./session-guards.ts";
import type { UsageInfo } from "../core/usage.ts";
import type { ContextInfo } from "./history.ts";
import type { SessionActor, SubtaskInfo } from "./session-actor.ts";
import type { GuardrailInfo } from "../core/guardrails.ts";
import type { PermsInfo } from "../core/permission-gate.ts";
import type { ToolResultEvent } from "../core/events.ts";

export interface SessionOps {
  inject: {
    args: { message: string; wake: boolean; idempotencyKey?: string };
    result: InjectResult;
  };
  wake: { args: { prompt?: string }; result: { injected: InjectResult | null } };
  interrupt: {
    args: { hold: boolean; by?: string; stopSubagents: boolean };
    result: { result: InterruptResult; running: SubagentRef[]; stopped: SubagentRef[] };
  };
  pause: { args: { reason?: string }; result: { transitioned: boolean; status: StatusInfo } };
  resume: { args: { mode: ResumeMode; steer?: string }; result: { resumed: boolean; state: StatusInfo["state"] } };
  abort: { args: { reason: string; by: string }; result: SessionAbort };
  reset: { args: { request: ResetRequest; by?: string }; result: ResetOutcome };
  respond: { args: { id: string; decision: string; input: AnswerInput }; result: { approver: string | null } };
  permsMode: { args: { mode: string; by?: string }; result: { previous: string; mode: string } };
  permsAllow: { args: { patterns: string[] }; result: Record<string, never> };
  permsDeny: { args: { patterns: string[] }; result: Record<string, never> };
  title: { args: { title: string }; result: { title?: string; persisted: boolean; detail?: string } };
  // Reads a dashboard makes: answered from the serving daemon's live state.
  status: { args: Record<string, never>; result: StatusInfo };
  usage: { args: Record<string, never>; result: UsageInfo };
  context: { args: Record<string, never>; result: ContextInfo & SubtaskInfo };
  guardrails: { args: Record<string, never>; result: GuardrailInfo };
  perms: { args: Record<string, never>; result: PermsInfo };
  toolResult: { args: { callId: string }; result: { event: ToolResultEvent | null } };
}

export type SessionOp = keyof SessionOps;

type Runner<K extends SessionOp> = (
  actor: SessionActor,
  args: SessionOps[K]["args"],
) => Promise<SessionOps[K]["result"]>;

export const SESSION_OPS: { [K in SessionOp]: Runner<K> } = {
  inject: (actor, args) =>
    actor.inject(
      args.message,
      args.wake,
      args.idempotencyKey === undefined ? {} : { idempotencyKey: args.idempotencyKey },
    ),
  wake: async (actor, args) => ({ injected: (await actor.wake(args.prompt)) ?? null }),
  interrupt: async (actor, args) => {
    const running = actor.subagents.running();
    const [result, stopped] = await Promise.all([
      actor.interrupt(args.hold, args.by),
      args.stopSubagents ? actor.subagents.stopAll() : Promise.resolve([]),
    ]);
    return { result, running, stopped };
  },
  pause: async (actor, args) => {
    const { transitioned } = actor.pause(args.reason);
    return { transitioned, status: actor.status() };
  },
  resume: async (actor, args) => {
    const { resumed } = await actor.resume(args.mode, args.steer);
    return { resumed, state: actor.status().state };
  },
  abort: (actor, args) => actor.abort(args.reason, args.by),
  reset: (actor, args) => actor.resetGuardrails(args.request, args.by),
  respond: async (actor, args) => {
    const answer = await actor.tools.respond(args.id, args.decision, args.input);
    if (!answer.ok) throw answer.error;
    return { approver: answer.value.approver ?? null };
  },
  permsMode: async (actor, args) => {
    const change = await actor.tools.setMode(args.mode, args.by);
    if (!change.ok) throw change.error;
    return { previous: change.value.previous, mode: change.value.mode };
  },
  permsAllow: async (actor, args) => {
    const added = actor.tools.gate.addAllow(args.patterns);
    if (!added.ok) throw added.error;
    return {};
  },
  permsDeny: async (actor, args) => {
    const added = actor.tools.gate.addDeny(args.patterns);
    if (!added.ok) throw added.error;
    return {};
  },
  title: (actor, args) => actor.setTitle(args.title),
  status: (actor) => actor.currentStatus(),
  usage: (actor) => actor.usageInfo(),
  context: async (actor) => actor.contextInfo(),
  guardrails: async (actor) => actor.guards.info(),
  perms: async (actor) => actor.tools.info(),
  toolResult: async (actor, args) => ({ event: (await actor.toolResult(args.callId)) ?? null }),
};

export function isSessionOp(op: string): op is SessionOp {
  return Object.hasOwn(SESSION_OPS, op);
}
