import { afterAll, beforeAll, describe, expect, inject, test } from "vitest";
import type { Browser, Page } from "playwright-core";
import type { BlackboardData, SessionState } from "@agentmesh/contracts";
import { apiKeyEntry, generateApiKey } from "@agentmesh/gateway";
import { uniquePrefix } from "../setup/prefix.js";
import { Cluster, type Proc, type ServiceName } from "./harness.js";
import { launchBrowser, screenshot, seriousA11yViolations } from "./browser.js";

// The gateway's web page in a real headless Chromium (Debian's package, driven by
// playwright-core): the gateway as its own OS process serving the page, a coordinator and every
// blackboard agent as separate processes over real NATS and Redis, the offline engine. The page
// talks only to the gateway's public HTTP/SSE API, with an API key typed into its field. The
// supervisor's router and code agent run too (the executor is shared): offline they run the code
// a question gives them.

const AGENTS = [
  "perception",
  "memory",
  "retriever",
  "decision",
  "executor",
  "critic",
  "router",
  "coder",
] as const satisfies readonly ServiceName[];
const KEY = generateApiKey();
const GATEWAY_ENV = { AGENTMESH_API_KEYS: apiKeyEntry("webtester", KEY) };

const ARITHMETIC = "What is 123456789 * 987654321?";
const PRODUCT = "121932631112635269";
const HANDBOOK = "Where does the handbook say to store samples at 4 degrees?";
const CLARIFICATION = "Your question mentions 4 degrees without a scale: is that Celsius or Fahrenheit?";
const RUN_THIS = "Run this:\n```js\nconsole.log(6 * 7)\n```";
const RUN_FAILING = 'Run this:\n```js\nconsole.log("before")\nnull.boom()\n```';

let cluster: Cluster;
let gateway: Proc;
let baseUrl: string;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  cluster = new Cluster({ natsUrl: inject("natsUrl"), redisUrl: inject("redisUrl"), prefix: uniquePrefix("web") });
  await cluster.open();
  cluster.start("coordinator");
  await cluster.waitReady({ coordinator: 1 }, 90_000);
  for (const role of AGENTS) cluster.start(role);
  ({ proc: gateway, url: baseUrl } = await cluster.startGateway(GATEWAY_ENV));
  await cluster.waitReady(Object.fromEntries(AGENTS.map((r) => [r, 1])), 120_000);
  browser = await launchBrowser();
  page = await browser.newPage({ viewport: VIEWPORT });
  pageProblems = problemsOf(page);
}, 240_000);

afterAll(async () => {
  await browser?.close();
  await cluster?.close();
});

let pageProblems: string[] = [];
const VIEWPORT = { width: 1100, height: 900 };

/**
 * The errors a page (and its frames) throws or logs, collected as they come. A refused request is
 * logged by the browser itself (the 401 before the key is typed, the outage while the gateway
 * restarts); everything else logged as an error is a problem.
 */
function problemsOf(p: Page): string[] {
  const problems: string[] = [];
  p.on("pageerror", (e) => problems.push(e.message));
  p.on("console", (m) => {
    if (m.type() === "error" && !m.text().startsWith("Failed to load resource")) problems.push(m.text());
  });
  return problems;
}

/** The stages as the page shows them (name, status, description), timings left out. */
async function stagesShown(): Promise<string[]> {
  const items = page.locator("#stages > li");
  const out: string[] = [];
  for (let i = 0; i < (await items.count()); i++) {
    const li = items.nth(i);
    out.push(
      (await Promise.all([".stage-name", ".badge", ".stage-desc"].map((c) => li.locator(c).textContent()))).join(" | "),
    );
  }
  return out;
}

/** The text of the one element `selector` names ("" when it has none). */
const textOf = async (selector: string) => (await page.locator(selector).textContent()) ?? "";

/** Polls the text of `selector` until the matcher holds (vitest's poll; playwright-core has no `expect`). */
const pollText = (selector: string, timeout = 10_000) =>
  expect.poll(() => textOf(selector), { timeout, interval: 100 });

