// A WebSocket-to-TCP proxy on loopback, as Neon's wsproxy is: @neondatabase/serverless's Pool and
// Client speak PostgreSQL's wire protocol over a WebSocket, each binary message raw bytes of the
// TCP stream. With it, tests/sql/orm.test.mjs runs Neon's own driver against the local server.
import { createConnection } from "node:net";
import { WebSocketServer } from "ws";

/** Starts the proxy in front of `127.0.0.1:pgPort`; resolves to `{ port, stop }`. */
export async function startNeonProxy(pgPort) {
  const server = new WebSocketServer({ host: "127.0.0.1", port: 0 });
  const sockets = new Set();
  server.on("connection", (socket) => {
    const tcp = createConnection({ host: "127.0.0.1", port: pgPort });
    sockets.add(tcp);
    const pending = [];
    tcp.on("connect", () => {
      for (const chunk of pending.splice(0)) tcp.write(chunk);
    });
    socket.on("message", (data) => (tcp.connecting ? pending.push(data) : tcp.write(data)));
    tcp.on("data", (data) => socket.send(data));
    const close = () => {
      sockets.delete(tcp);
      tcp.destroy();
      socket.terminate();
    };
    tcp.on("close", close);
    tcp.on("error", close);
    socket.on("close", close);
    socket.on("error", close);
  });
  await new Promise((resolve) => server.once("listening", resolve));
  return {
    port: server.address().port,
    stop: () => {
      for (const tcp of sockets) tcp.destroy();
      for (const client of server.clients) client.terminate();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
