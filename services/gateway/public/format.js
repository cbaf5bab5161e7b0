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
