import type { NatsConnection } from "@nats-io/transport-node";
import { listServices } from "@agentmesh/messaging";

/** Numeric counters from one service instance's `$SRV.STATS` data. */
export interface InstanceStats {
  readonly name: string;
  readonly id: string;
  readonly counters: Record<string, number>;
}

/**
 * `$SRV.STATS` of every service instance of this prefix. The `data` of our services is the same
 * object on each endpoint, so it is read once per instance (never summed over endpoints).
 */
export async function serviceStats(nc: NatsConnection, prefix: string, timeoutMs = 1000): Promise<InstanceStats[]> {
  const all = await listServices(nc, timeoutMs);
  const out: InstanceStats[] = [];
  for (const s of all) {
    if (s.info.metadata.prefix !== prefix) continue;
    const data = s.stats?.endpoints.find((e) => e.data !== undefined)?.data;
    const counters: Record<string, number> = {};
    if (data && typeof data === "object") {
      for (const [k, v] of Object.entries(data as Record<string, unknown>)) {
        if (typeof v === "number") counters[k] = v;
        // one level of nesting: the coordinator's inbox consumer reports under `inbox`
        else if (v && typeof v === "object")
          for (const [k2, v2] of Object.entries(v as Record<string, unknown>))
            if (typeof v2 === "number") counters[`${k}.${k2}`] = v2;
      }
    }
    out.push({ name: s.info.name, id: s.info.id, counters });
  }
  return out;
}

/** Sums counters per service name (coordinator, planner, …). */
export function totalsByService(stats: readonly InstanceStats[]): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const s of stats) {
    const t = (out[s.name] ??= {});
    for (const [k, v] of Object.entries(s.counters)) t[k] = (t[k] ?? 0) + v;
  }
  return out;
}

/** after − before, per service and counter (in_flight gauges keep their after value). */
export function diffTotals(
  before: Record<string, Record<string, number>>,
  after: Record<string, Record<string, number>>,
): Record<string, Record<string, number>> {
  const out: Record<string, Record<string, number>> = {};
  for (const [name, counters] of Object.entries(after)) {
    const b = before[name] ?? {};
    out[name] = Object.fromEntries(
      Object.entries(counters).map(([k, v]) => [
        k,
        k === "in_flight" || k.endsWith(".in_flight") ? v : v - (b[k] ?? 0),
      ]),
    );
  }
  return out;
}
