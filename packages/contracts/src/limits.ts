/** Hard limits shared by every service; each workflow's are stated in docs/workflows/. */
export const LIMITS = {
  /** Tool calls one session may make in all (every executor task counts one), unless configured. */
  defaultMaxToolCallsPerSession: 100,
  /** Largest task, result or inbox message body we publish or accept (bytes). */
  maxMessageBytes: 256 * 1024,
  /** Deepest JSON nesting (objects and arrays, the outermost is level 1) we publish or accept. */
  maxJsonDepth: 64,
  /**
   * Query length bounds (characters, after trimming) for every workflow; the blackboard workflow
   * asks for at least 3 (`BLACKBOARD_LIMITS.queryMinChars`).
   */
  queryMinChars: 1,
  queryMaxChars: 5000,
  /** critic-chain: retries per session before the run ends. */
  criticChainRetryLimit: 5,
  /** Upper bound for any free-text field an agent returns. */
  maxTextChars: 20_000,
  /** Upper bound for list fields an agent returns (plan steps, results). */
  maxListItems: 20,
  /** Transition-log lines kept per session: the first (the start) and the latest. */
  transitionLogCap: 1000,
  /** Transition-log bytes kept per session (same rule: the first line and the latest that fit). */
  transitionLogMaxBytes: 8 * 1024 * 1024,
  /** A log line's copy of its input, as JSON (characters); a longer input is logged as a summary. */
  maxLogInputChars: 4000,
  /** A stored session state, as JSON (bytes); a transition that would grow past it fails the session. */
  maxStateBytes: 1024 * 1024,
  /** A `complete` event, as JSON (bytes); a longer answer stays whole in the state and the event says so. */
  maxCompleteEventBytes: 256 * 1024,
  /** A `tool_call` event's arguments, as JSON (characters); longer ones are cut and marked `args_truncated`. */
  maxToolArgsChars: 4000,
  /** A `tool_result` event's preview of the tool's output (characters). */
  toolResultPreviewChars: 500,
  /** A `code_result` event's stdout and stderr, each (characters). */
  maxCodeOutputChars: 4000,
  /** Earlier turns a session receives (`messages`): at most this many, the latest kept. */
  maxConversationMessages: 40,
  /** ... and at most this many characters of content in all, the latest kept (one message alone may be cut). */
  maxConversationChars: 32_000,
  /** Sessions a thread remembers (the latest kept). */
  maxThreadSessions: 200,
  /** How long a thread's long-term references live after their last write, unless configured (7 days). */
  longTermRefsTtlMs: 7 * 24 * 3600 * 1000,
  /** A `visualization` event's Vega-Lite spec, as JSON (characters). */
  maxVisualizationSpecChars: 32_000,
  /** Attachments a session may carry (`SessionOptions.attachments`). */
  maxAttachments: 5,
  /** ... and at most this many characters of content in all (the data agent's data bound). */
  maxAttachmentChars: 100_000,
  /** A program an agent writes for the sandbox (characters). */
  maxCodeChars: 100_000,
  /** The data text the supervisor's data agent takes (characters). */
  maxDataChars: 100_000,
  /**
   * ... and at most this many bytes in all as their content travels at its largest (UTF-8, escaped
   * twice: a JSON string inside the code a data run sends), so the submit and the data agent's
   * code run stay under `maxMessageBytes`. Plain ASCII CSV passes at 100,000 characters.
   */
  maxAttachmentBytes: 224 * 1024,
} as const;

/** Current envelope schema version; a message with another `v` is rejected. */
export const SCHEMA_VERSION = 1 as const;

/**
 * Version of the stored SessionState layout, written beside every stored state. A store refuses
 * to load a newer one (an older coordinator would drop its fields on the next write) and migrates
 * the older ones it knows. 1: before the version was stored; 2: `meta.pause.expires_at`;
 * 3: `meta.owner` and `meta.thread_id`; 4: `meta.trace`; 5: the supervisor's `visited_agents`,
 * `handoff_summary` and request metadata; 6: task ids with the digest of the input that made their
 * version (`<sid>.<version>.<index>.<attempt>.<made>`), which a coordinator of layout 5 cannot parse;
 * 7: the blackboard memory's critic-derived `patterns`.
 */
export const STATE_SCHEMA_VERSION = 7 as const;
