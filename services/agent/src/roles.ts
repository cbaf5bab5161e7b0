import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { RoleName } from "@agentmesh/contracts";
import type { RoleModule } from "@agentmesh/agent-kit";

/** A role folder, loaded: `services/<role>/` with its `role.ts` and prompt files. */
export interface LoadedRole {
  readonly role: RoleName;
  /** The role's folder: its prompt files are read from here. */
  readonly dir: string;
  readonly module: RoleModule;
}

/**
 * The role module inside a role folder: its source under tsx and vitest, the file `pnpm build`
 * compiled from it when this module is itself compiled (`services/agent/dist/roles.js`).
 */
const ROLE_MODULE = import.meta.url.endsWith(".ts") ? "role.ts" : "dist/role.js";

/** Role modules a process bundle was built with (scripts/build-process.ts), each loaded when asked for. */
export type BundledRoles = Readonly<Partial<Record<RoleName, () => Promise<RoleModule>>>>;

/**
 * Loads the role folders of the named roles (every role in the registry when `names` is empty).
 * A name outside the registry, a missing folder or a `role.ts` whose default export serves
 * another role is an error naming the role. A role in `bundled` is loaded from the process bundle
 * instead of imported from its folder.
 */
export async function loadRoles(names: readonly string[], bundled: BundledRoles = {}): Promise<LoadedRole[]> {
  const unknown = names.filter((n) => !RoleName.safeParse(n).success);
  if (unknown.length)
    throw new Error(`unknown role(s): ${unknown.join(", ")}; the roles are ${RoleName.options.join(", ")}`);
  const wanted = names.length ? names.map((n) => RoleName.parse(n)) : RoleName.options;
  // a process bundle holds only its roles: it cannot import another role's folder
  const outside = Object.keys(bundled).length ? wanted.filter((r) => !bundled[r]) : [];
  if (outside.length)
    throw new Error(
      `this process bundle holds the role(s) ${Object.keys(bundled).join(", ")}, not ${outside.join(", ")}; run several roles with services/agent/dist/main.esm.js`,
    );
  const loaded: LoadedRole[] = [];
  for (const role of wanted) {
    // `services/<role>/`, beside this package
    const folder = new URL(`../../${role}/`, import.meta.url);
    const dir = fileURLToPath(folder);
    const fromBundle = bundled[role];
    if (fromBundle) {
      const module = await fromBundle();
      if (!module || module.role !== role)
        throw new Error(`role ${role}: the bundled role module does not serve ${role}`);
      loaded.push({ role, dir, module });
      continue;
    }
    const file = new URL(ROLE_MODULE, folder);
    if (!existsSync(file))
      throw new Error(
        `role ${role}: ${fileURLToPath(file)} does not exist (a role is one folder: services/${role}/role.ts${ROLE_MODULE === "role.ts" ? "" : ", compiled by pnpm build"})`,
      );
    const imported = (await import(file.href)) as { default?: RoleModule };
    const module = imported.default;
    if (!module || module.role !== role)
      throw new Error(
        `role ${role}: services/${role}/role.ts must export default the ${role} role (defineAgent or defineRoleSetup)`,
      );
    loaded.push({ role, dir, module });
  }
  return loaded;
}
