/**
 * SessionSubagents: a session's subagent instances (D351). Launches an instance of a roster entry
 * (sync: the parent's model called it as a tool and waits for its answer; async: a background
 * launch that reports back to the parent with a prompt and a `wake` frame), records each launch
 * and end as parent rows (`subagent-start`, `subagent-end`, folded back after a restart), stops
 * one or all, lists them, pages an instance family's rows out of the log, and drains background
 * instances at shutdown. An instance found running when the session is loaded was cut by the
 * process stopping: its end row says `cut`.
 */
import type { CommittedRow, SessionEvent } from "../core/events.ts";
import { AUTO_CONTINUE_AUTHOR, continueNote } from "../core/auto-continue.ts";
import { SparError } from "../core/errors.ts";
import type { SessionKey } from "../core/session-key.ts";
import {
  BRANCH_SCAN_CAP,
  SUBAGENT_AUTHOR,
  SUBAGENT_END,
  SUBAGENT_START,
  type SubagentInstance,
  type SubagentMode,
  type SubagentSpec,
  type SubtaskTotals,
  belongsTo,
  branchEvents,
  continueMetadata,
  endMetadata,
  foldInstances,
  instanceLabel,
  launchSpellings,
  shortReport,
  startMetadata,
  subtaskTotals,
} from "../core/subagents.ts";
import type { ToolSpec } from "../core/model.ts";
import type { ActorContext } from "./actor-types.ts";
import type { TurnTools } from "./gated-tools.ts";
import type { Journal } from "./session-journal.ts";
import type { SessionGuards } from "./session-guards.ts";
import { SubagentRun } from "./subagent-run.ts";
import type { SubagentPort } from "./subagent-port.ts";

export interface SessionSubagentsDeps {
  key: SessionKey;
  context: ActorContext;
  journal: Journal;
  guards: SessionGuards;
  /** The session's permission-gated tools. */
  tools: TurnTools;
  /** A background instance ended: tell the parent (a prompt and a `wake` frame). */
  report(text: string): Promise<void>;
  /** An instance was launched: the session was active now (its row's last_touched_at). */
  touched(): void;
}

/** A page of an instance family's rows (GET /agents/{name}/events). */
export interface AgentEventsPage {
  branches: string[];
  events: CommittedRow[];
  nextSince: number;
  truncated: boolean;
}

interface Live {
  instance: SubagentInstance;
  run: SubagentRun;
  done: Promise<void>;
}

export class SessionSubagents implements SubagentPort {
  readonly #deps: SessionSubagentsDeps;
  /** Every instance this session ever launched, by label, in launch order. */
  readonly #instances = new Map<string, SubagentInstance>();
  /** Instances with a turn in flight. */
  readonly #live = new Map<string, Live>();
  /** Instances the process stopped while they ran (found at load): their rows, to carry them on. */
  readonly #cut = new Map<string, SessionEvent[]>();

  constructor(deps: SessionSubagentsDeps, rows: readonly CommittedRow[]) {
    this.#deps = deps;
    for (const instance of foldInstances(rows)) {
      this.#instances.set(instance.label, instance);
      if (instance.status === "running") this.#cut.set(instance.label, branchEvents(rows, instance.label));
    }
  }

  get roster(): readonly SubagentSpec[] {
    return this.#deps.context.subagents;
  }

  /** Some instance has a turn in flight (the session is not idle). */
  get busy(): boolean {
    return this.#live.size > 0;
  }

