/**
 * The vocabulary of settings, shared by every command and by the surfaces that declare their own
 * settings: one declarative `FlagSpec` per setting (name, kind, config key, default, bounds,
 * choices, help) and the value a parsed flag holds. Data only; src/config/flag-parser.ts reads
 * argv, src/config/setting-reader.ts reads a setting (flag, then config key, then default).
 */

export type FlagKind = "string" | "bool" | "int" | "float" | "duration" | "repeatable";

export type FlagValue = string | boolean | number;

/** Bounds of a numeric setting (durations in milliseconds). `zeroOk` admits 0 beside the range. */
export interface Bounds {
  min?: number;
  /** Strictly above. */
  above?: number;
  max?: number;
  /** Strictly below. */
  below?: number;
  zeroOk?: boolean;
}

export interface FlagSpec {
  name: string;
  kind: FlagKind;
  help: string;
  /** Config-file key that sets the same value (flags win). */
  configKey?: string;
  /** Default in the setting's own notation, converted by the same code as a flag value. */
  defaultValue?: string;
  /** Shown in help instead of `defaultValue` (or when the default is not a literal value). */
  defaultText?: string;
  bounds?: Bounds;
  /** Allowed string values. */
  choices?: readonly string[];
  /** Part of a frozen core surface (renaming or removing it is a breaking change). */
  core?: true;
}

/** What help and the flag reference show as the default. */
export function shownDefault(spec: FlagSpec): string | undefined {
  return spec.defaultText ?? spec.defaultValue;
}
