/**
 * Tool-host worker entrypoint: executes approved tool calls off the main thread and owns the
 * child processes they start (bash process groups; MCP stdio servers later). Speaks only the
 * typed protocol of src/runtime/tool-host-channel.ts. Thin by design.
 */
import { killAllBashGroups } from "../src/tools/bash-tool.ts";
import { type BuiltinSettings, childEnvironment, runBuiltin } from "../src/tools/builtin-tools.ts";
import { type FromToolHost, TOOL_HOST_VERSION, isToToolHost } from "../src/runtime/tool-host-channel.ts";

declare const self: Worker;

const running = new Map<number, AbortController>();
let settings: BuiltinSettings = { root: process.cwd(), disabled: new Set() };

function post(message: FromToolHost): void {
  self.postMessage(message);
}

async function run(id: number, call: Parameters<typeof runBuiltin>[0]): Promise<void> {
  const controller = new AbortController();
  running.set(id, controller);
  try {
    const outcome = await runBuiltin(call, settings, controller.signal);
    post({ type: "result", id, result: outcome });
  } catch (error) {
    post({ type: "result", id, result: { output: { error: `tool host failed: ${error instanceof Error ? error.message : String(error)}` }, isError: true } });
  } finally {
    running.delete(id);
  }
}

self.onmessage = (event: MessageEvent) => {
  const message = event.data;
  if (!isToToolHost(message)) return;
  switch (message.type) {
    case "hello":
      settings = { root: message.settings.root, disabled: new Set(message.settings.disabled), env: childEnvironment(message.settings.hiddenEnv ?? []) };
      post({ type: "ready", version: TOOL_HOST_VERSION });
      break;
    case "run":
      void run(message.id, message.call);
      break;
    case "cancel":
      running.get(message.id)?.abort(new DOMException("the turn was cancelled", "AbortError"));
      break;
    case "shutdown":
      for (const controller of running.values()) controller.abort(new DOMException("the daemon is shutting down", "AbortError"));
      killAllBashGroups();
      post({ type: "closed" });
      break;
  }
};