/** The id of the focused element. */
const focused = () => page.evaluate("document.activeElement && document.activeElement.id");

/** The session id the page keeps in its URL. */
function sessionInUrl(): string {
  const sid = /^#session=([A-Za-z0-9_-]+)$/.exec(new URL(page.url()).hash)?.[1];
  if (!sid) throw new Error(`no session in the page's URL ${page.url()}`);
  return sid;
}

function blackboard(state: SessionState | undefined): BlackboardData {
  if (state?.data.workflow !== "blackboard")
    throw new Error(`expected a blackboard session, got ${state?.data.workflow ?? "none"}`);
  return state.data;
}

async function ask(question: string): Promise<void> {
  await page.getByLabel("Question").fill(question);
  await page.getByLabel("Workflow").selectOption("blackboard");
  await page.getByRole("button", { name: "Ask" }).click();
}

/** What the page shows after each change: stage count, running stages, answer shown (recorded in the page). */
interface Snapshot {
  readonly stages: number;
  readonly running: number;
  readonly answered: boolean;
}

/** Where the page keeps the API key. */
const KEY_STORAGE = "agentmesh.apiKey";

// Plain JavaScript run in the page (the test's TypeScript has no DOM types).
/** Everything the page keeps in localStorage and in sessionStorage. */
const STORAGE = `({ local: { ...localStorage }, session: { ...sessionStorage } })`;

/** The ids of the page's live regions. */
const LIVE_REGIONS = `[...document.querySelectorAll("[aria-live], [role=status], [role=log], [role=alert]")].map((e) => e.id)`;

/** The focused element: its id, and whether a focus ring is drawn around it (an outline or a box shadow). */
const FOCUS = `(() => {
  const e = document.activeElement;
  if (!e || e === document.body) return { id: null, ring: false };
  const s = getComputedStyle(e);
  const r = e.getBoundingClientRect();
  const outline = s.outlineStyle !== "none" && parseFloat(s.outlineWidth) > 0;
  const shadow = s.boxShadow !== "none" && s.boxShadow !== "";
  return { id: e.id || e.className, ring: (outline || shadow) && r.width > 0 && r.height > 0 };
})()`;

const RECORD_SNAPSHOTS = `(() => {
  const seen = [];
  const snap = () => seen.push({
    stages: document.querySelectorAll("#stages > li").length,
    running: document.querySelectorAll('#stages > li[data-status="running"]').length,
    answered: !document.getElementById("answer-box").hidden,
  });
  new MutationObserver(snap).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  globalThis.snapshots = seen;
})()`;

