import { readFileSync, readdirSync, statSync } from "node:fs";
import { extname, join, relative } from "node:path";
import { describe, expect, test } from "vitest";

// The repository speaks of itself: code, comments, docs and the bench describe behaviour in their
// own words and point to docs/ pages. They never cite a tracker's issue numbers, the spec
// documents the project started from (by number, file name or folder), or a design document that
// the repository does not hold. "seed" is NATS's word for an NKey's private key and stays for
// that (and for a random generator's seed); it does not name a spec document.

const root = join(import.meta.dirname, "../..");

/** What is scanned: every source, doc, config and bench file of ours. */
const SCANNED_DIRS = ["packages", "services", "scripts", "bench", "test", "deploy", "docs", ".ci", "corpus", "patches"];
const SCANNED_FILES = [
  "README.md",
  "ARCHITECTURE.md",
  "docker-compose.yml",
  "Dockerfile",
  "package.json",
  "eslint.config.js",
  "vitest.config.ts",
  "tsconfig.base.json",
  "tsconfig.json",
  "pnpm-workspace.yaml",
  ".gitignore",
  ".dockerignore",
];
const TEXT = new Set([
  ".ts",
  ".mts",
  ".cts",
  ".js",
  ".mjs",
  ".cjs",
  ".json",
  ".jsonl",
  ".md",
  ".yaml",
  ".yml",
  ".sh",
  ".html",
  ".css",
  ".conf",
  ".txt",
  ".patch",
  "",
]);
const SKIPPED_DIRS = new Set(["node_modules", "dist", ".bench", ".nats"]);
/** This file holds the patterns themselves and the planted examples. */
const SELF = "test/unit/citations.test.ts";

/** A citation that must not appear, with what to write instead. */
interface Rule {
  readonly name: string;
  readonly pattern: RegExp;
  readonly instead: string;
}

