import { AgentmeshError } from "@agentmesh/contracts";
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";

/**
 * The label names a metric may have. Closed on purpose: a label's values become time series, so
 * only names whose values come from a bounded set (the role registry, configuration, a union of
 * our own) are allowed; ids of sessions, tasks or threads can never become one.
 */
export const METRIC_LABELS = [
  "role",
  "op",
  "outcome",
  "model",
  "workflow",
  "status",
  "kind",
  "stream",
  "consumer",
  "reason",
  "result",
  "route",
] as const;
export type MetricLabel = (typeof METRIC_LABELS)[number];

/** Distinct label sets one metric keeps; later new ones are folded into a single `other` set. */
export const MAX_SERIES_PER_METRIC = 500;
/** The value every label of a folded series gets. */
export const OVERFLOW_LABEL = "other";

export type Labels<L extends MetricLabel> = { readonly [K in L]: string };

/** What a metric is: its name (`agentmesh_…`), one line of help, and its label names. */
export interface MetricSpec<L extends MetricLabel> {
  readonly name: string;
  readonly help: string;
  readonly labels: readonly L[];
}

/** A monotonically increasing count. */
export interface CounterMetric<L extends MetricLabel> {
  inc(labels: Labels<L>, by?: number): void;
}

/** A value that goes up and down. */
export interface GaugeMetric<L extends MetricLabel> {
  set(labels: Labels<L>, value: number): void;
  inc(labels: Labels<L>, by?: number): void;
  dec(labels: Labels<L>, by?: number): void;
}

/** A distribution of observed values (seconds for durations). */
export interface HistogramMetric<L extends MetricLabel> {
  observe(labels: Labels<L>, value: number): void;
}

/** A counter whose totals are kept elsewhere (a component's own stats): read at each scrape. */
export interface ReadCounterSpec<L extends MetricLabel> extends MetricSpec<L> {
  readonly read: () => ReadonlyArray<{ readonly labels: Labels<L>; readonly value: number }>;
}

/** A gauge sampled at each scrape (e.g. a consumer's pending count asked of the server). */
export interface SampledGaugeSpec<L extends MetricLabel> extends MetricSpec<L> {
  readonly sample: (gauge: GaugeMetric<L>) => void | Promise<void>;
}

/**
 * The one metrics registry of a process. Asking twice for the same name returns the same metric
 * (the coordinator and the agents of `services/local` share one registry), provided the kind and
 * the labels agree; anything else is a bug and throws.
 */
export interface Metrics {
  counter<L extends MetricLabel>(spec: MetricSpec<L>): CounterMetric<L>;
  /**
   * A counter read from elsewhere at scrape time. Several sources may share a name (their values
   * for the same labels add up); the returned function removes this source.
   */
  readCounter<L extends MetricLabel>(spec: ReadCounterSpec<L>): () => void;
  gauge<L extends MetricLabel>(spec: MetricSpec<L>): GaugeMetric<L>;
  /**
   * A gauge sampled at scrape time. Several samplers may share a name (each sets its own label
   * sets, e.g. one consumer each); the returned function removes this sampler.
   */
  sampledGauge<L extends MetricLabel>(spec: SampledGaugeSpec<L>): () => void;
  histogram<L extends MetricLabel>(spec: MetricSpec<L> & { readonly buckets: readonly number[] }): HistogramMetric<L>;
  /** The exposition text of every metric, default Node metrics included. */
  text(): Promise<string>;
  readonly contentType: string;
  /** The registered metric names (ours, not the default Node ones). */
  names(): string[];
}

/** Durations of work that calls models: 50 ms to 10 min. */
export const TASK_SECONDS_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600] as const;
/** Durations of an HTTP request up to its response's head: 1 ms to 60 s. */
export const HTTP_SECONDS_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60] as const;
/** Durations of a coordinator step (load, step, CAS, publish): 1 ms to 10 s. */
export const STEP_SECONDS_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10] as const;

const NAME = /^agentmesh_[a-z][a-z0-9_]*$/;

type Kind = "counter" | "gauge" | "histogram" | "read counter" | "sampled gauge";
interface Entry {
  readonly kind: Kind;
  readonly labels: string;
  /** The handle (counter, gauge, histogram) or the set of sources (read counter, sampled gauge). */
  readonly metric: unknown;
}

function checkSpec(spec: MetricSpec<MetricLabel>, kind: Kind): void {
  const problems: string[] = [];
  const counter = kind === "counter" || kind === "read counter";
  if (!NAME.test(spec.name)) problems.push(`name must match ${NAME.source}`);
  if (counter && !spec.name.endsWith("_total")) problems.push("a counter's name ends in _total");
  if (!counter && spec.name.endsWith("_total")) problems.push("only counters end in _total");
  const unknown = spec.labels.filter((l) => !(METRIC_LABELS as readonly string[]).includes(l));
  if (unknown.length)
    problems.push(`label(s) ${unknown.join(", ")} not in METRIC_LABELS (labels must have bounded values)`);
  if (new Set(spec.labels).size !== spec.labels.length) problems.push("a label is named twice");
  if (spec.help.trim() === "") problems.push("help is empty");
  if (problems.length) throw new AgentmeshError("internal", `bad metric ${spec.name}: ${problems.join("; ")}`);
}

