import type { TokenDelta } from "@agentmesh/messaging";
import type { Out } from "./render.js";

/** What `agentmesh ask` prints while a session runs: progress lines and live model text, interleaved. */
export interface AskPrinter {
  /** A progress line (or, with --json, an event's JSON); ends an open run of live text first. */
  line(s: string): void;
  /** A live token delta, printed as it comes; a new task's text starts under a `role.op` heading. */
  token(t: TokenDelta): void;
  /** Ends an open run of live text with a newline (before the final answer). */
  end(): void;
}

/** Live text is indented under its heading, as step details are. */
const INDENT = "    ";

/**
 * The printer of `agentmesh ask`. Deltas come de-duplicated (followTokens drops a redelivered
 * task's repeated seqs); everything goes through `out`, so it is terminal-safe and redacted.
 * With `json`, each delta is a JSON line like the events.
 */
export function createAskPrinter(out: Out, opts: { readonly json: boolean }): AskPrinter {
  /** The task whose text is being written, null when the cursor is after a complete line. */
  let open: string | null = null;
  let atLineStart = true;

  const end = () => {
    if (open !== null && !atLineStart) out.write("\n");
    open = null;
    atLineStart = true;
  };

  return {
    line(s) {
      end();
      out.line(s);
    },
    token(t) {
      if (opts.json) {
        out.line(JSON.stringify(t));
        return;
      }
      if (open !== t.task_id) {
        end();
        out.line(`  ✎ ${t.role !== undefined && t.op !== undefined ? `${t.role}.${t.op}` : t.task_id}:`);
        open = t.task_id;
      }
      let text = "";
      for (const [i, part] of t.delta.split("\n").entries()) {
        if (i > 0) {
          text += "\n";
          atLineStart = true;
        }
        if (part === "") continue;
        text += `${atLineStart ? INDENT : ""}${part}`;
        atLineStart = false;
      }
      if (text) out.write(text);
    },
    end,
  };
}
