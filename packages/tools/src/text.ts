/**
 * Flattens whitespace and clips to `max` characters at a word boundary when one is near, marking
 * the cut with an ellipsis. Every service that quotes a corpus passage clips it with this one
 * function, so the same passage cited by the retriever and the executor is the same source.
 */
export function clipText(text: string, max: number): string {
  const flat = text.replace(/\s+/g, " ").trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = cut.lastIndexOf(" ");
  return `${space > max * 0.6 ? cut.slice(0, space) : cut}…`;
}