/** Folds label sets past the cap into one `other` set, so a bug cannot grow a metric without bound. */
function seriesCap<L extends MetricLabel>(names: readonly L[]): (labels: Labels<L>) => Labels<L> {
  const seen = new Set<string>();
  const other = Object.fromEntries(names.map((n) => [n, OVERFLOW_LABEL])) as Labels<L>;
  return (labels) => {
    const key = names.map((n) => labels[n]).join("\u0000");
    if (seen.has(key)) return labels;
    if (seen.size >= MAX_SERIES_PER_METRIC) return other;
    seen.add(key);
    return labels;
  };
}

/** A gauge's handle over a prom-client gauge, with the series cap. */
function gaugeHandle<L extends MetricLabel>(g: Gauge<L>, names: readonly L[]): GaugeMetric<L> {
  const cap = seriesCap(names);
  return {
    set: (labels, value) => g.set(cap(labels), value),
    inc: (labels, by = 1) => g.inc(cap(labels), by),
    dec: (labels, by = 1) => g.dec(cap(labels), by),
  };
}

/** A process's registry and what was registered in it, by name. */
interface Book {
  readonly registry: Registry;
  readonly entries: Map<string, Entry>;
}

/** The metric already registered under the spec's name (undefined if none); a different kind or label set is our bug. */
function existing(book: Book, spec: MetricSpec<MetricLabel>, kind: Kind): unknown {
  checkSpec(spec, kind);
  const e = book.entries.get(spec.name);
  if (!e) return undefined;
  const labels = [...spec.labels].sort().join(",");
  if (e.kind !== kind || e.labels !== labels) {
    throw new AgentmeshError(
      "internal",
      `metric ${spec.name} is registered twice (${e.kind} {${e.labels}}, then ${kind} {${labels}})`,
    );
  }
  return e.metric;
}

/** Records the metric under the spec's name; returns it. */
function remember(book: Book, spec: MetricSpec<MetricLabel>, kind: Kind, metric: unknown): unknown {
  book.entries.set(spec.name, { kind, labels: [...spec.labels].sort().join(","), metric });
  return metric;
}

/** Adds `source` to the set kept under the spec's name (creating the metric once); returns its removal. */
function addSource<S>(
  book: Book,
  spec: MetricSpec<MetricLabel>,
  kind: Kind,
  source: S,
  create: (sources: Set<S>) => void,
): () => void {
  let sources = existing(book, spec, kind) as Set<S> | undefined;
  if (!sources) {
    sources = new Set<S>();
    create(sources);
    remember(book, spec, kind, sources);
  }
  const set = sources;
  set.add(source);
  return () => void set.delete(source);
}

/** The prom-client settings every metric of the spec starts from. */
function base<L extends MetricLabel>(book: Book, spec: MetricSpec<L>) {
  return {
    name: spec.name,
    help: spec.help,
    labelNames: [...spec.labels],
    registers: [book.registry],
  };
}

/**
 * Creates a process's registry with the default Node metrics (CPU, memory, event loop lag, GC,
 * handles) under their usual names. Create one per process and pass it to every component.
 */
export function createMetrics(opts: { defaultMetrics?: boolean } = {}): Metrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const entries = new Map<string, Entry>();
  const book: Book = { registry, entries };

  return {
    counter<L extends MetricLabel>(spec: MetricSpec<L>): CounterMetric<L> {
      const found = existing(book, spec, "counter") as CounterMetric<L> | undefined;
      if (found) return found;
      const c = new Counter<L>(base(book, spec));
      const cap = seriesCap(spec.labels);
      const handle: CounterMetric<L> = { inc: (labels, by = 1) => c.inc(cap(labels), by) };
      return remember(book, spec, "counter", handle) as CounterMetric<L>;
    },
    readCounter<L extends MetricLabel>(spec: ReadCounterSpec<L>): () => void {
      return addSource(book, spec, "read counter", spec.read, (sources) => {
        const cap = seriesCap(spec.labels);
        const c: Counter<L> = new Counter<L>({
          ...base(book, spec),
          collect() {
            c.reset();
            for (const read of sources) for (const s of read()) c.inc(cap(s.labels), s.value);
          },
        });
      });
    },
    gauge<L extends MetricLabel>(spec: MetricSpec<L>): GaugeMetric<L> {
      const found = existing(book, spec, "gauge") as GaugeMetric<L> | undefined;
      if (found) return found;
      return remember(book, spec, "gauge", gaugeHandle(new Gauge<L>(base(book, spec)), spec.labels)) as GaugeMetric<L>;
    },
    sampledGauge<L extends MetricLabel>(spec: SampledGaugeSpec<L>): () => void {
      return addSource(book, spec, "sampled gauge", spec.sample, (sources) => {
        let handle: GaugeMetric<L> | undefined;
        const g: Gauge<L> = new Gauge<L>({
          ...base(book, spec),
          async collect() {
            handle ??= gaugeHandle(g, spec.labels);
            const h = handle;
            // a removed sampler's series go with it; a sampler sets all of its own each time
            g.reset();
            await Promise.all([...sources].map((sample) => sample(h)));
          },
        });
      });
    },
    histogram<L extends MetricLabel>(
      spec: MetricSpec<L> & { readonly buckets: readonly number[] },
    ): HistogramMetric<L> {
      const found = existing(book, spec, "histogram") as HistogramMetric<L> | undefined;
      if (found) return found;
      const h = new Histogram<L>({ ...base(book, spec), buckets: [...spec.buckets] });
      const cap = seriesCap(spec.labels);
      const handle: HistogramMetric<L> = { observe: (labels, value) => h.observe(cap(labels), value) };
      return remember(book, spec, "histogram", handle) as HistogramMetric<L>;
    },
    text: () => registry.metrics(),
    contentType: registry.contentType,
    names: () => [...entries.keys()],
  };
}
