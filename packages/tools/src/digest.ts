import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every level and no whitespace, so equal values give equal
 * text whatever order their keys were built in (RFC 8785 in spirit; numbers as JSON prints them).
 * Throws a TypeError for cycles, bigints, and values nested deeper than `maxDepth`.
 */
export function canonicalJson(value: unknown, maxDepth = 200): string {
  const seen = new Set<object>();
  const walk = (v: unknown, depth: number): string | undefined => {
    if (depth > maxDepth) throw new TypeError(`value nested deeper than ${maxDepth}`);
    if (v === null) return "null";
    switch (typeof v) {
      case "string":
      case "boolean":
        return JSON.stringify(v);
      case "number":
        return Number.isFinite(v) ? JSON.stringify(v) : "null";
      case "bigint":
        throw new TypeError("bigint is not JSON");
      case "undefined":
      case "function":
      case "symbol":
        return undefined;
      case "object":
        break;
    }
    const obj = v as object;
    if (seen.has(obj)) throw new TypeError("cyclic value");
    seen.add(obj);
    try {
      const toJSON = (obj as { toJSON?: unknown }).toJSON;
      if (typeof toJSON === "function") return walk((toJSON as () => unknown).call(obj), depth + 1);
      if (Array.isArray(obj)) return `[${obj.map((x) => walk(x, depth + 1) ?? "null").join(",")}]`;
      const parts: string[] = [];
      for (const key of Object.keys(obj).sort()) {
        const text = walk((obj as Record<string, unknown>)[key], depth + 1);
        if (text !== undefined) parts.push(`${JSON.stringify(key)}:${text}`);
      }
      return `{${parts.join(",")}}`;
    } finally {
      seen.delete(obj);
    }
  };
  return walk(value, 0) ?? "null";
}

/** sha256 (hex) of the canonical JSON of a tool's arguments: the same arguments give the same digest. */
export function argsDigest(args: unknown): string {
  return createHash("sha256").update(canonicalJson(args)).digest("hex");
}
