import { readFileSync, statSync } from "node:fs";
import { basename, extname } from "node:path";
import { AgentmeshError, Attachments, LIMITS, formatZodError, type Attachment } from "@agentmesh/contracts";
import { terminalSafe } from "./text.js";

/** A file's content type, by its extension: CSV, JSON, else plain text. */
export function contentTypeOf(path: string): Attachment["content_type"] {
  const ext = extname(path).toLowerCase();
  return ext === ".csv" ? "text/csv" : ext === ".json" ? "application/json" : "text/plain";
}

/** The most bytes a file may have before it is read: a character takes at most 4 bytes in UTF-8. */
const MAX_FILE_BYTES = LIMITS.maxAttachmentChars * 4;

const refuse = (message: string) => new AgentmeshError("invalid_config", `--attach: ${message}`);

/** One `--attach` file as an attachment: it must exist, be a file of UTF-8 text, and not be over the limit alone. */
function readOne(path: string): Attachment {
  const shown = JSON.stringify(terminalSafe(path));
  let size: number;
  try {
    const st = statSync(path);
    if (!st.isFile()) throw refuse(`${shown} is not a file`);
    size = st.size;
  } catch (err) {
    if (err instanceof AgentmeshError) throw err;
    throw refuse(
      `cannot read ${shown} (${(err as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (err as Error).message})`,
    );
  }
  if (size > MAX_FILE_BYTES)
    throw refuse(
      `${shown} is ${size} bytes, over the ${LIMITS.maxAttachmentChars} characters attachments may hold in all`,
    );
  let content: string;
  try {
    content = new TextDecoder("utf-8", { fatal: true }).decode(readFileSync(path)).replace(/^\uFEFF/, "");
  } catch (err) {
    throw refuse(
      err instanceof TypeError
        ? `${shown} is not UTF-8 text (attachments are text: CSV, JSON or plain text)`
        : `cannot read ${shown} (${(err as Error).message})`,
    );
  }
  return { name: basename(path), content_type: contentTypeOf(path), content };
}

/**
 * The `--attach` files (repeatable) as the session's attachments, read and checked before anything
 * connects: each must exist and be UTF-8 text, and together they keep the contract's bounds
 * (`LIMITS.maxAttachments` files, `LIMITS.maxAttachmentChars` characters). Throws a clear `invalid_config`.
 */
export function readAttachments(paths: readonly string[]): Attachment[] {
  if (paths.length > LIMITS.maxAttachments)
    throw refuse(`${paths.length} files given, at most ${LIMITS.maxAttachments}`);
  const files = paths.map(readOne);
  const chars = files.reduce((n, f) => n + f.content.length, 0);
  if (chars > LIMITS.maxAttachmentChars)
    throw refuse(`the files hold ${chars} characters in all, over the limit of ${LIMITS.maxAttachmentChars}`);
  const checked = Attachments.safeParse(files);
  if (!checked.success) throw refuse(formatZodError(checked.error, 300));
  return checked.data;
}
