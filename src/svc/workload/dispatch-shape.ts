/**
 * Which dispatch shape a workload runs as and whether its roster fits it
 * (docs/svc.md#dispatch-shapes): `--dispatch` when typed, else the bundle's `dispatch`, else
 * `coordinator`; `auto` picks fanout with a `_synthesis` specialist, graph with a SingleTurn and a
 * `_fallback`, otherwise coordinator (never bounded). Then the shape's own requirements. Pure.
 */
import { type Result, err, ok } from "../../core/result.ts";
import { DISPATCH_SETTINGS } from "./bundle-schema.ts";
import type { DispatchSetting, DispatchShape, Specialist } from "./workload.ts";

export const SYNTHESIS = "_synthesis";
export const FALLBACK = "_fallback";

export interface DispatchChoice {
  shape: DispatchShape;
  /** Where it came from, for messages: `--dispatch`, `workload.yaml` or `default`. */
  origin: string;
}

function isSetting(value: string): value is DispatchSetting {
  return (DISPATCH_SETTINGS as readonly string[]).includes(value);
}

/** The precedence rule; `flag` is `--dispatch` only when the operator typed it. */
export function chooseDispatch(
  flag: string | undefined,
  declared: DispatchSetting | undefined,
  specialists: readonly Specialist[],
): Result<DispatchChoice> {
  if (flag !== undefined && !isSetting(flag))
    return err(`--dispatch: expected one of ${DISPATCH_SETTINGS.join(", ")}, got ${JSON.stringify(flag)}`);
  const origin = flag !== undefined ? "--dispatch" : declared !== undefined ? "workload.yaml" : "default";
  const setting: DispatchSetting = flag ?? declared ?? "coordinator";
  if (setting !== "auto") return ok({ shape: setting, origin });
  return ok({ shape: autoShape(specialists), origin: `${origin} auto` });
}

function autoShape(specialists: readonly Specialist[]): DispatchShape {
  if (specialists.some((specialist) => specialist.name === SYNTHESIS)) return "fanout";
  const hasSingleTurn = specialists.some((specialist) => specialist.mode === "SingleTurn");
  if (hasSingleTurn && specialists.some((specialist) => specialist.name === FALLBACK)) return "graph";
  return "coordinator";
}

/** The graph's classifier: the first SingleTurn specialist in spec order. */
export function graphClassifier(specialists: readonly Specialist[]): Specialist | undefined {
  return specialists.find((specialist) => specialist.mode === "SingleTurn");
}

/** The fan-out analysts: every Task specialist except `_synthesis`. */
export function fanoutAnalysts(specialists: readonly Specialist[]): Specialist[] {
  return specialists.filter((specialist) => specialist.mode === "Task" && specialist.name !== SYNTHESIS);
}

function graphProblems(specialists: readonly Specialist[], origin: string): string[] {
  if (graphClassifier(specialists) !== undefined) return [];
  return [
    `dispatch graph (${origin}) requires a SingleTurn classifier specialist in the roster: give one specialist mode: SingleTurn`,
  ];
}

function fanoutProblems(specialists: readonly Specialist[], origin: string): string[] {
  const problems: string[] = [];
  if (!specialists.some((specialist) => specialist.name === SYNTHESIS))
    problems.push(
      `dispatch fanout (${origin}) requires a specialist named ${SYNTHESIS}: it merges the analysts' reports`,
    );
  for (const analyst of fanoutAnalysts(specialists)) {
    if (analyst.capability !== "read_only")
      problems.push(
        `fanout analyst "${analyst.name}" must be read-only (it has capability: ${analyst.capability}): a fan-out roster only reads`,
      );
    const mcp = analyst.tools.mcp;
    if (mcp === "inherit" || mcp.some((grant) => grant.tools === undefined))
      problems.push(
        `fanout analyst "${analyst.name}" must list its tools: give every tools.mcp entry a tools: list, or write mcp: []`,
      );
  }
  return problems;
}

function boundedProblems(specialists: readonly Specialist[], plannerEnabled: boolean, origin: string): string[] {
  if (specialists.length !== 1)
    return [
      `dispatch bounded (${origin}) requires exactly one specialist, found ${specialists.length}` +
        (specialists.length > 0 ? ` (${specialists.map((specialist) => specialist.name).join(", ")})` : ""),
    ];
  const [only] = specialists as [Specialist];
  const problems: string[] = [];
  if (only.mode !== "SingleTurn")
    problems.push(`bounded specialist "${only.name}" must be mode: SingleTurn (one model call), not ${only.mode}`);
  if (only.outputSchema === undefined)
    problems.push(`bounded specialist "${only.name}" must declare an output_schema: its reply is validated against it`);
  if (plannerEnabled) problems.push("dispatch bounded cannot run with planner.enabled: true: turn the planner off");
  return problems;
}

/** The chosen shape's requirements over the composed spec set; each problem names the fix. */
export function dispatchProblems(
  choice: DispatchChoice,
  specialists: readonly Specialist[],
  plannerEnabled: boolean,
): string[] {
  switch (choice.shape) {
    case "coordinator":
      return [];
    case "graph":
      return graphProblems(specialists, choice.origin);
    case "fanout":
      return fanoutProblems(specialists, choice.origin);
    case "bounded":
      return boundedProblems(specialists, plannerEnabled, choice.origin);
  }
}
