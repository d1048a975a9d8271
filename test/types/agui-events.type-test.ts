/**
 * svc's AG-UI wire (src/svc/agui/agui-events.ts, src/svc/agui/run-input.ts) held to the protocol's
 * own types, `@ag-ui/core` 1.0, by tsc alone (D348): every event svc sends fits the SDK's event of
 * its `type` and names no field that event lacks; the run input svc reads accepts whatever the
 * SDK's `RunAgentInput` allows a client to send, and reads no field it lacks. Compiled, never run.
 */
import type { Event, RunAgentInput } from "@ag-ui/core";
import type * as v from "valibot";
import type { AguiEvent } from "../../src/svc/agui/agui-events.ts";
import type { RunAgentInputSchema } from "../../src/svc/agui/run-input.ts";
import type { Known, Misfits, NoneOf, UnnamedIn } from "./conformance.ts";

/** The SDK's event of a wire `type`, with its enum `type` spelled as the string it is on the wire. */
type SdkEvent<T extends string> =
  Extract<Event, { type: T }> extends infer E
    ? E extends { type: infer K extends string }
      ? Omit<E, "type"> & { type: `${K}` }
      : never
    : never;

/** Each event svc sends, against the SDK's event of its type (an event the SDK lacks fits nothing). */
type Sent = { [T in AguiEvent["type"]]: [Extract<AguiEvent, { type: T }>, SdkEvent<T>] };

type Read = {
  "run-input": [RunAgentInput, Known<v.InferInput<typeof RunAgentInputSchema>>];
};

type ReadFields = {
  "run-input": [v.InferOutput<typeof RunAgentInputSchema>, RunAgentInput];
};

export type AguiWireConforms = [
  NoneOf<Misfits<Sent>>,
  NoneOf<UnnamedIn<Sent>>,
  NoneOf<Misfits<Read>>,
  NoneOf<UnnamedIn<ReadFields>>,
];

/** Drifted events: a required field renamed, a type the SDK lacks, an optional field it does not name. */
type Renamed = { type: "TOOL_CALL_START"; toolCallId: string; name: string; parentMessageId: string };
type Invented = { type: "RUN_PAUSED"; runId: string };
type Extra = { type: "RUN_ERROR"; message: string; retryable?: boolean };

// The checks bite: each drifted event fails them (each line must fail to compile).
export type AguiChecksBite = [
  // @ts-expect-error a renamed required field no longer fits the SDK's TOOL_CALL_START
  NoneOf<Misfits<{ renamed: [Renamed, SdkEvent<"TOOL_CALL_START">] }>>,
  // @ts-expect-error an event type the SDK does not have fits nothing
  NoneOf<Misfits<{ invented: [Invented, SdkEvent<"RUN_PAUSED">] }>>,
  // @ts-expect-error an optional field the SDK does not name is caught by its path
  NoneOf<UnnamedIn<{ extra: [Extra, SdkEvent<"RUN_ERROR">] }>>,
];
