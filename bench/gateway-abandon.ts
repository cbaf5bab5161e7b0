// The abandoned-streams figure of `pnpm bench`: after the gateway comparison, streams of the
// sessions it ran through the gateway are opened and left in three ways (a third during set-up, a
// third after the first event, a third mid-stream: at the first token delta, or the second event of
// a session that streams none), as clients that leave do;
// then the gateway's open streams, the consumers on the events stream, and the gateway process's
// RSS and V8 heap, before and after. See bench/README.md.
import { Agent, request } from "node:http";
import { jetstreamManager } from "@nats-io/jetstream";
import type { NatsConnection } from "@nats-io/transport-node";
import type { Naming } from "@agentmesh/contracts";
import { rssKiB } from "./sysinfo.js";

/** How a stream's client leaves it. */
export type Leave = "during set-up" | "after the first event" | "mid-stream";
const LEAVES: readonly Leave[] = ["during set-up", "after the first event", "mid-stream"];

/** The gateway as this figure reads it: its API, its metrics endpoint and its process. */
export interface AbandonTarget {
  readonly url: string;
  readonly key: string;
  readonly metricsUrl: string;
  readonly pid: number;
}

/** What the gateway held before the streams and after them (once it settled). */
export interface GatewayHeld {
  readonly openStreams: number | null;
  readonly consumers: number;
  readonly rssKiB: number | null;
  /** `nodejs_heap_size_used_bytes` (garbage not forced out). */
  readonly heapUsedBytes: number | null;
}

export interface AbandonFigures {
  readonly streams: number;
  readonly left: Record<Leave, number>;
  /** Streams that ended before the point their client meant to leave at (a session without tokens). */
  readonly endedEarly: number;
  readonly elapsedMs: number;
  readonly before: GatewayHeld;
  readonly after: GatewayHeld;
}

const agent = new Agent({ keepAlive: false });

/** Opens one stream and leaves it as `how` says; resolves with whether it got that far. */
function openAndLeave(t: AbandonTarget, sid: string, how: Leave, i: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request(`${t.url}/api/v1/sessions/${sid}/events`, {
      agent,
      headers: { authorization: `Bearer ${t.key}` },
    });
    const leave = (reached: boolean) => {
      req.destroy();
      resolve(reached);
    };
    req.on("error", () => resolve(how === "during set-up"));
    if (how === "during set-up") {
      // hung up a moment after the request went out, before or while the stream is set up
      setTimeout(() => leave(true), i % 10);
      req.end();
      return;
    }
    req.on("response", (res) => {
      let buf = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        buf += chunk;
        const ids = (`\n${buf}`.match(/\nid: \d/g) ?? []).length;
        // mid-stream: at its first token delta, or its second event in a session that streams none
        if (how === "after the first event" ? ids >= 1 : buf.includes("event: token\n") || ids >= 2) leave(true);
      });
      res.on("end", () => leave(false));
    });
    req.end();
  });
}

/** What the gateway holds now, read from its metrics endpoint, its process and the events stream. */
async function held(t: AbandonTarget, nc: NatsConnection, naming: Naming): Promise<GatewayHeld> {
  const text = await fetch(t.metricsUrl).then(
    (r) => r.text(),
    () => "",
  );
  const gauge = (name: string) => {
    const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([0-9.e+]+)$`, "m").exec(text);
    return m ? Number(m[1]) : null;
  };
  const jsm = await jetstreamManager(nc);
  return {
    openStreams: gauge("agentmesh_http_open_streams"),
    consumers: (await jsm.consumers.list(naming.streams.events).next()).length,
    rssKiB: rssKiB(t.pid),
    heapUsedBytes: gauge("nodejs_heap_size_used_bytes"),
  };
}

/** Opens `streams` streams over `sessionIds` in batches of 100 and leaves each, then lets the gateway settle. */
export async function abandonStreams(o: {
  readonly target: AbandonTarget;
  readonly nc: NatsConnection;
  readonly naming: Naming;
  readonly sessionIds: readonly string[];
  readonly streams: number;
  readonly settleMs?: number;
}): Promise<AbandonFigures> {
  if (o.sessionIds.length === 0) throw new Error("the abandoned-streams figure needs sessions run through the gateway");
  const before = await held(o.target, o.nc, o.naming);
  const left: Record<Leave, number> = { "during set-up": 0, "after the first event": 0, "mid-stream": 0 };
  let endedEarly = 0;
  const t0 = performance.now();
  for (let at = 0; at < o.streams; at += 100) {
    const batch = Array.from({ length: Math.min(100, o.streams - at) }, (_, k) => at + k);
    const reached = await Promise.all(
      batch.map((i) => openAndLeave(o.target, o.sessionIds[i % o.sessionIds.length]!, LEAVES[i % 3]!, i)),
    );
    for (const [k, ok] of reached.entries()) {
      if (ok) left[LEAVES[batch[k]! % 3]!]++;
      else endedEarly++;
    }
  }
  const elapsedMs = performance.now() - t0;
  await new Promise((r) => setTimeout(r, o.settleMs ?? 3000));
  return { streams: o.streams, left, endedEarly, elapsedMs, before, after: await held(o.target, o.nc, o.naming) };
}

/** The figure's lines for the report. */
export function abandonLines(f: AbandonFigures): string[] {
  const mib = (kib: number | null) => (kib === null ? "?" : `${(kib / 1024).toFixed(1)} MiB`);
  const heap = (b: number | null) => (b === null ? "?" : `${(b / 1024 / 1024).toFixed(1)} MiB`);
  return [
    `Abandoned streams: ${f.streams} opened on finished gateway sessions and left (${LEAVES.map((l) => `${f.left[l]} ${l}`).join(", ")}; ${f.endedEarly} ended first) in ${(f.elapsedMs / 1000).toFixed(1)} s`,
    `  before: ${f.before.openStreams ?? "?"} open streams, ${f.before.consumers} consumers on the events stream, gateway RSS ${mib(f.before.rssKiB)}, heap used ${heap(f.before.heapUsedBytes)}`,
    `  after:  ${f.after.openStreams ?? "?"} open streams, ${f.after.consumers} consumers on the events stream, gateway RSS ${mib(f.after.rssKiB)}, heap used ${heap(f.after.heapUsedBytes)}`,
  ];
}
