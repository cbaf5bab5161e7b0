import { ENV_VARS } from "@agentmesh/service-kit";

// Prints the README configuration table from the code's list of environment variables.
for (const v of ENV_VARS) {
  console.log(`| \`${v.name}\` | ${v.default === "—" || v.default.startsWith("—") ? v.default : `\`${v.default}\``} | ${v.usedBy.join(", ")} | ${v.description} |`);
}
