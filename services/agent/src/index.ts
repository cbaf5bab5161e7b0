// The agent process: loads role folders (`services/<role>/role.ts`) by name and runs them.
export { loadRoles, type LoadedRole } from "./roles.js";
export { startRoles } from "./run.js";
