import type { Naming } from "@agentmesh/contracts";
import {
  readStoredEvents,
  startEventFeed,
  type EventFeed,
  type FeedMessage,
  type Log,
  type StoredMessage,
} from "@agentmesh/messaging";
import type { NatsConnection } from "@nats-io/transport-node";

/** What one open stream hears from its replica's feed. */
export interface SessionListener {
  /**
   * A stored message of the session (its events, or a token delta when `tokens` is set), in
   * stream order (a recent one may come again: the caller drops seq it has).
   */
  message(m: StoredMessage): void;
  /** Whether it wants the session's token deltas too. */
  readonly tokens: boolean;
  /** The feed stopped or failed: nothing more will come live. */
  closed(err: unknown): void;
}

/**
 * A replica's one reader of live events, routed in memory by session id to the streams open on it;
 * and the replay of a session's stored events from a position (direct gets, no consumer).
 */
export interface EventHub {
  /** Starts the feed on first use (once); resolves when live events flow. */
  ready(): Promise<void>;
  /** Hands the session's live events to `l` from now on, until the returned function is called. */
  listen(sessionId: string, l: SessionListener): () => void;
  /** The session's messages among the latest the feed delivered, after stream sequence `afterSeq`, in order (tokens too when `tokens`). */
  recent(sessionId: string, afterSeq: number, tokens: boolean): StoredMessage[];
  /** The session's stored messages from stream sequence `fromSeq` (inclusive) to the last one stored now (tokens too when `tokens`). */
  replay(sessionId: string, fromSeq: number, tokens: boolean): AsyncIterable<StoredMessage>;
  /**
   * The stream sequence up to which the feed has delivered (0 before it started): a session
   * created after this is read returns events only past it.
   */
  position(): number;
  /** Sessions and streams listening now. */
  stats(): { sessions: number; listeners: number };
  /** Ends every listener and deletes the feed's consumer. */
  stop(): Promise<void>;
}

/**
 * How many of the latest stored messages the hub keeps: a stream going live takes those of its
 * session past its replay too, so a replay answered by a stream replica that lags behind the one
 * feeding this hub (direct gets on a replicated stream) cannot miss the newest ones.
 */
const RECENT = 1024;

/** The latest messages the feed delivered (at most RECENT), read only when asked for. */
function recentMessages() {
  const ring: FeedMessage[] = [];
  return {
    add(m: FeedMessage) {
      ring.push(m);
      if (ring.length > RECENT) ring.shift();
    },
    of: (sessionId: string, afterSeq: number, tokens: boolean): StoredMessage[] =>
      ring.flatMap((m) => {
        const wanted = m.sessionId === sessionId && m.seq > afterSeq && (tokens || m.kind === "events");
        const b = wanted ? m.read() : null;
        return b ? [b] : [];
      }),
    clear: () => void (ring.length = 0),
  };
}

/** The hub of one gateway replica over `nc`; nothing is read until the first `ready()`. */
export function createEventHub(nc: NatsConnection, naming: Naming, log?: Log): EventHub {
  const bySession = new Map<string, Set<SessionListener>>();
  const recent = recentMessages();
  let feed: Promise<EventFeed> | null = null;
  let stopped = false;
  let delivered = 0;

  const endAll = (err: unknown) => {
    const all = [...bySession.values()].flatMap((s) => [...s]);
    bySession.clear();
    for (const l of all) l.closed(err);
  };
  const start = (): Promise<EventFeed> =>
    startEventFeed(
      nc,
      naming,
      {
        message: (m) => {
          delivered = Math.max(delivered, m.seq);
          recent.add(m);
          // decoded only for a session some stream here follows (and a token only if one wants it)
          for (const l of bySession.get(m.sessionId) ?? []) {
            if (m.kind === "token" && !l.tokens) continue;
            // read() decodes once and keeps what it read
            const b = m.read();
            if (b) l.message(b);
          }
        },
        failed: (err) => {
          log?.warn({ err: (err as Error).message }, "the live events feed failed; open streams end");
          // the next stream starts a new feed
          const failed = feed;
          feed = null;
          recent.clear();
          endAll(err);
          void failed?.then((f) => f.stop()).catch(() => {});
        },
      },
      log,
    );

  return {
    async ready() {
      if (stopped) throw new Error("the event hub is stopped");
      feed ??= start().catch((err: unknown) => {
        feed = null;
        throw err;
      });
      const f = await feed;
      delivered = Math.max(delivered, f.startedAfter);
    },
    listen(sessionId, l) {
      // a feed that failed (or stopped) since the caller's ready(): nothing live would come
      if (feed === null) {
        l.closed(new Error(stopped ? "the gateway is shutting down" : "the live events feed is not running"));
        return () => {};
      }
      let set = bySession.get(sessionId);
      if (!set) bySession.set(sessionId, (set = new Set()));
      set.add(l);
      return () => {
        const s = bySession.get(sessionId);
        if (!s) return;
        s.delete(l);
        if (s.size === 0) bySession.delete(sessionId);
      };
    },
    recent: recent.of,
    replay: (sessionId, fromSeq, tokens) => readStoredEvents(nc, naming, sessionId, fromSeq, log, { tokens }),
    position: () => delivered,
    stats: () => ({
      sessions: bySession.size,
      listeners: [...bySession.values()].reduce((n, s) => n + s.size, 0),
    }),
    async stop() {
      stopped = true;
      endAll(new Error("the gateway is shutting down"));
      const f = await feed?.catch(() => null);
      feed = null;
      await f?.stop();
    },
  };
}