  /** After a load: every instance found running was cut by the process stopping; record it. */
  async recordCuts(): Promise<void> {
    const cut = [...this.#cut.keys()].flatMap((label) => this.#instances.get(label) ?? []);
    if (cut.length === 0) return;
    for (const instance of cut) {
      instance.status = "cut";
      instance.lastReport = "cut off: the daemon stopped while this subagent ran";
    }
    await this.#deps.journal.append(cut.map((instance) => this.#row(SUBAGENT_END, endMetadata(instance))));
  }

  /**
   * After a restart, auto-continue treats a cut background instance as any cut turn (its guards
   * and claim decide, its sequence capped): approved, it runs on from its own rows with the
   * continue note. A cut sync instance is not carried on: its parent's call was repaired.
   */
  async carryOnCuts(): Promise<void> {
    const { context, key, guards } = this.#deps;
    for (const [label, events] of this.#cut) {
      this.#cut.delete(label);
      const instance = this.#instances.get(label);
      const spec = this.roster.find((entry) => entry.name === instance?.name);
      if (instance === undefined || spec === undefined || instance.mode !== "async") continue;
      const last = events[events.length - 1];
      const approved = await context.autoContinue.approve({
        key,
        cause: "restart",
        interruption: last?.invocationId ?? `subagent-${label}`,
        at: last?.ts ?? instance.startedAt,
        sequence: instance.continues,
        halted: guards.halted !== undefined,
        turnInFlight: false,
      });
      if (!approved) continue;
      instance.continues += 1;
      instance.status = "running";
      delete instance.lastReport;
      await this.#deps.journal.append([this.#row(SUBAGENT_START, continueMetadata(instance))]);
      this.#start(instance, this.#run(spec, label, events), continueNote("restart"), AUTO_CONTINUE_AUTHOR);
    }
  }

  /** Every instance, in launch order. */
  list(): SubagentInstance[] {
    return [...this.#instances.values()];
  }

  /** The instances with a turn in flight now. */
  running(): Array<{ name: string; id: string }> {
    return [...this.#live.values()].map(({ instance }) => ({ name: instance.name, id: instance.label }));
  }

  subtasks(): SubtaskTotals {
    return subtaskTotals(this.#instances.values());
  }

  /**
   * Launch an instance of `name` on `task`. Sync resolves when it has answered; async resolves
   * once its start row is committed and runs on, reporting back when it ends.
   */
  async launch(
    name: string,
    task: string,
    mode: SubagentMode,
    signal?: AbortSignal,
  ): Promise<{ instance: SubagentInstance; answer: string }> {
    const spec = this.roster.find((entry) => entry.name === name);
    if (spec === undefined)
      throw new SparError("not_found", `no subagent named ${JSON.stringify(name)}: ${this.#available()}`);
    if (this.#deps.context.isShuttingDown()) throw new SparError("shutting_down", "daemon is shutting down");
    const label = instanceLabel(name, mode, new Set(this.#instances.keys()));
    const instance: SubagentInstance = {
      name,
      label,
      mode,
      task,
      startedAt: this.#deps.context.now().toISOString(),
      status: "running",
      turns: 0,
      inputTokens: 0,
      outputTokens: 0,
      costUsd: 0,
      continues: 0,
    };
    this.#instances.set(label, instance);
    this.#deps.touched();
    try {
      await this.#deps.journal.append([this.#row(SUBAGENT_START, startMetadata(instance))]);
    } catch (error) {
      this.#instances.delete(label);
      throw error;
    }
    const driven = this.#start(instance, this.#run(spec, label), task, "user", signal);
    return { instance, answer: mode === "sync" ? await driven : "" };
  }

  /**
   * Stop the instance with this label, or every running instance of this name. Undefined when no
   * instance by that name or label was ever launched here.
   */
  async stop(nameOrLabel: string): Promise<{ stopped: boolean; status: string } | undefined> {
    const exact = this.#instances.get(nameOrLabel);
    const matching = exact ? [exact] : [...this.#instances.values()].filter((i) => i.name === nameOrLabel);
    if (matching.length === 0) return undefined;
    const running = matching.filter((instance) => this.#live.has(instance.label));
    await Promise.all(running.map((instance) => this.#stopLive(instance.label, "stopped")));
    const last = matching[matching.length - 1];
    return { stopped: running.length > 0, status: last?.status ?? "stopped" };
  }

  /** Stop every running instance (POST /interrupt with stop_subagents); resolves with what was stopped. */
  async stopAll(): Promise<Array<{ name: string; id: string }>> {
    const running = this.running();
    await Promise.all(running.map(({ id }) => this.#stopLive(id, "stopped")));
    return running;
  }

  /**
   * Shutdown: give running instances up to `ms` to end by themselves, then stop the stragglers;
   * resolves with their labels.
   */
  async drain(ms: number): Promise<string[]> {
    if (this.#live.size === 0) return [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const window = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, ms);
    });
    await Promise.race([Promise.all([...this.#live.values()].map((live) => live.done)), window]);
    clearTimeout(timer);
    const stragglers = [...this.#live.keys()];
    await Promise.all(stragglers.map((label) => this.#stopLive(label, "canceled")));
    return stragglers;
  }

  /**
   * A page of the rows of `name`'s instances, after `since`, at most `limit`. 404 (SparError with
   * the names that exist) when the name resolves to nothing here and in the roster.
   */
  async events(name: string, since: number, limit: number): Promise<AgentEventsPage> {
    const labels = [...this.#instances.keys()];
    const capped = labels.length > BRANCH_SCAN_CAP;
    const known = this.roster.some((spec) => spec.name === name) || labels.some((label) => belongsTo(label, name));
    const suffixed = labels
      .filter((label) => belongsTo(label, name) && !launchSpellings(name).includes(label))
      .slice(0, BRANCH_SCAN_CAP);
    const branches = [...launchSpellings(name), ...suffixed.sort()];
    if (!known && !capped)
      throw new SparError("not_found", `no subagent named ${JSON.stringify(name)} in this session`, {
        agent: name,
        parent_session_id: this.#deps.key.id,
        branches,
        available: this.#availableNames(),
      });
    const events: CommittedRow[] = [];
    let cursor = since;
    let truncated = false;
    for (;;) {
      const page = await this.#deps.context.store.read(this.#deps.key, cursor, 1000);
      if (page.length === 0) break;
      for (const row of page) {
        const branch = row.event.branch;
        if (branch === undefined || !belongsTo(branch, name)) continue;
        if (events.length === limit) {
          truncated = true;
          break;
        }
        events.push(row);
      }
      if (truncated) break;
      cursor = page[page.length - 1]?.seq ?? cursor;
    }
    const nextSince = events[events.length - 1]?.seq ?? since;
    return { branches, events, nextSince, truncated };
  }

  #run(spec: SubagentSpec, label: string, history: readonly SessionEvent[] = []): SubagentRun {
    return new SubagentRun({
      spec,
      label,
      context: this.#deps.context,
      journal: this.#deps.journal,
      guards: this.#deps.guards,
      tools: this.#deps.tools,
      offered: () => this.#offered(),
      history,
    });
  }

  /** Drive the instance as a live one (a stop or the caller's signal cancels it); resolves with its answer. */
  #start(instance: SubagentInstance, run: SubagentRun, prompt: string, author: string, signal?: AbortSignal) {
    const label = instance.label;
    const stop = () => this.#stopLive(label, "canceled");
    signal?.addEventListener("abort", stop, { once: true });
    const driven = this.#drive(instance, run, prompt, author).finally(() => {
      signal?.removeEventListener("abort", stop);
      this.#live.delete(label);
    });
    this.#live.set(label, { instance, run, done: driven.then(() => undefined) });
    return driven;
  }

  /** Run the instance's turn, record its end and (async) report it; resolves with its answer. */
  async #drive(instance: SubagentInstance, run: SubagentRun, prompt: string, author: string): Promise<string> {
    const { end, text } = await run.turn(prompt, author);
    const totals = run.ledger.toUsageInfo().overall;
    const spent = {
      turns: totals.turns,
      inputTokens: totals.input_tokens,
      outputTokens: totals.output_tokens,
      costUsd: totals.cost_usd,
    };
    instance.turns += spent.turns;
    instance.inputTokens += spent.inputTokens;
    instance.outputTokens += spent.outputTokens;
    instance.costUsd += spent.costUsd;
    if (instance.status === "running") instance.status = end.status;
    instance.lastReport = shortReport(end.status === "completed" ? text : (end.error?.message ?? end.status));
    await this.#deps.journal
      .append([this.#row(SUBAGENT_END, endMetadata(instance, spent))])
      .catch((error: unknown) =>
        this.#deps.context.logError(`subagent ${instance.label}: end row not written: ${String(error)}`),
      );
    // An operator's stop is not news to the parent: only an instance that ended by itself reports.
    if (instance.mode === "async" && instance.status !== "stopped" && !this.#deps.context.isShuttingDown()) {
      await this.#deps
        .report(`[subagent ${instance.label} ${instance.status}]\n${instance.lastReport ?? ""}`)
        .catch((error: unknown) => this.#deps.context.logError(`subagent ${instance.label}: report: ${String(error)}`));
    }
    return end.status === "completed" ? text : (instance.lastReport ?? "");
  }

  async #stopLive(label: string, status: "stopped" | "canceled"): Promise<void> {
    const live = this.#live.get(label);
    if (live === undefined) return;
    if (live.instance.status === "running") live.instance.status = status;
    live.run.cancel("operator");
    await live.done;
  }

  #offered(): ToolSpec[] {
    return this.#deps.context.toolSpecs().filter((tool) => !this.roster.some((spec) => spec.name === tool.name));
  }

  #row(name: string, metadata: Record<string, unknown>) {
    return {
      ...this.#deps.journal.header(`subagent-${String(metadata.branch)}`, SUBAGENT_AUTHOR),
      kind: "audit" as const,
      name,
      metadata,
    };
  }

  #availableNames(): string[] {
    const names = new Set([
      ...this.roster.map((spec) => spec.name),
      ...[...this.#instances.values()].map((i) => i.name),
    ]);
    return [...names].sort();
  }

  #available(): string {
    const names = this.#availableNames();
    return names.length === 0 ? "no subagents are configured" : `configured: ${names.join(", ")}`;
  }
}
