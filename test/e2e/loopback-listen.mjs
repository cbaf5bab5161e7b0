// Preloaded (`node --import`) into an MCP server from npm that listens on every interface: its
// listen(port) binds 127.0.0.1 instead, and the address it got is written to stderr as
// "loopback-listen 127.0.0.1:<port>", so a test can start it on port 0 and find the free port.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const [first, ...rest] = args;
  const port =
    typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))
      ? Number(first)
      : first !== null && typeof first === "object" && "port" in first
        ? Number(first.port)
        : null;
  if (port === null) return listen.apply(this, args);
  this.once("listening", () => {
    const a = this.address();
    process.stderr.write(`loopback-listen ${a.address}:${a.port}\n`);
  });
  return listen.call(this, { port, host: "127.0.0.1" }, ...rest.filter((a) => typeof a === "function"));
};
