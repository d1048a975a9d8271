/**
 * SessionKey: a session is named by its app and its id. The bootstrap session of a
 * single-session daemon is `default` (D4). Pure.
 */
export interface SessionKey {
  app: string;
  id: string;
}

export const DEFAULT_APP = "spar";
export const DEFAULT_SESSION_ID = "default";
/** The one fixed caller of anonymous single-user mode (D4). */
export const LOCAL_CALLER = "local";

export function sessionKeyString(key: SessionKey): string {
  return `${key.app}/${key.id}`;
}

export function sameSession(a: SessionKey, b: SessionKey): boolean {
  return a.app === b.app && a.id === b.id;
}

/** Ids and app names travel in URL paths: printable, no slash, bounded. */
export function isValidName(value: string): boolean {
  return /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,127}$/.test(value);
}
