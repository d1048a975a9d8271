/**
 * The prompt a turn gives the model from the inbox messages it drained. One message is passed
 * through verbatim; several queued between turns become one numbered bundle, so the model
 * answers once. Pure.
 */
export function bundleInbox(messages: readonly string[]): string {
  if (messages.length === 1) return messages[0] ?? "";
  const lines = messages.map((message, index) => `${index + 1}. ${message}`);
  return [`[${messages.length} messages arrived while you were busy; answer them together, once]`, ...lines].join("\n");
}

/** A session title from its first prompt: whitespace collapsed, at most 60 runes. */
export function titleFromPrompt(prompt: string): string | undefined {
  const collapsed = prompt.replace(/\s+/g, " ").trim();
  if (collapsed === "") return undefined;
  const runes = Array.from(collapsed);
  return runes.length <= 60 ? collapsed : `${runes.slice(0, 59).join("")}…`;
}
