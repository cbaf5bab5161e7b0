/** Waits until `ok()` holds, polling every 20 ms; throws naming `what` after `ms`. For tests that watch a state change. */
export async function waitUntil(what: string, ok: () => boolean, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
