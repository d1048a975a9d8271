/**
 * The shape runner of a workload's dispatch (docs/svc.md#dispatch-shapes): graph, fanout or
 * bounded; none for coordinator, whose coordinator is a model (SvcExecutor).
 */
import type { Workload } from "../workload/workload.ts";
import type { AgentRoster } from "./agent-roster.ts";
import { BoundedDispatch } from "./bounded-dispatch.ts";
import { FanoutDispatch } from "./fanout-dispatch.ts";
import type { ShapeRunner } from "./dispatch-step.ts";
import { GraphDispatch } from "./graph-dispatch.ts";
import type { ToolSchemas } from "./tool-schemas.ts";

export function shapeRunner(workload: Workload, roster: AgentRoster, schemas: ToolSchemas): ShapeRunner | undefined {
  switch (workload.dispatch) {
    case "coordinator":
      return undefined;
    case "graph":
      return GraphDispatch.forWorkload(workload, roster);
    case "fanout":
      return FanoutDispatch.forWorkload(workload, roster);
    case "bounded":
      return BoundedDispatch.forWorkload(workload, roster, schemas);
  }
}