const RULES: readonly Rule[] = [
  {
    name: "issue number",
    // "issue 14", "issues 8 and 9", "Issue #27", "issue-14"
    pattern: /\bissues?[\s#-]*\d+/i,
    instead: "say what the behaviour is, or link the docs/ page that does",
  },
  {
    name: "numbered spec document",
    // "seed 004", "Seed 3's", "seed #2", "seed-001"
    pattern: /\bseeds?[\s#-]*0*\d{1,3}\b/i,
    instead: "name the behaviour and link docs/workflows/<name>.md",
  },
  {
    name: "spec document file",
    // the files and folder of the spec documents: 004_1837c9660befe56d.txt, shared/seeds, seeds/ —
    // but not the NKey seed folders .nats/seeds/ and <out>/seeds/ that `pnpm nats:keys` writes
    pattern: /\b\d{3}_[0-9a-f]{16}\.txt\b|\bshared\/(?:seeds|DESIGN)|(?<!\.nats\/|<out>\/|\bout}\/)\bseeds\//i,
    instead: "link a docs/ page",
  },
  {
    name: "design document",
    // "DESIGN", "DESIGN.md", "the design notes": a document the repository does not hold
    pattern: /\bDESIGN\b|\bdesign notes?\b/,
    instead: "state the decision where it applies, or link the docs/ page",
  },
  {
    name: "spec document as 'the seed'",
    // Any other "seed"/"seeds"/"seed's" word on a line that says nothing of NKeys or random seeds.
    pattern: /\bseed(?:'s|s'|s)?\b/i,
    instead: "name the behaviour (the seed word is kept for NKey seeds and random seeds)",
  },
];

/**
 * Lines on which "seed" is NATS's word (an NKey's private key) or a random generator's: the rule
 * "spec document as 'the seed'" does not apply there. Each alternative is one way such a line
 * shows it.
 */
const SEED_ALLOWED: RegExp = new RegExp(
  [
    String.raw`nkey`, // "NKey seed", NATS_NKEY_SEED_FILE, "nkeys prefix"
    String.raw`\bnats\b`, // "NATS user seed", "nats:keys writes the seed"
    String.raw`\.nk\b`, // seed files: .nats/seeds/<user>.nk
    String.raw`\buser seed`,
    String.raw`\bseeds? (?:file|secret|path|dir)`, // "the seed file", "the seeds Secret"
    String.raw`\bsecrets?\b`, // "its seed (a secret: mount it)"
    String.raw`\bmount`, // "bind-mounts its own seed", "the seed mounted read-only"
    String.raw`getSeed|fromSeed|OfSeed|seedMounts|seedDir|seedName|seedFile|\.seed\b|\{\{seed\}\}`, // NKey code and templates
    String.raw`\bseed\s*=\s*readFileSync`, // reading an NKey seed
    String.raw`FUZZ_SEED|random|reseed|fast-check|\bfc\.|numRuns`, // a random generator's seed
    String.raw`\`seed\``, // a sampling request field named as code (OpenAI's \`seed\`)
  ].join("|"),
  "i",
);
/**
 * A code or config file that speaks of NKeys (names an NKey or a `.nk` seed file) uses "seed" for
 * them, in names and comments: the rule "spec document as 'the seed'" does not apply in it (the
 * numbered and file rules still do). Markdown gets no such pass: a doc says "NKey seed" on the line.
 */
const NKEY_FILE = /nkey|\.nk\b/i;
/** A fuzz test's random seed constant, `SEED` (upper case only: "Seed" and "seed" are words). */
const SEED_CONSTANT = /\bSEED\b/;

function files(dir: string): string[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names.flatMap((name) => {
    if (SKIPPED_DIRS.has(name)) return [];
    const p = join(dir, name);
    if (statSync(p).isDirectory()) return files(p);
    return TEXT.has(extname(name)) ? [p] : [];
  });
}

/** Does `rule` find a citation on `line` (of a file that speaks of NKeys when `nkeyFile`)? */
function cites(rule: Rule, line: string, nkeyFile: boolean): boolean {
  const seedOk = nkeyFile || SEED_ALLOWED.test(line) || SEED_CONSTANT.test(line);
  if (rule.name === "spec document as 'the seed'" && seedOk) return false;
  return rule.pattern.test(line);
}

/** Every line of `text` that cites something, as `line: the first rule it breaks: the line`. */
function citations(text: string, markdown = false): string[] {
  const nkeyFile = !markdown && NKEY_FILE.test(text);
  return text.split("\n").flatMap((line, i) => {
    const rule = RULES.find((r) => cites(r, line, nkeyFile));
    return rule ? [`${i + 1}: ${rule.name}: ${line.trim().slice(0, 160)}`] : [];
  });
}

const scanned = [
  ...SCANNED_DIRS.flatMap((d) => files(join(root, d))),
  ...SCANNED_FILES.map((f) => join(root, f)),
].filter((p) => relative(root, p) !== SELF);

describe("the repository cites no issue numbers, spec documents or design notes", () => {
  test("scans the sources, docs and bench (a sanity floor, so an empty scan cannot pass)", () => {
    const rel = scanned.map((p) => relative(root, p));
    expect(rel).toContain("README.md");
    expect(rel).toContain("bench/README.md");
    expect(rel).toContain("docs/workflows/critic-chain.md");
    expect(rel).toContain("packages/workflows/src/critic-chain.ts");
    expect(rel.length).toBeGreaterThan(500);
  });

  test("no source, doc or bench file names an issue number, a spec document or DESIGN", () => {
    const found = scanned.flatMap((p) =>
      citations(readFileSync(p, "utf8"), p.endsWith(".md")).map((c) => `${relative(root, p)}:${c}`),
    );
    expect(found, `cite docs/ pages instead:\n${RULES.map((r) => `  ${r.name}: ${r.instead}`).join("\n")}`).toEqual([]);
  });
});

describe("the rules catch citations and leave NKey and random seeds alone", () => {
  test.each([
    "// see issue 14",
    "/** The retry limit (issue #27). */",
    "Before issues 8 and 9 the bench ran open.",
    "// Seed 004: planner -> critic",
    "clarify's cap (seed 003's `max_clarifications`)",
    "seed-002's matrix",
    "read /work/shared/seeds/002_5f1327ff9f635e20.txt",
    "see seeds/ for the spec",
    "// DESIGN decision: a retryable failure counts one retry",
    "as DESIGN.md says",
    "Design: the design notes that came with the project.",
    "/** The seed's strategy profiles. */",
    "// Seed: append a new step's result",
    "(the seed's error handler)",
    "3 attempts of at most 5 s (seed).",
  ])("flags %j", (line) => {
    expect(citations(line)).toHaveLength(1);
  });

  test.each([
    "NATS_NKEY_SEED_FILE=/run/secrets/agentmesh/nats.nk",
    "`pnpm nats:keys` writes one NKey seed per user to `.nats/seeds/<user>.nk`",
    "source: ./.nats/seeds/{{role}}.nk",
    "//   <out>/seeds/<user>.nk                 one seed per user (mode 0600)",
    "the seeds Secret holds the new role's user",
    "A NATS user NKey read from its seed, signing with Ed25519",
    '    seed = readFileSync(file, "utf8").trim();',
    'it("reads a seed with surrounding whitespace (as a seed file holds it)", () => {',
    "every service bind-mounts its own seed",
    "`FUZZ_SEED` picks another sample",
    "const inputs = sampleInputs(arb, PER_OP, SEED + 10 + k);",
    "random.seed(os.urandom(32))",
    'it("random is reseeded per call", () => {',
    "The design of the outbox: publish, then clear.",
    "an issue with the connection",
    "the seedling grows",
  ])("allows %j", (line) => {
    expect(citations(line)).toEqual([]);
  });

  test("a file that speaks of NKeys may say 'seed' for them on any line, but cites no numbered document", () => {
    const nkeyFile = "// Writes each user's NKey.\nconst seeds: Record<string, string> = {};\nlet seed: string;\n";
    expect(citations(nkeyFile)).toEqual([]);
    expect(citations(`${nkeyFile}// as seed 004 says\n`)).toEqual(["4: numbered spec document: // as seed 004 says"]);
    expect(citations("const seeds: Record<string, string> = {};\n")).toHaveLength(1);
    // a Markdown page that mentions NKeys gets no such pass: it says "NKey seed" where it means one
    expect(citations("Each service has an NKey.\nA role's seed grants only that role.\n", true)).toHaveLength(1);
  });
});
