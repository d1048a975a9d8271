/** The build version reported by capabilities, the agent card and `spar --version`. */
import packageJson from "../../package.json" with { type: "json" };

export const SPAR_VERSION: string = packageJson.version;
