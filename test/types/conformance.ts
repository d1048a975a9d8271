/**
 * Type-level checks of spar's wire shapes against a protocol SDK's own types (D348), for files
 * that tsc compiles and nothing runs (`*.type-test.ts`): a shape that drifts from the SDK's fails
 * `tsc`, and the error names it. Two checks per table of [ours, theirs] pairs:
 * - `Misfits`: the pairs whose first is not assignable to the second (a field renamed, retyped,
 *   made optional, or dropped while required);
 * - `Unnamed`: the field paths of ours the SDK's type does not have at all (a misspelled or invented
 *   field, which assignability lets through when it is optional).
 * Use both as `NoneOf<...>`: tsc then says "Type '"task.status.stat"' does not satisfy the
 * constraint 'never'".
 */

/** Fails to compile unless T is never. */
export type NoneOf<T extends never> = T;

/**
 * Index signatures removed, all the way down: a loose valibot schema's `[key: string]: unknown`
 * (an SDK interface has none, and TS assigns an interface to no index signature).
 */
export type Known<T> = T extends readonly (infer U)[]
  ? Known<U>[]
  : T extends object
    ? { [K in keyof T as string extends K ? never : number extends K ? never : K]: Known<T[K]> }
    : T;

/** The keys of the pairs whose first is not assignable to the second. */
export type Misfits<Pairs extends Record<string, [unknown, unknown]>> = {
  [K in keyof Pairs & string]: Pairs[K][0] extends Pairs[K][1] ? never : K;
}[keyof Pairs & string];

/** The field paths of each pair's first that its second does not name, prefixed by the pair's key. */
export type UnnamedIn<Pairs extends Record<string, [unknown, unknown]>> = {
  [K in keyof Pairs & string]: Unnamed<Pairs[K][0], Pairs[K][1], K>;
}[keyof Pairs & string];

type AnyKey<T> = T extends unknown ? keyof T : never;
type Element<T> = T extends readonly (infer E)[] ? E : never;
type Member<T, K extends PropertyKey> = T extends unknown ? (K extends keyof T ? T[K] : never) : never;

/** The field paths of `O` (under `Path`) that `T` does not have; a union's members are checked each. */
export type Unnamed<O, T, Path extends string = ""> = unknown extends T
  ? never
  : O extends readonly (infer E)[]
    ? Unnamed<E, Element<NonNullable<T>>, `${Path}[]`>
    : O extends object
      ? {
          [K in keyof Known<O> & string]: K extends AnyKey<NonNullable<T>>
            ? Unnamed<NonNullable<Known<O>[K]>, Member<NonNullable<T>, K>, `${Path}.${K}`>
            : `${Path}.${K}`;
        }[keyof Known<O> & string]
      : never;
