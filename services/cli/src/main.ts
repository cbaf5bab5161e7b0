import { Command, InvalidArgumentError } from "commander";
import {
  Capability,
  ROLE_NAMES,
  StrategyProfile,
  WorkflowName,
  SessionId,
  misplacedOption,
} from "@agentmesh/contracts";
import { describeFailure, secretsOf } from "@agentmesh/service-kit";
import { readAttachments } from "./attachments.js";
import { loadCliConfig } from "./config.js";
import { answer, ask, cancel, deadLetters, health, inspect, services, sessionOptions, sessions } from "./commands.js";
import {
  checkTypedText,
  createTerminalOut,
  parseCapabilities,
  parseCount,
  parseSeconds,
  parseSupervisorFlags,
  terminalText,
} from "./text.js";

const secrets = secretsOf(process.env);
const program = new Command("agentmesh")
  .description("Run and watch agentmesh multi-agent sessions")
  .showHelpAfterError()
  // commander echoes what was typed in its own errors: that passes the same cleaning.
  .configureOutput({
    writeOut: (s) => process.stdout.write(terminalText(s, secrets)),
    writeErr: (s) => process.stderr.write(terminalText(s, secrets)),
  });

// Everything printed goes through here: control and bidi characters stripped, secrets redacted.
const consoleOut = createTerminalOut(
  { stdout: (s) => process.stdout.write(s), stderr: (s) => process.stderr.write(s) },
  secrets,
);
const cfg = () => loadCliConfig(process.env);
const exit = (code: number) => {
  process.exitCode = code;
};
const sessionArg = (v: string) => {
  if (!SessionId.safeParse(v).success) throw new InvalidArgumentError("not a session id (8-64 of A-Z a-z 0-9 _ -)");
  return v;
};

program
  .command("ask")
  .description("ask a question and follow the session to its answer")
  .argument("<question>", "the question (1-5000 characters; at least 3 for the blackboard workflow)")
  .option("-w, --workflow <name>", `workflow (${WorkflowName.options.join(", ")})`, "critic-chain")
  .option("-s, --strategy <profile>", `blackboard strategy profile (${StrategyProfile.options.join(", ")})`)
  .option(
    "-c, --capabilities <tags>",
    `halo: the specialists to ask, comma-separated, instead of the planner's choice (${Capability.options.join(", ")})`,
  )
  .option(
    "-m, --mode <agent>",
    "supervisor: the agent to use instead of the router's pick (chat, research, code, writing, data)",
  )
  .option("--depth <depth>", "supervisor's research: quick, standard or deep")
  .option("--scenario <scenario>", "supervisor's research: academic, market, technical or news")
  .option("--retry-limit <n>", "critic-chain: rejections before the run ends (1-20; default 5)")
  .option(
    "-a, --attach <file>",
    "supervisor: send a text file with the question (.csv, .json, else plain text); repeatable, at most 5 files, 100,000 characters in all",
    (v: string, all: string[]) => [...all, v],
    [] as string[],
  )
  .option("-v, --verbose", "show each step's model, tokens and latency", false)
  .option("--json", "print raw events (and live token deltas) as JSON lines", false)
  .option("--no-tokens", "do not print the model's text live as it is written")
  .option("--timeout <seconds>", "give up waiting after this many seconds", "300")
  .action(
    async (
      question: string,
      o: {
        workflow: string;
        strategy?: string;
        capabilities?: string;
        mode?: string;
        depth?: string;
        scenario?: string;
        retryLimit?: string;
        attach: string[];
        verbose: boolean;
        json: boolean;
        tokens: boolean;
        timeout: string;
      },
    ) => {
      const wf = WorkflowName.safeParse(o.workflow);
      if (!wf.success) throw new Error(`unknown workflow "${o.workflow}" (known: ${WorkflowName.options.join(", ")})`);
      const strategy = o.strategy === undefined ? undefined : StrategyProfile.safeParse(o.strategy.toUpperCase());
      if (strategy && !strategy.success)
        throw new Error(`unknown strategy profile "${o.strategy}" (known: ${StrategyProfile.options.join(", ")})`);
      const capabilities = o.capabilities === undefined ? undefined : parseCapabilities(o.capabilities);
      const supervisor = parseSupervisorFlags(o);
      const retryLimit = o.retryLimit === undefined ? undefined : parseCount("retry-limit", o.retryLimit);
      const timeoutMs = parseSeconds("timeout", o.timeout) * 1000;
      checkTypedText("question", question);
      let attachments;
      try {
        attachments = readAttachments(o.attach);
      } catch (err) {
        // A file that cannot be sent is a usage error (exit 2), told before anything connects.
        consoleOut.err(`agentmesh: ${describeFailure(err, secrets)}`);
        return exit(2);
      }
      const interrupted = new Promise<void>((r) => process.once("SIGINT", () => r()));
      const opts = {
        workflow: wf.data,
        ...(strategy?.success ? { strategy: strategy.data } : {}),
        ...(capabilities ? { capabilities } : {}),
        ...(retryLimit === undefined ? {} : { retryLimit }),
        supervisor,
        attachments,
        verbose: o.verbose,
        json: o.json,
        tokens: o.tokens,
        timeoutMs,
        interrupted,
      };
      // A flag of another workflow is a usage error (exit 2), told before anything connects.
      const misplaced = misplacedOption(wf.data, sessionOptions(opts));
      if (misplaced) {
        consoleOut.err(`agentmesh: ${misplaced.message} (--workflow ${misplaced.belongsTo})`);
        return exit(2);
      }
      exit(await ask(cfg(), question, opts, consoleOut));
    },
  );

