// The gateway's HTTP server bounds as a client meets them, on a real socket: the time to send the
// headers and the whole request, how long an idle keep-alive connection stays, and the cap on
// open connections.
import { connect, type Socket } from "node:net";
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { listen } from "./main-wiring.js";

let server: Server | null = null;
const sockets: Socket[] = [];

afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = null;
});

async function start(http: {
  keepAliveTimeoutMs: number;
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  maxConnections: number;
}) {
  // reads the whole body before it answers, as the API's routes do
  server = await listen(async (req) => new Response(`ok ${(await req.text()).length}`), {
    host: "127.0.0.1",
    port: 0,
    http,
  });
  return (server.address() as AddressInfo).port;
}

/** A raw connection: what the server sent, and when (ms after opening) it closed the socket. */
function open(port: number): Promise<{ socket: Socket; got: () => string; closed: Promise<number> }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    const socket = connect(port, "127.0.0.1");
    sockets.push(socket);
    let data = "";
    socket.on("data", (b) => (data += b.toString()));
    socket.on("error", () => undefined);
    const closed = new Promise<number>((r) => socket.once("close", () => r(Date.now() - t0)));
    socket.once("connect", () => resolve({ socket, got: () => data, closed }));
    socket.once("error", reject);
  });
}

describe("the gateway's HTTP server", () => {
  it("closes a connection whose headers do not arrive within the headers timeout", async () => {
    const port = await start({
      keepAliveTimeoutMs: 5000,
      headersTimeoutMs: 1000,
      requestTimeoutMs: 2000,
      maxConnections: 10,
    });
    const c = await open(port);
    c.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n"); // and never the blank line
    const after = await c.closed;
    expect(c.got()).toMatch(/^HTTP\/1\.1 408/);
    expect(after).toBeGreaterThanOrEqual(900);
    expect(after).toBeLessThan(5000);
  });

  it("closes a request whose body does not arrive within the request timeout", async () => {
    const port = await start({
      keepAliveTimeoutMs: 5000,
      headersTimeoutMs: 1000,
      requestTimeoutMs: 1500,
      maxConnections: 10,
    });
    const c = await open(port);
    c.socket.write("POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 100\r\n\r\nhalf");
    const after = await c.closed;
    expect(c.got()).not.toMatch(/^HTTP\/1\.1 200/);
    expect(after).toBeGreaterThanOrEqual(1400);
    expect(after).toBeLessThan(6000);
  });

  it("keeps an idle keep-alive connection for the keep-alive timeout, then closes it", async () => {
    const port = await start({
      keepAliveTimeoutMs: 2500,
      headersTimeoutMs: 1000,
      requestTimeoutMs: 2000,
      maxConnections: 10,
    });
    const c = await open(port);
    c.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    const after = await c.closed;
    expect(c.got()).toMatch(/^HTTP\/1\.1 200[\s\S]*Keep-Alive: timeout=2/);
    expect(after).toBeGreaterThanOrEqual(2400);
  });

  it("refuses connections beyond the cap", async () => {
    const port = await start({
      keepAliveTimeoutMs: 5000,
      headersTimeoutMs: 1000,
      requestTimeoutMs: 2000,
      maxConnections: 2,
    });
    await open(port);
    await open(port);
    const third = await open(port);
    third.socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    expect(await third.closed).toBeLessThan(1000);
    expect(third.got()).toBe("");
  });
});
