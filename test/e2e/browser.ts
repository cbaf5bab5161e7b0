import { execFileSync } from "node:child_process";
import { accessSync, constants, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { chromium, type Browser, type Frame, type Page } from "playwright-core";

// A real headless Chromium for the web page's end-to-end tests: Debian's `chromium` package
// (installed by .ci/run) driven by a pinned playwright-core. No browser is ever downloaded
// (`playwright install` is never run): the executable is the system's.

const root = join(import.meta.dirname, "../..");
/** Where screenshots go (gitignored; CI keeps the folder as test artifacts). */
export const SCREENSHOT_DIR = join(root, "test-artifacts/screenshots");

/**
 * The system Chromium: `CHROMIUM_PATH` when set, else the Debian binary behind the
 * `/usr/bin/chromium` wrapper (the wrapper only adds desktop flags), else whatever `chromium` is
 * on PATH. Throws naming the package to install.
 */
export function chromiumPath(): string {
  const candidates = [
    process.env.CHROMIUM_PATH,
    "/usr/lib/chromium/chromium",
    "/usr/bin/chromium",
    "/usr/bin/chromium-browser",
    onPath("chromium"),
    onPath("chromium-browser"),
  ];
  for (const c of candidates) {
    if (c && executable(c)) return c;
  }
  throw new Error("no Chromium found: install Debian's package (`apt-get install -y chromium`) or set CHROMIUM_PATH");
}

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string): string | undefined {
  try {
    return execFileSync("sh", ["-c", `command -v ${name}`], { encoding: "utf8" }).trim() || undefined;
  } catch {
    return undefined;
  }
}

/** Launches headless Chromium; its sandbox is off only as root, where Chromium refuses to start with it. */
export async function launchBrowser(): Promise<Browser> {
  const asRoot = process.getuid?.() === 0;
  return chromium.launch({
    executablePath: chromiumPath(),
    headless: true,
    args: asRoot ? ["--no-sandbox"] : [],
  });
}

/** The browser's version string ("156.0.…"), for the test's log. */
export function browserVersion(browser: Browser): string {
  return browser.version();
}

/** Saves a full-page screenshot as `<name>.png` under test-artifacts/screenshots/; returns its path. */
export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const path = join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** One accessibility finding: the rule, how bad, and where. */
export interface AxeFinding {
  readonly id: string;
  readonly impact: string;
  readonly help: string;
  readonly targets: readonly string[];
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/**
 * Runs axe-core (WCAG 2 A and AA rules) in the page as it is now, and in each of its frames (the
 * sandboxed chart frames among them, whose opaque origin axe cannot reach from the page), and
 * returns the serious and critical violations; an empty list is a pass. A finding in a frame has
 * its targets prefixed with the frame's path.
 */
export async function seriousA11yViolations(page: Page): Promise<AxeFinding[]> {
  const found: AxeFinding[] = [];
  for (const frame of page.frames()) {
    if (frame.isDetached() || !/^https?:/.test(frame.url())) continue;
    const where = frame === page.mainFrame() ? "" : `${new URL(frame.url()).pathname} `;
    for (const v of await axeViolations(frame, frame === page.mainFrame()))
      found.push({ ...v, targets: v.targets.map((t) => where + t) });
  }
  return found.filter((v) => v.impact === "serious" || v.impact === "critical");
}

/**
 * axe's violations in one frame's document alone (its own frames are run on their own). In a
 * child frame axe does not fetch the style sheets (`preload`, for rules that read the CSS): the
 * chart frame's CSP lets it connect nowhere, and a refused fetch is logged as an error.
 */
async function axeViolations(frame: Frame, top: boolean): Promise<AxeFinding[]> {
  // Evaluated through the debugging protocol, not as a <script>: the page's CSP allows no inline script.
  if (!(await frame.evaluate(() => "axe" in globalThis))) await frame.evaluate(axeSource);
  return frame.evaluate(async (preload) => {
    const axe = (
      globalThis as unknown as {
        axe: {
          run(
            ctx: unknown,
            opts: unknown,
          ): Promise<{
            violations: Array<{ id: string; impact: string | null; help: string; nodes: Array<{ target: unknown[] }> }>;
          }>;
        };
      }
    ).axe;
    const result = await axe.run("html", {
      runOnly: { type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"] },
      iframes: false,
      preload,
    });
    return result.violations.map((v) => ({
      id: v.id,
      impact: v.impact ?? "unknown",
      help: v.help,
      targets: v.nodes.map((n) => n.target.map(String).join(" ")),
    }));
  }, top);
}
