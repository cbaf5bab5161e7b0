/**
 * A role is one folder: every role of the registry (ROLE_NAMES) has `services/<role>/role.ts`
 * serving exactly its ops, a prompt file for every op that names one, an offline behaviour for
 * every op that asks a model, its Kubernetes deployment and its compose service; the health
 * probe's help names it. Fails naming the role and what it lacks.
 */
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { ROLE_NAMES, ROLES, type RoleName } from "@agentmesh/contracts";
import { loadAgentConfig, loadPromptContracts, setUpRole, type AgentDefinition } from "@agentmesh/agent-kit";
import { loadRoles } from "@agentmesh/agent";
import { createLogger } from "@agentmesh/service-kit";
import { toStrictJsonSchema } from "@agentmesh/llm";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const log = createLogger({ service: "roles-test", level: "silent" });
const loaded = await loadRoles([]);

type AnyOp = { kind?: string; contract?: string; offline?: unknown; output?: string };

/** Every definition a role folder provides (roles with tools are built, then closed). */
async function definitionsOf(role: RoleName): Promise<AgentDefinition[]> {
  const r = loaded.find((l) => l.role === role);
  if (!r) throw new Error(`${role}: no role folder`);
  const setup = await setUpRole(r.module, { AGENTMESH_CORPUS_DIR: join(ROOT, "corpus") }, log);
  await setup.close?.();
  return [...setup.agents];
}

describe("every role in the registry is one complete folder", () => {
  it("the registry and the role folders name the same roles", () => {
    expect(loaded.map((l) => l.role).sort()).toEqual([...ROLE_NAMES].sort());
  });

  it.each([...ROLE_NAMES])(
    "%s: role.ts serves exactly the registry's ops, with a prompt file and an offline behaviour for each model op",
    async (role) => {
      const dir = join(ROOT, "services", role);
      expect(existsSync(join(dir, "role.ts")), `services/${role}/role.ts`).toBe(true);
      const defs = await definitionsOf(role);
      expect(
        defs.map((d) => d.role),
        `${role}: definitions`,
      ).toEqual([role]);
      const ops = defs[0]!.ops as Record<string, AnyOp>;
      expect(Object.keys(ops).sort(), `${role}: ops`).toEqual(Object.keys(ROLES[role]).sort());
      const prompts = loadPromptContracts({ builtinDirs: [dir] });
      for (const [name, op] of Object.entries(ops)) {
        const isPrompt = op.kind !== "handler";
        if (op.contract) {
          expect(
            prompts.get(op.contract)?.file.startsWith(dir),
            `${role}.${name}: prompt file ${op.contract}.v<N>.json in services/${role}/`,
          ).toBe(true);
        }
        // a prompt op without a prompt file cannot start; one without offline behaviour would answer needs_model
        if (isPrompt) {
          expect(op.contract, `${role}.${name}: a prompt op names its prompt file`).toBeTruthy();
          expect(typeof op.offline, `${role}.${name}: offline behaviour`).toBe("function");
        }
        // a JSON prompt op sends its response schema to the model, which strict structured output
        // takes only as an object (an agent's action union is written as a flat draft by a handler)
        if (isPrompt && op.output !== "text") {
          const schema = toStrictJsonSchema(
            (ROLES[role] as Record<string, { response: import("zod").ZodType }>)[name]!.response,
          ) as { type?: string };
          expect(schema.type, `${role}.${name}: a JSON prompt op's response is an object`).toBe("object");
        }
      }
    },
  );

  it.each([...ROLE_NAMES])("%s: has its Kubernetes Deployment and ScaledObject and its compose service", (role) => {
    const objects = parseAllDocuments(readFileSync(join(ROOT, "deploy/base/agents.generated.yaml"), "utf8")).map(
      (d) => d.toJS() as { kind?: string; metadata?: { name?: string } },
    );
    expect(
      objects.some((o) => o.kind === "Deployment" && o.metadata?.name === role),
      `${role}: Deployment`,
    ).toBe(true);
    expect(
      objects.some((o) => o.kind === "ScaledObject" && o.metadata?.name === role),
      `${role}: ScaledObject`,
    ).toBe(true);
    const compose = parse(readFileSync(join(ROOT, "docker-compose.yml"), "utf8")) as {
      services: Record<string, { environment?: Record<string, string> }>;
    };
    expect(compose.services[role]?.environment?.SERVICE, `${role}: compose service`).toBe(role);
  });

  it("the health probe's help lists every service", () => {
    const out = spawnSync(
      process.execPath,
      ["--import", "tsx", join(ROOT, "services/cli/src/main.ts"), "health", "--help"],
      { cwd: ROOT, encoding: "utf8" },
    );
    for (const name of ["coordinator", ...ROLE_NAMES]) expect(out.stdout, name).toMatch(new RegExp(`\\b${name}\\b`));
    // a process start under tsx: seconds on a busy machine, not a unit test's 5
  }, 60_000);

  it("a role that lacks its folder is refused by name", async () => {
    await expect(loadRoles(["nosuchrole"])).rejects.toThrow(/unknown role\(s\): nosuchrole/);
  });

  it("a role a process bundle holds is loaded from it, when asked for, with its folder for the prompts; one serving another role is refused", async () => {
    const planner = loaded.find((r) => r.role === "planner");
    if (!planner) throw new Error("no planner loaded");
    const asked: string[] = [];
    const bundled = {
      planner: async () => (asked.push("planner"), planner.module),
      critic: async () => (asked.push("critic"), planner.module),
    };
    const [one] = await loadRoles(["planner"], bundled);
    expect(asked).toEqual(["planner"]);
    expect(one?.module).toBe(planner.module);
    expect(one?.dir).toBe(planner.dir);
    await expect(loadRoles(["critic"], bundled)).rejects.toThrow(
      /role critic: the bundled role module does not serve critic/,
    );
    await expect(loadRoles(["planner", "finalizer"], { planner: bundled.planner })).rejects.toThrow(
      /this process bundle holds the role\(s\) planner, not finalizer/,
    );
  });

  it("the agent config every role runs under parses with no environment", () => {
    expect(loadAgentConfig({}).roles).toEqual([]);
  });
});
