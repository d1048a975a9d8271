/** One grant a watcher part needs, as a SelfSubjectAccessReview asks for it. Pure type. */
export interface AccessCheck {
  verb: string;
  /** "" for the core group. */
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
}
