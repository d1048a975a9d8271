/**
 * The durable floor's turn worker (bench/baseline-a2a-server.ts `--durable`): answers each turn
 * message with its text, as the echo model does, so a task pays one structured-clone round trip
 * to a worker thread and nothing else.
 */
declare const self: Worker;

self.onmessage = (event: MessageEvent<{ id: number; text: string }>) => {
  self.postMessage({ id: event.data.id, reply: event.data.text });
};
