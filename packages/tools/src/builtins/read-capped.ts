/**
 * Reads a response body whole, failing with `tooBig()` (the stream cancelled) as soon as it passes
 * `max` bytes; null when the response has no body.
 */
export async function readBodyCapped(res: Response, max: number, tooBig: () => Error): Promise<Buffer | null> {
  const reader = res.body?.getReader();
  if (!reader) return null;
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > max) {
      await reader.cancel();
      throw tooBig();
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
