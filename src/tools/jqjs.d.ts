/** Types of @michaelhomer/jqjs (a pure-JavaScript jq, used by wait_and_verify's expect_jq, D468). */
declare module "@michaelhomer/jqjs" {
  /** A compiled jq program: every output for one input. Throws on an evaluation error. */
  type JqProgram = (input: unknown) => Iterable<unknown>;
  const jq: { compile(program: string): JqProgram };
  export default jq;
}
