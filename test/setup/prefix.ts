import { randomBytes } from "node:crypto";

/** A unique subject/stream/key prefix per test, so runs sharing one server never collide. */
export function uniquePrefix(tag = "t"): string {
  return `${tag}${randomBytes(5).toString("hex")}`.toLowerCase();
}
