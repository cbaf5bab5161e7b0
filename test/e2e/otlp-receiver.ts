import { createServer, type Server } from "node:http";
import { gunzipSync } from "node:zlib";

/** One span as received over OTLP/HTTP protobuf. */
export interface ReceivedSpan {
  readonly service: string;
  readonly traceId: string;
  readonly spanId: string;
  readonly parentSpanId: string | null;
  readonly name: string;
  readonly startNs: bigint;
  readonly endNs: bigint;
  readonly statusCode: number;
  readonly attributes: Readonly<Record<string, string | number | boolean | null>>;
}

/**
 * The protobuf wire format, as far as an OTLP trace export needs it: each message is a list of
 * (field number, wire type, value) records; length-delimited values are sub-messages, strings or bytes.
 */
type Field = { no: number; varint?: bigint; bytes?: Uint8Array; fixed64?: bigint };

function fields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  let i = 0;
  const varint = (): bigint => {
    let v = 0n;
    let shift = 0n;
    for (;;) {
      const b = buf[i++];
      if (b === undefined) throw new Error("truncated varint");
      v |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return v;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3;
    switch (key & 7) {
      case 0:
        out.push({ no, varint: varint() });
        break;
      case 1:
        out.push({ no, fixed64: view.getBigUint64(i, true) });
        i += 8;
        break;
      case 2: {
        const len = Number(varint());
        out.push({ no, bytes: buf.subarray(i, i + len) });
        i += len;
        break;
      }
      case 5:
        i += 4;
        break;
      default:
        throw new Error(`unsupported wire type ${key & 7}`);
    }
  }
  return out;
}

const text = (b: Uint8Array | undefined) => new TextDecoder().decode(b ?? new Uint8Array());
const hex = (b: Uint8Array | undefined) => Buffer.from(b ?? new Uint8Array()).toString("hex");
const sub = (fs: Field[], no: number) => fs.filter((f) => f.no === no && f.bytes).map((f) => f.bytes!);

function anyValue(buf: Uint8Array): string | number | boolean | null {
  for (const f of fields(buf)) {
    if (f.no === 1) return text(f.bytes);
    if (f.no === 2) return f.varint === 1n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.varint ?? 0n));
    if (f.no === 4) return new DataView(new BigUint64Array([f.fixed64 ?? 0n]).buffer).getFloat64(0, true);
  }
  return null;
}

function attributes(fs: Field[], no: number): Record<string, string | number | boolean | null> {
  const out: Record<string, string | number | boolean | null> = {};
  for (const kv of sub(fs, no)) {
    const k = fields(kv);
    const key = text(sub(k, 1)[0]);
    const value = sub(k, 2)[0];
    out[key] = value === undefined ? null : anyValue(value);
  }
  return out;
}

/** Decodes an `ExportTraceServiceRequest`. */
export function decodeTraces(body: Uint8Array): ReceivedSpan[] {
  const spans: ReceivedSpan[] = [];
  for (const rs of sub(fields(body), 1)) {
    const rsf = fields(rs);
    const resource = sub(rsf, 1)[0];
    const service = String(resource ? (attributes(fields(resource), 1)["service.name"] ?? "") : "");
    for (const ss of sub(rsf, 2)) {
      for (const sp of sub(fields(ss), 2)) {
        const f = fields(sp);
        const parent = hex(sub(f, 4)[0]);
        const status = sub(f, 15)[0];
        spans.push({
          service,
          traceId: hex(sub(f, 1)[0]),
          spanId: hex(sub(f, 2)[0]),
          parentSpanId: parent === "" ? null : parent,
          name: text(sub(f, 5)[0]),
          startNs: f.find((x) => x.no === 7)?.fixed64 ?? 0n,
          endNs: f.find((x) => x.no === 8)?.fixed64 ?? 0n,
          statusCode: status ? Number(fields(status).find((x) => x.no === 3)?.varint ?? 0n) : 0,
          attributes: attributes(f, 9),
        });
      }
    }
  }
  return spans;
}

/** An OTLP/HTTP traces receiver on a free loopback port; refuses anything but protobuf. */
export interface OtlpReceiver {
  /** Base URL for `OTEL_EXPORTER_OTLP_ENDPOINT`. */
  readonly url: string;
  readonly spans: ReceivedSpan[];
  /** Requests that were not protobuf trace exports (content type, path). */
  readonly refused: string[];
  /** Exports accepted and their bytes (as sent). */
  readonly counts: { exports: number; bytes: number };
  close(): Promise<void>;
}

/** Starts the receiver; `decode: false` (the bench) only counts exports, keeping its own CPU out of the figures. */
export async function startOtlpReceiver(opts: { decode?: boolean } = {}): Promise<OtlpReceiver> {
  const counts = { exports: 0, bytes: 0 };
  const spans: ReceivedSpan[] = [];
  const refused: string[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const type = req.headers["content-type"] ?? "";
      if (req.method !== "POST" || req.url !== "/v1/traces" || type !== "application/x-protobuf") {
        refused.push(`${req.method ?? ""} ${req.url ?? ""} ${type}`);
        res.writeHead(415).end();
        return;
      }
      let body: Uint8Array = Buffer.concat(chunks);
      counts.exports++;
      counts.bytes += body.byteLength;
      if (req.headers["content-encoding"] === "gzip" && opts.decode !== false) body = gunzipSync(body);
      try {
        if (opts.decode !== false) spans.push(...decodeTraces(body));
      } catch (err) {
        refused.push(`undecodable: ${(err as Error).message}`);
        res.writeHead(400).end();
        return;
      }
      // an empty ExportTraceServiceResponse: everything accepted
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  if (addr === null || typeof addr === "string") throw new Error("no port");
  return {
    url: `http://127.0.0.1:${addr.port}`,
    spans,
    refused,
    counts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
