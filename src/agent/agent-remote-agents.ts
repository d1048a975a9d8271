/**
 * The remote A2A agents `spar agent` offers through `call_a2a` (D?): the declarations in
 * `<cwd>/.agents/a2a/*.yaml` (svc's `a2a/*.yaml` format, D225; the same project folder serves
 * both daemons), and with `--attach-peer-hub` the peers registered with the label
 * `protocol=a2a`. A declaration that fails to parse, or two declaring one name, fail startup.
 * Undefined when neither source can ever name an agent (no file, no hub): the tool is not offered.
 */
import { join } from "node:path";
import {
  type PeerListing,
  type RemoteAgentDirectory,
  combinedDirectory,
  peerDirectory,
} from "../a2a-client/remote-agent-directory.ts";
import { declaredDirectory } from "../a2a-client/remote-agent-wiring.ts";
import { SparError } from "../core/errors.ts";
import { loadRemoteAgents } from "../svc/workload/named-workload.ts";

export function agentRemoteAgents(
  cwd: string,
  peers: { list(): readonly PeerListing[] } | undefined,
): RemoteAgentDirectory | undefined {
  const declared = loadRemoteAgents(join(cwd, ".agents", "a2a"));
  if (!declared.ok) throw new SparError("bad_request", declared.error);
  const sources: RemoteAgentDirectory[] = [];
  const files = declaredDirectory(declared.value);
  if (files !== undefined) sources.push(files);
  if (peers !== undefined) sources.push(peerDirectory(() => peers.list()));
  return sources.length === 0 ? undefined : combinedDirectory(...sources);
}