program
  .command("services")
  .description("list running services and replicas via $SRV")
  .option("--json", "raw INFO and STATS replies", false)
  .action(async (o: { json: boolean }) => exit(await services(cfg(), o, consoleOut)));

program
  .command("inspect")
  .description("print a session's state and transition log")
  .argument("<session>", "session id", sessionArg)
  .option("--json", "raw JSON", false)
  .action(async (sid: string, o: { json: boolean }) => exit(await inspect(cfg(), sid, o, consoleOut)));

program
  .command("cancel")
  .description("cancel a session")
  .argument("<session>", "session id", sessionArg)
  .action(async (sid: string) => exit(await cancel(cfg(), sid, consoleOut)));

program
  .command("answer")
  .description("answer a session that is waiting for a person")
  .argument("<session>", "session id", sessionArg)
  .argument("<text>", "your answer (1-5000 characters)")
  .action(async (sid: string, text: string) =>
    exit(await answer(cfg(), sid, checkTypedText("answer", text), consoleOut)),
  );

program
  .command("sessions")
  .description("list sessions; with --stuck only live sessions past a deadline (exit 1 if any)")
  .option("--stuck", "only sessions past their deadline that nothing has ended", false)
  .option("--limit <n>", "scan at most this many sessions", "1000")
  .option("--grace <seconds>", "how long past a deadline counts as stuck", "60")
  .option("--json", "raw JSON", false)
  .action(async (o: { stuck: boolean; limit: string; grace: string; json: boolean }) =>
    exit(
      await sessions(
        cfg(),
        {
          stuck: o.stuck,
          limit: parseCount("limit", o.limit),
          graceMs: parseSeconds("grace", o.grace, { allowZero: true }) * 1000,
          json: o.json,
        },
        consoleOut,
      ),
    ),
  );

program
  .command("dead-letters")
  .description("list tasks no agent finished within their deliveries; re-drive them")
  .option("--redrive <seq...>", "re-publish these dead letters to their task subjects")
  .option("--redrive-all", "re-publish every dead letter", false)
  .option("--json", "raw JSON", false)
  .action(async (o: { redrive?: string[]; redriveAll: boolean; json: boolean }) =>
    exit(
      await deadLetters(
        cfg(),
        { redrive: (o.redrive ?? []).map(Number).filter(Number.isInteger), all: o.redriveAll, json: o.json },
        consoleOut,
      ),
    ),
  );

program
  .command("health")
  .description("exit 0 when a live replica of the service runs on this host (readiness probe)")
  .requiredOption("-s, --service <name>", `service name (${["coordinator", ...ROLE_NAMES].join(", ")})`)
  .option("--any-host", "accept a replica on any host", false)
  .action(async (o: { service: string; anyHost: boolean }) => exit(await health(cfg(), o, consoleOut)));

try {
  await program.parseAsync(process.argv);
} catch (err) {
  consoleOut.err(`agentmesh: ${describeFailure(err, secrets)}`);
  process.exitCode = 1;
}
// Open handles (a reconnecting client) must not keep a finished command alive.
setTimeout(() => process.exit(), 50).unref();
