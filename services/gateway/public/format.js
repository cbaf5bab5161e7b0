// Text the page derives from event values, kept apart from the DOM code so it is unit-tested.

/**
 * "1.2 s", "850 ms", "2 min 5 s".
 * @param {number} ms
 */
export function formatDuration(ms) {
  if (ms < 999.5) return `${Math.round(ms)} ms`;
  // Rounded once, to the unit shown, so 59.97 s is "1 min 0 s" and never "60.0 s".
  const tenths = Math.round(ms / 100);
  if (tenths < 600) return `${(tenths / 10).toFixed(1)} s`;
  const secs = Math.round(ms / 1000);
  return `${Math.floor(secs / 60)} min ${secs % 60} s`;
}

/**
 * The URL when it is http(s), else null: a `javascript:` link from an event is never made.
 * @param {string | null} url
 */
export function safeHref(url) {
  if (!url) return null;
  try {
    const u = new URL(url);
    return u.protocol === "https:" || u.protocol === "http:" ? u.href : null;
  } catch {
    return null;
  }
}

/**
 * A code run as the page shows it under its call, in place of the result's preview: how it
 * ended, then stdout, stderr and the last expression's value. A failed run's stderr ends with the
 * exception or the limit that stopped it (the workflow keeps the end when it cuts), so it is
 * shown whole.
 * @param {import("./progress-store.js").CodeResult} code
 */
export function codeRunText(code) {
  const parts = [
    code.exitCode === null ? "stopped by a limit" : `exit code ${code.exitCode}`,
    section("stdout", code.stdout),
    section("stderr", code.stderr),
    code.result === null ? "" : `result: ${code.result}`,
    code.truncated ? "(output cut)" : "",
  ];
  return parts.filter((s) => s !== "").join("\n");
}

/**
 * A labelled block of output, or "" when there is none.
 * @param {string} label
 * @param {string} text
 */
function section(label, text) {
  return text === "" ? "" : `${label}:\n${text.replace(/\n$/, "")}`;
}
