import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { apiKeyEntry, generateApiKey, keyNameProblem } from "@agentmesh/gateway";

// A new API key of the gateway for one owner:
//
//   pnpm gateway:key <name>
//
// prints the key once (only its hash is configured, so it cannot be shown again) and the entry
// to add to AGENTMESH_API_KEYS or AGENTMESH_API_KEYS_FILE. The name owns the sessions the key
// creates; it must match [a-z0-9][a-z0-9_-]{0,63} and may not be `anonymous`.

/** What the command prints and its exit code, for `argv` (the arguments after the script). */
export function gatewayKey(
  argv: readonly string[],
  newKey: () => string = generateApiKey,
): { code: number; stdout: string; stderr: string } {
  const [name, ...rest] = argv;
  if (name === undefined || rest.length > 0) {
    return {
      code: 2,
      stdout: "",
      stderr:
        "usage: pnpm gateway:key <name>   (one name, [a-z0-9][a-z0-9_-]{0,63}: the owner of the key's sessions)\n",
    };
  }
  const problem = keyNameProblem(name);
  if (problem !== null) return { code: 2, stdout: "", stderr: `gateway:key: no key made: ${problem}\n` };
  const key = newKey();
  const stdout = [
    `API key of ${name}; it is shown only now, so hand it to its client or secret store at once:`,
    "",
    `  ${key}`,
    "",
    "Add this entry to AGENTMESH_API_KEYS (comma-separated) or as a line of AGENTMESH_API_KEYS_FILE;",
    "the gateway reads its keys when it starts:",
    "",
    `  ${apiKeyEntry(name, key)}`,
    "",
  ].join("\n");
  return { code: 0, stdout, stderr: "" };
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const r = gatewayKey(process.argv.slice(2));
  process.stdout.write(r.stdout);
  process.stderr.write(r.stderr);
  process.exitCode = r.code;
}
