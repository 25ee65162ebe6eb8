// A real Redis Cluster on loopback for the cluster suite (not a test file itself): three masters
// with a replica each, as SPEC.md's recipe says (`redis-server --cluster-enabled yes` on six free
// ports, then `redis-cli --cluster create … --cluster-replicas 1 --cluster-yes`), with a short
// node timeout so that a killed master's replica is promoted within seconds.
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { createCluster } from "redis";
import { Cluster } from "ioredis";
import { createCluster as createCluster5 } from "redis-5";
import { Cluster as Cluster5 } from "ioredis-5";
import { startRedis } from "./servers.mjs";

const run = promisify(execFile);
/** How long a node may be unreachable before the cluster fails it over, in ms. */
export const NODE_TIMEOUT_MS = 1_000;

/** `redis-cli -p PORT …`'s output. */
export async function cli(port, ...args) {
  const { stdout } = await run("redis-cli", ["-p", String(port), ...args], { timeout: 10_000 });
  return stdout;
}

/** Polls `check()` every 100 ms until it resolves truthy, or fails after `timeoutMs` saying `what`. */
export async function until(what, check, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const seen = await check().catch(() => false);
    if (seen) return seen;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/**
 * Starts six cluster-enabled redis-servers and joins them as three masters with a replica each.
 * Resolves once every node reports `cluster_state:ok` and every slot is served. Returns
 * `{ nodes, rootNodes, masterOfSlot(slot), replicaOf(port), stop() }`; each node is `{ port, stop }`.
 */
export async function startCluster() {
  const args = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", String(NODE_TIMEOUT_MS)];
  const nodes = await Promise.all(Array.from({ length: 6 }, () => startRedis({ args })));
  const stop = () => nodes.forEach((node) => node.stop());
  try {
    await run("redis-cli", ["--cluster", "create", ...nodes.map((node) => `127.0.0.1:${node.port}`), "--cluster-replicas", "1", "--cluster-yes"], { timeout: 30_000 });
    await until("every node sees cluster_state:ok", async () => {
      const states = await Promise.all(nodes.map((node) => cli(node.port, "cluster", "info")));
      return states.every((info) => /cluster_state:ok/.test(info) && /cluster_slots_ok:16384/.test(info));
    });
  } catch (error) {
    stop();
    throw error;
  }
  /** The `CLUSTER NODES` lines as `{ id, port, master, masterId, failed }`, seen from `port`. */
  const topology = async (port) =>
    (await cli(port, "cluster", "nodes"))
      .trim()
      .split("\n")
      .map((line) => {
        const [id, address, flags, masterId, , , , , ...slots] = line.split(" ");
        return { id, port: Number(address.split(":")[1].split("@")[0]), master: flags.includes("master"), failed: flags.includes("fail"), masterId, slots };
      });
  return {
    nodes,
    rootNodes: nodes.map((node) => ({ url: `redis://127.0.0.1:${node.port}` })),
    topology,
    stop,
  };
}

/** The slot of a key, as the server computes it. */
export async function keySlot(port, key) {
  return Number((await cli(port, "cluster", "keyslot", key)).trim());
}

/**
 * How each cluster client connects (current and previous majors): `open(rootNodes)` resolves with
 * `{ client, close }`, reconnecting and following MOVED/failovers as each library does by default,
 * with an error listener (a dropped node must not crash the test process).
 */
export const CLUSTER_CLIENTS = {
  "node-redis createCluster": { open: (rootNodes) => openNodeRedis(createCluster, rootNodes) },
  "ioredis Cluster": { open: (rootNodes) => openIoRedis(Cluster, rootNodes) },
  "node-redis 5 createCluster": { open: (rootNodes) => openNodeRedis(createCluster5, rootNodes) },
  "ioredis 5 Cluster": { open: (rootNodes) => openIoRedis(Cluster5, rootNodes) },
};

async function openNodeRedis(create, rootNodes) {
  const client = create({ rootNodes, defaults: { socket: { connectTimeout: 2_000, reconnectStrategy: (retries) => Math.min(50 * retries, 500) } } });
  client.on("error", () => {});
  await client.connect();
  return { client, close: () => Promise.resolve(client.close?.() ?? client.quit()).catch(() => client.destroy?.() ?? client.disconnect?.()).catch(() => {}) };
}

async function openIoRedis(ClusterClass, rootNodes) {
  const startupNodes = rootNodes.map(({ url }) => ({ host: "127.0.0.1", port: Number(new URL(url).port) }));
  const client = new ClusterClass(startupNodes, { lazyConnect: true, retryDelayOnFailover: 100, retryDelayOnClusterDown: 100, redisOptions: { connectTimeout: 2_000, maxRetriesPerRequest: 2 } });
  client.on("error", () => {});
  await client.connect();
  return { client, close: () => client.quit().catch(() => client.disconnect()) };
}
