// The agent process: loads role folders (`services/<role>/role.ts`) by name and runs them.
export { loadRoles, roleDir, type LoadedRole } from "./roles.js";
export { startRoles } from "./run.js";
