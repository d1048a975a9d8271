/** One grant a watcher part needs, as a SelfSubjectAccessReview asks for it. Pure type. */
export interface AccessCheck {
  verb: string;
  /** "" for the core group. */
  group: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  /** One object's name (`get configmaps cluster-autoscaler-status` in kube-system), D394. */
  name?: string;
}
