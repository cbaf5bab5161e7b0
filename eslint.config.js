// Flat config for the whole monorepo (`pnpm lint` = `eslint .`).
//
// The dependency direction comes from ARCHITECTURE.md's table, read below, so the table, this
// lint and test/unit/architecture.test.ts cannot disagree. Typed rules use the TypeScript
// project service over the root tsconfig.json (one program for the repo, which keeps a full run
// fast on two cores).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { builtinModules } from "node:module";
import { join } from "node:path";
import js from "@eslint/js";
import tseslint from "typescript-eslint";
import importX, { createNodeResolver } from "eslint-plugin-import-x";

const root = import.meta.dirname;

/**
 * Rows of ARCHITECTURE.md's `package | role | may depend on` table:
 * { dir: "packages/llm", name: "llm", internal: ["contracts"], external: [] }.
 * `external` is non-empty only for closed rows (contracts: zod only).
 */
function readArchitecture() {
  const lines = readFileSync(join(root, "ARCHITECTURE.md"), "utf8").split("\n");
  const start = lines.findIndex((l) => /^\|\s*package\s*\|\s*role\s*\|\s*may depend on\s*\|/.test(l));
  if (start < 0) throw new Error("ARCHITECTURE.md: no `package | role | may depend on` table");
  const cells = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break;
    cells.push(
      line
        .split("|")
        .slice(1, -1)
        .map((c) => c.trim()),
    );
  }
  const names = new Set(cells.map((c) => c[0].replaceAll("`", "").split("/").pop()));
  return cells.flatMap((c) => {
    const dir = c[0].replaceAll("`", "");
    const deps = [...c[2].matchAll(/`([^`]+)`/g)].map((m) => m[1]);
    const row = { internal: deps.filter((d) => names.has(d)), external: deps.filter((d) => !names.has(d)) };
    // The `services/<role>` row stands for every role folder (a folder of services/ with a role.ts).
    if (dir === ROLE_ROW) return roleFolders().map((d) => ({ ...row, dir: d, name: d.split("/").pop() }));
    return [{ ...row, dir, name: dir.split("/").pop() }];
  });
}

const ROLE_ROW = "services/<role>";

/** The role folders: `services/<name>/role.ts` exists. */
function roleFolders() {
  return readdirSync(join(root, "services"))
    .filter((n) => existsSync(join(root, "services", n, "role.ts")))
    .map((n) => `services/${n}`);
}

const DEEP_IMPORT = {
  regex: "^@agentmesh/[^/]+/(?!testing$)",
  message:
    "Deep import into another package. Import its front door `@agentmesh/<name>` (or `@agentmesh/<name>/testing` in tests).",
};

const escape = (s) => s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
const nodeBuiltins = builtinModules.filter((m) => !m.startsWith("_"));

/** `no-restricted-imports` options for one row of the table (and workflows' purity). */
function importRules(row, { pure }) {
  const allowed = [row.name, ...row.internal].map(escape).join("|");
  const patterns = [DEEP_IMPORT];
  if (row.external.length === 0) {
    patterns.push({
      regex: `^@agentmesh/(?!(?:${allowed})(?:/|$))`,
      message: `ARCHITECTURE.md: ${row.dir} may depend only on ${row.internal.join(", ")}. Change the table first if this dependency is intended.`,
    });
  } else {
    const ext = row.external.map(escape).join("|");
    patterns.push({
      regex: `^(?!\\.|(?:${ext})(?:/|$))`,
      message: `ARCHITECTURE.md: ${row.dir} may import only ${row.external.join(", ")} (and its own files).`,
    });
  }
  const paths = [];
  if (pure) {
    patterns.push({
      regex: "^node:",
      message: "Workflows are pure: no Node built-ins. I/O belongs in the coordinator.",
    });
    for (const name of nodeBuiltins) {
      paths.push({ name, message: "Workflows are pure: no Node built-ins. I/O belongs in the coordinator." });
    }
    // contracts' random minters: a workflow formats and parses ids, the ids it needs arrive in its input
    paths.push({
      name: "@agentmesh/contracts",
      importNames: ["newSessionId", "newThreadId", "newUserInputId"],
      message: "Workflows are pure: random ids are minted outside the step and arrive in its input.",
    });
  }
  return ["error", { paths, patterns }];
}

const rows = readArchitecture();
const testFiles = ["**/*.test.ts", "**/testing.ts", "**/testing/**", "**/test-support.ts"];
const impure =
  "Workflows are pure: time, randomness and ids come in the step input (ARCHITECTURE.md: workflows are pure state machines).";

const nodeGlobals = Object.fromEntries(
  [
    "process",
    "console",
    "Buffer",
    "URL",
    "URLSearchParams",
    "AbortController",
    "AbortSignal",
    "TextEncoder",
    "TextDecoder",
    "setTimeout",
    "clearTimeout",
    "setInterval",
    "clearInterval",
    "setImmediate",
    "clearImmediate",
    "queueMicrotask",
    "structuredClone",
    "fetch",
    "performance",
  ].map((g) => [g, "readonly"]),
);

export default tseslint.config(
  { ignores: ["**/node_modules/**", "**/.bench/**", "**/dist/**", "**/coverage/**", "**/.agentmesh/**"] },

  js.configs.recommended,
  {
    files: ["**/*.{js,mjs,cjs}"],
    languageOptions: { ecmaVersion: 2023, sourceType: "module", globals: nodeGlobals },
  },

  // The gateway's web page: plain ES modules that run in the browser.
  {
    files: ["services/gateway/public/**/*.js"],
    languageOptions: {
      globals: Object.fromEntries(
        [
          "window",
          "document",
          "location",
          "history",
          "localStorage",
          "crypto",
          "requestAnimationFrame",
          "HTMLElement",
          "Element",
          "Response",
          "ReadableStream",
          "TextDecoder",
        ].map((g) => [g, "readonly"]),
      ),
    },
  },

  // TypeScript: syntax-level recommended rules everywhere, plus the few typed rules we rely on.
  ...tseslint.configs.recommended.map((c) => ({ ...c, files: ["**/*.ts"] })),
  {
    files: ["**/*.ts"],
    languageOptions: {
      parserOptions: {
        projectService: true,
        tsconfigRootDir: root,
      },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/switch-exhaustiveness-check": "error",
      "@typescript-eslint/no-explicit-any": "error",
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", caughtErrors: "none" },
      ],
    },
  },

  // Module graph: no cycles, no reaching into another package by relative path.
  {
    files: ["**/*.{ts,js,mjs}"],
    plugins: { "import-x": importX },
    settings: {
      "import-x/extensions": [".ts", ".js", ".mjs", ".cjs"],
      "import-x/ignore": ["node_modules"],
      "import-x/resolver-next": [
        createNodeResolver({
          extensions: [".ts", ".js", ".mjs", ".cjs", ".json"],
          extensionAlias: { ".js": [".ts", ".js"] },
          conditionNames: ["source", "import", "default"],
        }),
      ],
    },
    rules: {
      "import-x/no-cycle": "error",
      "import-x/no-self-import": "error",
      "import-x/no-relative-packages": "error",
    },
  },
  {
    // Tests and their unshipped helpers (test-support.ts) may reach the root package's shared
    // test infrastructure (test/setup). test/unit/architecture.test.ts still rejects shipped
    // code that does, and a test that reaches into another package's files.
    files: ["**/*.test.ts", "**/test-support.ts", "**/test-support/**/*.ts"],
    rules: { "import-x/no-relative-packages": "off" },
  },

  // A file holds at most 650 lines of code (blank lines and comments not counted, so the limit
  // reads the same under the formatter's 120-column wrapping). Two files are tables, one row per
  // entry, and are exempt: the environment variables and the sandbox's escape cases.
  {
    files: ["**/*.{ts,js,mjs}"],
    ignores: ["packages/service-kit/src/env.ts", "packages/tools/src/test-support/escape-cases.ts"],
    rules: { "max-lines": ["error", { max: 650, skipBlankLines: true, skipComments: true }] },
  },

  // The workflows trust what reaches them typed: an agent's output is checked once, where it enters
  // the coordinator, and narrowed by its op (isResultOf). A type assertion there would hide a
  // mismatch the types exist to catch, so none is allowed (`as const` is not an assertion of this
  // kind). The test kits read loosely typed task inputs for assertions and are left out.
  {
    files: ["packages/workflows/src/**/*.ts"],
    ignores: ["**/*.test.ts", "packages/workflows/src/testing.ts", "packages/workflows/src/*-testkit.ts"],
    rules: { "@typescript-eslint/consistent-type-assertions": ["error", { assertionStyle: "never" }] },
  },

  // A function in shipped code holds at most 80 lines (counted the same way): a longer one is
  // split into named parts. Test-support modules (testing.ts, testkits, conformance suites, the
  // scripted server) ship and are held to it; tests are not.
  {
    files: ["packages/*/src/**/*.{ts,js,mjs}", "services/**/*.{ts,js,mjs}"],
    ignores: ["**/*.test.ts", "**/test/**"],
    rules: { "max-lines-per-function": ["error", { max: 80, skipBlankLines: true, skipComments: true }] },
  },

  // Everywhere (the root's test/, scripts/, bench/ too): front doors only. The blocks below
  // replace this rule for package folders with one that also carries their table row.
  {
    files: ["**/*.{ts,js,mjs}"],
    rules: { "no-restricted-imports": ["error", { patterns: [DEEP_IMPORT] }] },
  },

  // The bench's floor is the runtime's yardstick: its processes use the raw clients and nothing of ours.
  {
    files: ["bench/floor/driver.ts", "bench/floor/worker.ts", "bench/floor/proto.ts"],
    rules: {
      "no-restricted-imports": [
        "error",
        {
          patterns: [
            {
              group: ["@agentmesh/*", "../*", "../../*"],
              message: "the floor imports only the raw NATS and Redis clients and its own files",
            },
          ],
        },
      ],
    },
  },

  // The dependency table, one block per package folder.
  ...rows.map((row) => ({
    files: [`${row.dir}/**/*.{ts,js,mjs}`],
    rules: { "no-restricted-imports": importRules(row, { pure: false }) },
  })),

  // Workflows are deterministic state machines.
  ...rows
    .filter((row) => row.dir === "packages/workflows")
    .map((row) => ({
      files: [`${row.dir}/src/**/*.ts`],
      ignores: testFiles,
      rules: {
        "no-restricted-imports": importRules(row, { pure: true }),
        "no-restricted-globals": [
          "error",
          ...["Date", "crypto", "performance", "process", "setTimeout", "setInterval", "setImmediate", "fetch"].map(
            (name) => ({
              name,
              message: impure,
            }),
          ),
        ],
        "no-restricted-properties": [
          "error",
          { object: "Math", property: "random", message: impure },
          ...["Date", "crypto", "performance", "process"].map((property) => ({
            object: "globalThis",
            property,
            message: impure,
          })),
        ],
      },
    })),
);