describe("the web page, in Chromium, against a real gateway and cluster", () => {
  test("a question is answered with its stages appearing live, each tool call beside its result", async () => {
    await page.goto(baseUrl);
    await page.getByLabel(/API key/).fill(KEY);
    await page.getByLabel(/API key/).press("Tab"); // the page keeps the key and reloads the workflows with it
    await expect
      .poll(() => page.getByLabel("Workflow").locator("option").allTextContents())
      .toContainEqual(expect.stringMatching(/^blackboard/));
    // The key is kept for this tab only: in sessionStorage, nothing in localStorage.
    expect(await page.evaluate(STORAGE)).toEqual({ local: {}, session: { [KEY_STORAGE]: KEY } });

    await page.evaluate(RECORD_SNAPSHOTS);
    await ask(ARITHMETIC);
    await pollText("#answer", 60_000).toContain(PRODUCT);
    const seen = (await page.evaluate("globalThis.snapshots")) as Snapshot[];
    const before = seen.filter((s) => !s.answered);
    // Stages came one after another before the answer, and some were shown running.
    expect(new Set(before.map((s) => s.stages).filter((n) => n > 0)).size).toBeGreaterThanOrEqual(3);
    expect(before.some((s) => s.running > 0)).toBe(true);

    await pollText("#status").toMatch(/^Session completed in \d/);
    const stages = await stagesShown();
    expect(stages[0]).toMatch(/^perception \| completed \| intent arithmetic/);
    expect(stages).toContain("executor | completed | chose tool (calculator)");
    const call = page.locator(".call", { hasText: "calculator" });
    expect(await call.locator(".args").textContent()).toContain('"expression": "123456789 * 987654321"');
    expect(await call.locator(".result").textContent()).toMatch(new RegExp(`^result after \\d+ ms: ${PRODUCT}$`));
    expect(await page.locator("#stages .timing").first().textContent()).toMatch(/^\d+(\.\d)? m?s$/);

    const sid = sessionInUrl();
    const state = (await cluster.store.load(sid))?.state;
    expect(state?.meta.status).toBe("completed");
    expect(await textOf("#answer")).toBe(blackboard(state).final_answer);
    await screenshot(page, "web-answered");
    expect(await seriousA11yViolations(page)).toEqual([]);
  });

  test("a session paused for a person survives a reload of the page and is answered from it", async () => {
    await page.goto(baseUrl);
    await ask(HANDBOOK);
    await pollText("#clarify-question", 60_000).toBe(CLARIFICATION);
    expect(await page.getByRole("region", { name: "The agents ask you" }).isVisible()).toBe(true);
    await pollText("#status").toBe("Paused: the agents ask you a question.");
    expect(await focused()).toBe("reply");
    const sid = sessionInUrl();
    const shown = await stagesShown();
    expect(shown.at(-1)).toBe(`awaiting_user | running | ${CLARIFICATION}`);
    await screenshot(page, "web-paused");
    expect(await seriousA11yViolations(page)).toEqual([]);

    // A reload mid-session: the page replays the session's events from the start and shows the same view.
    await page.reload();
    await pollText("#clarify-question", 30_000).toBe(CLARIFICATION);
    expect(sessionInUrl()).toBe(sid);
    expect(await stagesShown()).toEqual(shown);
    await pollText("#asked").toBe(HANDBOOK);
    expect(await page.locator(".call", { hasText: "corpus_search" }).locator(".result").textContent()).toContain(
      "handbook/lab-safety.md",
    );
    await screenshot(page, "web-reloaded-paused");

    // The gateway crashes and comes back on its port: the page says so, reconnects with the last
    // event id it saw, and shows nothing twice.
    gateway.child.kill("SIGKILL");
    await gateway.exited;
    await pollText("#status", 15_000).toMatch(/^Connection lost/);
    ({ proc: gateway } = await cluster.startGateway({ ...GATEWAY_ENV, AGENTMESH_GATEWAY_PORT: new URL(baseUrl).port }));
    await pollText("#status", 30_000).toBe("Paused: the agents ask you a question.");
    expect(await stagesShown()).toEqual(shown);

    // The API key was kept for this tab; the answer goes with it, sent from the keyboard.
    expect(await page.getByLabel(/API key/).inputValue()).toBe(KEY);
    await page.getByLabel("Your answer").fill("Celsius");
    await page.keyboard.press("Tab");
    expect(await focused()).toBe("send-reply");
    await page.keyboard.press("Enter");
    await pollText("#answer", 60_000).toContain("You clarified: “Celsius”.");
    expect(await textOf("#answer")).toContain("cold room B12 at 4 °C");
    expect(await page.locator("#clarify").isHidden()).toBe(true);
    expect(await stagesShown()).toContain("awaiting_user | completed | Celsius");

    const data = blackboard((await cluster.store.load(sid))?.state);
    expect(data.user_replies).toEqual(["Celsius"]);
    expect(await textOf("#answer")).toBe(data.final_answer);
    await screenshot(page, "web-answered-after-pause");
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(pageProblems).toEqual([]);
  });

  test("a running session is cancelled from the page", async () => {
    await page.goto(baseUrl);
    await ask(HANDBOOK);
    await pollText("#clarify-question", 60_000).toBe(CLARIFICATION);
    const sid = sessionInUrl();
    await page.getByRole("button", { name: "Cancel" }).click();
    await pollText("#status", 30_000).toMatch(/^Session cancelled in \d/);
    expect(await page.locator("#clarify").isHidden()).toBe(true);
    expect(await page.getByRole("button", { name: "Cancel" }).isHidden()).toBe(true);
    expect(await page.getByRole("button", { name: "Ask" }).isEnabled()).toBe(true);
    expect((await cluster.store.load(sid))?.state.meta.status).toBe("cancelled");
    await screenshot(page, "web-cancelled");
    expect(pageProblems).toEqual([]);
  });

  test("a Vega-Lite chart with inline data is drawn with the gateway's own vega in a sandboxed frame; one naming a data.url is refused", async () => {
    // The page may not eval; only the chart frame may, and it may connect nowhere.
    const pageCsp = (await page.goto(baseUrl))?.headers()["content-security-policy"] ?? "";
    expect(pageCsp).toContain("form-action 'none'");
    expect(pageCsp).toContain("frame-ancestors 'none'");
    expect(pageCsp).not.toContain("'unsafe-eval'");
    const frameCsp = page
      .waitForResponse((r) => r.url().endsWith("/assets/chart-frame.html"))
      .then((r) => r.headers()["content-security-policy"] ?? "");
    // No workflow emits charts yet: the page's chart module is fed two specs, under the page's real CSP.
    await page.evaluate(`Promise.all([import("/assets/charts.js"), import("/assets/progress-store.js")]).then(([charts, store]) => {
      const specs = [
        { title: "Samples per room", mark: "bar", data: { values: [{ room: "B12", n: 4 }, { room: "B14", n: 9 }] },
          encoding: { x: { field: "room", type: "nominal" }, y: { field: "n", type: "quantitative" } } },
        { title: "Remote", mark: "bar", layer: [{ mark: "bar", data: { url: "https://example.com/x.csv" } }] },
      ];
      const box = document.getElementById("charts-box");
      box.hidden = false;
      charts.renderCharts(document.getElementById("charts"), specs.map((spec, i) => ({ key: "t" + i, spec, refused: store.chartRefusal(spec) })));
    })`);
    // The chart is drawn inside its sandboxed frame; the page itself never loads vega (its CSP
    // allows no eval), and the frame's opaque origin reads none of the page's storage.
    const frame = page.frameLocator('#charts figure[data-key="t0"] iframe');
    await frame.locator("#chart svg").waitFor({ timeout: 15_000 });
    expect(await textOf('#charts figure[data-key="t0"] figcaption')).toBe("Samples per room");
    expect(await frame.locator("#chart svg text", { hasText: "B14" }).count()).toBeGreaterThan(0);
    expect(await page.locator('#charts figure[data-key="t0"] iframe').getAttribute("sandbox")).toBe("allow-scripts");
    expect(await page.evaluate(`[typeof vega, typeof vegaLite, typeof vegaEmbed]`)).toEqual([
      "undefined",
      "undefined",
      "undefined",
    ]);
    expect(await page.locator("script[src^='/vendor/']").count()).toBe(0);
    const inFrame = page.frames().find((f) => f.url().endsWith("/assets/chart-frame.html"));
    expect(
      await inFrame?.evaluate(
        `[self.origin, (() => { try { return sessionStorage.length; } catch (e) { return e.name; } })()]`,
      ),
    ).toEqual(["null", "SecurityError"]);
    // the frame grew to the chart's height, which it posted to the page
    await expect
      .poll(() =>
        page.evaluate(`document.querySelector('#charts figure[data-key="t0"] iframe').getBoundingClientRect().height`),
      )
      .toBeGreaterThan(100);
    expect(await page.locator('#charts figure[data-key="t1"] iframe').count()).toBe(0);
    expect(await frameCsp).toContain("script-src 'self' 'unsafe-eval'");
    expect(await frameCsp).toContain("connect-src 'none'");
    expect(await textOf('#charts figure[data-key="t1"] .refused')).toBe(
      "Not drawn: the chart loads data from a URL; only inline data is drawn.",
    );
    await screenshot(page, "web-charts");
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(pageProblems).toEqual([]);
  });

  test("the supervisor's options are shown for it alone; code run with Agent = Code shows its routing, settings, run and answer", async () => {
    await page.goto(baseUrl);
    await page.getByLabel(/API key/).fill(KEY);
    await page.getByLabel(/API key/).press("Tab");
    await expect
      .poll(() => page.getByLabel("Workflow").locator("option").allTextContents())
      .toContainEqual(expect.stringMatching(/^supervisor/));
    await page.getByLabel("Workflow").selectOption("blackboard");
    expect(await page.getByRole("group", { name: "Supervisor options" }).isHidden()).toBe(true);
    await page.getByLabel("Workflow").selectOption("supervisor");
    expect(await page.getByRole("group", { name: "Supervisor options" }).isVisible()).toBe(true);
    expect(await page.getByLabel(/^Depth/).inputValue()).toBe("standard");
    expect(await page.getByLabel(/^Scenario/).inputValue()).toBe("academic");
    // A specialist other than research: the research settings do not apply, so they go.
    await page.getByLabel(/^Agent/).selectOption("code");
    expect(await page.getByLabel(/^Depth/).isHidden()).toBe(true);
    expect(await page.getByLabel(/^Scenario/).isHidden()).toBe(true);
    expect(await seriousA11yViolations(page)).toEqual([]);

    await page.getByLabel("Question").fill(RUN_THIS);
    const posted = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/api/v1/query"));
    await page.getByRole("button", { name: "Ask" }).click();
    expect((await posted).postDataJSON()).toEqual({
      query: RUN_THIS,
      workflow: "supervisor",
      task_id: expect.any(String),
      mode: "code",
    });
    await pollText("#answer", 60_000).toContain("42");
    await pollText("#status").toMatch(/^Session completed in \d/);
    expect(await page.locator("#notes li").allTextContents()).toEqual([
      'Routed to code (confidence 1.00): explicit mode "code" (the router was not asked)',
      "Settings of the code agent: max iterations 3; languages python, javascript",
    ]);
    const run = page.locator(".call", { hasText: "run_js" });
    expect(await run.locator(".args").textContent()).toContain("console.log(6 * 7)");
    expect(await run.locator(".result").textContent()).toMatch(
      /^result after \d+(\.\d)? m?s: exit code 0\nstdout:\n42(\n|$)/,
    );
    expect(await run.locator(".result").getAttribute("data-state")).toBe("ok");

    const state = (await cluster.store.load(sessionInUrl()))?.state;
    expect(state?.meta.status).toBe("completed");
    expect(state?.data.workflow === "supervisor" && state.data.response).toBe(await textOf("#answer"));
    await screenshot(page, "web-supervisor-code");
    expect(await seriousA11yViolations(page)).toEqual([]);
    expect(pageProblems).toEqual([]);
  });

  test("with Agent = Automatic the router sends a code block to the code agent; a failed run shows its stderr ending with the exception", async () => {
    await page.goto(baseUrl);
    await page.getByLabel(/API key/).fill(KEY);
    await page.getByLabel(/API key/).press("Tab");
    await expect
      .poll(() => page.getByLabel("Workflow").locator("option").allTextContents())
      .toContainEqual(expect.stringMatching(/^supervisor/));
    await page.getByLabel("Workflow").selectOption("supervisor");
    await page.getByLabel(/^Depth/).selectOption("quick");
    await page.getByLabel(/^Scenario/).selectOption("technical");
    await page.getByLabel("Question").fill(RUN_FAILING);
    const posted = page.waitForRequest((r) => r.method() === "POST" && r.url().endsWith("/api/v1/query"));
    await page.getByRole("button", { name: "Ask" }).click();
    // Automatic sends no mode; the research settings are sent, as the router might pick research.
    expect((await posted).postDataJSON()).toEqual({
      query: RUN_FAILING,
      workflow: "supervisor",
      task_id: expect.any(String),
      depth: "quick",
      scenario: "technical",
    });
    await pollText("#status", 60_000).toMatch(/^Session completed in \d/);
    expect(await page.locator("#notes li").allTextContents()).toEqual([
      "Routed to code (confidence 0.70): the query mentions a code block, a code cue",
      "Settings of the code agent: max iterations 3; languages python, javascript",
    ]);
    const result = page.locator(".call", { hasText: "run_js" }).locator(".result");
    expect(await result.getAttribute("data-state")).toBe("failed");
    const shown = (await result.textContent()) ?? "";
    expect(shown).toMatch(/^failed after \d+(\.\d)? m?s: exit code 1\nstdout:\nbefore\nstderr:\n/);
    expect(shown).toMatch(/TypeError[^\n]*null[^\n]*$/);
    expect(await textOf("#answer")).toContain("The code failed");
    await screenshot(page, "web-supervisor-code-failed");
    expect(pageProblems).toEqual([]);
  });

  test("a key an earlier page left in localStorage is moved to sessionStorage once, and gone from localStorage", async () => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    try {
      const fresh = await context.newPage();
      const problems = problemsOf(fresh);
      await fresh.goto(baseUrl);
      expect(await fresh.evaluate(STORAGE)).toEqual({ local: {}, session: {} });
      await fresh.evaluate(`localStorage.setItem(${JSON.stringify(KEY_STORAGE)}, ${JSON.stringify(KEY)})`);
      await fresh.reload();
      expect(await fresh.getByLabel(/API key/).inputValue()).toBe(KEY);
      expect(await fresh.evaluate(STORAGE)).toEqual({ local: {}, session: { [KEY_STORAGE]: KEY } });
      // the key moved works: the workflows load with it
      await expect
        .poll(() => fresh.getByLabel("Workflow").locator("option").allTextContents())
        .toContainEqual(expect.stringMatching(/^blackboard/));
      // a reload of the tab keeps it (sessionStorage), and localStorage stays empty
      await fresh.reload();
      expect(await fresh.getByLabel(/API key/).inputValue()).toBe(KEY);
      expect(await fresh.evaluate(STORAGE)).toEqual({ local: {}, session: { [KEY_STORAGE]: KEY } });
      // another tab of the same browser does not have it
      const other = await context.newPage();
      await other.goto(baseUrl);
      expect(await other.getByLabel(/API key/).inputValue()).toBe("");
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("keyboard only: a question is asked and answered, the answer announced, a running session cancelled", async () => {
    const context = await browser.newContext({ viewport: VIEWPORT });
    try {
      const kb = await context.newPage();
      const problems = problemsOf(kb);
      await kb.goto(baseUrl);
      await kb.evaluate(
        `globalThis.focusTrail = []; document.addEventListener("focusin", (e) => focusTrail.push(e.target.id))`,
      );
      const focus = () => kb.evaluate(FOCUS) as Promise<{ id: string | null; ring: boolean }>;
      /** Presses `key` until the element `id` has focus (at most `max` times); it must show a focus ring. */
      const pressUntil = async (key: string, id: string, max = 30) => {
        for (let i = 0; i < max && (await focus()).id !== id; i++) await kb.keyboard.press(key);
        expect(await focus()).toEqual({ id, ring: true });
      };
      const live = (timeout = 60_000) =>
        expect.poll(async () => (await kb.locator("#announcer").textContent()) ?? "", { timeout, interval: 100 });

      // The skip link comes first, then the question.
      await kb.keyboard.press("Tab");
      expect(await focus()).toEqual({ id: "skip", ring: true });
      await kb.keyboard.press("Tab");
      expect(await focus()).toEqual({ id: "question", ring: true });
      await kb.keyboard.type(ARITHMETIC);
      // The key, two stops on; leaving its field loads the workflows with it.
      await kb.keyboard.press("Tab");
      await kb.keyboard.press("Tab");
      expect(await focus()).toEqual({ id: "api-key", ring: true });
      await kb.keyboard.type(KEY);
      await kb.keyboard.press("Shift+Tab");
      expect(await focus()).toEqual({ id: "workflow", ring: true });
      await expect
        .poll(() => kb.getByLabel("Workflow").locator("option").allTextContents())
        .toContainEqual(expect.stringMatching(/^blackboard/));
      expect(await kb.evaluate(STORAGE)).toEqual({ local: {}, session: { [KEY_STORAGE]: KEY } });
      await kb.keyboard.type("blackboard"); // a closed <select> picks the option its text starts with
      expect(await kb.getByLabel("Workflow").inputValue()).toBe("blackboard");
      expect(await kb.getByRole("group", { name: "Supervisor options" }).isHidden()).toBe(true);
      await pressUntil("Tab", "ask", 3);
      await kb.keyboard.press("Enter");

      // While it runs, focus waits on Cancel (Ask is disabled); when it ends, on the answer.
      await expect
        .poll(() => kb.locator("#answer").textContent(), { timeout: 60_000, interval: 100 })
        .toContain(PRODUCT);
      await live().toMatch(/^Answer ready\. /);
      expect(await kb.locator("#announcer").textContent()).toBe(
        `Answer ready. ${await kb.locator("#answer").textContent()}`,
      );
      expect(await kb.locator("#announcer").getAttribute("role")).toBe("status");
      expect(await kb.locator("#announcer").getAttribute("aria-live")).toBe("polite");
      await expect.poll(focus).toEqual({ id: "answer-box", ring: true });
      const trail = (await kb.evaluate("focusTrail")) as string[];
      expect(trail.slice(trail.indexOf("ask"))).toEqual(["ask", "cancel", "answer-box"]);
      // The streaming text is no live region, nor inside one: only the status line and the announcer speak.
      expect(await kb.evaluate(LIVE_REGIONS)).toEqual(["status", "announcer"]);

      // A second question, one that waits for a person; it is cancelled from the keyboard.
      await pressUntil("Shift+Tab", "question");
      await kb.keyboard.press("Control+A");
      await kb.keyboard.type(HANDBOOK);
      await pressUntil("Tab", "ask", 3);
      await kb.keyboard.press("Enter");
      await expect
        .poll(() => kb.locator("#clarify-question").textContent(), { timeout: 60_000, interval: 100 })
        .toBe(CLARIFICATION);
      expect(await focus()).toEqual({ id: "reply", ring: true });
      await live(1000).toBe("");
      const sid = /^#session=(.+)$/.exec(new URL(kb.url()).hash)?.[1] ?? "";
      // Cancel is the stop before the question the agents ask.
      await kb.keyboard.press("Shift+Tab");
      expect(await focus()).toEqual({ id: "cancel", ring: true });
      await kb.keyboard.press("Space");
      await expect
        .poll(() => kb.locator("#status").textContent(), { timeout: 30_000, interval: 100 })
        .toMatch(/^Session cancelled in \d/);
      await live(10_000).toBe("The session was cancelled.");
      await expect.poll(focus).toEqual({ id: "answer-box", ring: true });
      expect(await kb.locator("#cancel").isHidden()).toBe(true);
      expect(await kb.locator("#clarify").isHidden()).toBe(true);
      expect((await cluster.store.load(sid))?.state.meta.status).toBe("cancelled");
      await screenshot(kb, "web-keyboard-cancelled");
      expect(await seriousA11yViolations(kb)).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });

  test("a gateway in anonymous mode is used from a fresh browser without a key", async () => {
    const { url } = await cluster.startGateway({ AGENTMESH_GATEWAY_ANONYMOUS: "1" });
    const context = await browser.newContext(); // its own storage: no key kept
    try {
      const fresh = await context.newPage();
      await fresh.goto(url);
      expect(await fresh.getByLabel(/API key/).inputValue()).toBe("");
      await fresh.getByLabel("Question").fill(ARITHMETIC);
      await fresh.getByLabel("Workflow").selectOption("blackboard");
      await fresh.getByRole("button", { name: "Ask" }).click();
      await expect
        .poll(() => fresh.locator("#answer").textContent(), { timeout: 60_000, interval: 100 })
        .toContain(PRODUCT);
      const sid = /^#session=(.+)$/.exec(new URL(fresh.url()).hash)?.[1] ?? "";
      expect((await cluster.store.load(sid))?.state.meta.owner).toBe("anonymous");
    } finally {
      await context.close();
    }
  });
});
