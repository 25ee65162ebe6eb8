// A real PostgreSQL server for the SQL host suites and the contention benchmark (not a test file
// itself): a fresh cluster in a temporary directory, on 127.0.0.1 and a free non-default port,
// stopped and removed by `stop()`. PostgreSQL refuses to run as root, so as root the cluster is
// owned by, and run as, the `postgres` user (`su postgres -c …`).
import { execFileSync } from "node:child_process";
import { after } from "node:test";
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** The newest installed server's bin directory (Debian: /usr/lib/postgresql/N/bin), or null. */
export function postgresBin() {
  const root = "/usr/lib/postgresql";
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((version) => existsSync(join(root, version, "bin", "initdb")))
    .sort((a, b) => Number(b) - Number(a));
  return versions.length === 0 ? null : join(root, versions[0], "bin");
}

/** A TCP port nobody listens on now (asked of the kernel, never PostgreSQL's 5432). */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port === 5432 ? freePort() : port;
}

const quote = (text) => `'${text.replaceAll("'", "'\\''")}'`;

/**
 * Starts a server and returns `{ port, connectionString, stop }`. Settings: trust
 * authentication, sockets in /tmp, `listen_addresses=127.0.0.1`, `fsync=off` (a throwaway
 * cluster), and `max_connections` as asked (default 200, for 100+ concurrent transactions).
 */
export async function startPostgres({ maxConnections = 200 } = {}) {
  const bin = postgresBin();
  if (bin === null) throw new Error("PostgreSQL is not installed: run `bash scripts/ensure-toolchain.sh` (it installs Debian's postgresql)");
  const asRoot = process.getuid?.() === 0;
  const dir = mkdtempSync(join(tmpdir(), "ratebound-postgres-"));
  const data = join(dir, "data");
  const log = join(dir, "server.log");
  // As root, every command runs as `postgres`, which must own the directory.
  const sh = (command) =>
    asRoot
      ? execFileSync("su", ["postgres", "-s", "/bin/sh", "-c", command], { stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 })
      : execFileSync("/bin/sh", ["-c", command], { stdio: ["ignore", "pipe", "pipe"], timeout: 60_000 });
  if (asRoot) {
    const [uid, gid] = ["-u", "-g"].map((flag) => Number(execFileSync("id", [flag, "postgres"]).toString().trim()));
    chownSync(dir, uid, gid);
  }
  let started = false;
  const stop = () => {
    try {
      if (started) sh(`${quote(join(bin, "pg_ctl"))} -D ${quote(data)} -m immediate -w stop`);
    } catch {
      // Already stopped (or never answered): the directory goes anyway.
    } finally {
      started = false;
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    sh(`${quote(join(bin, "initdb"))} -D ${quote(data)} -A trust -U postgres --no-sync -E UTF8 --locale=C.UTF-8`);
    const port = await freePort();
    const settings = `-k /tmp -c listen_addresses=127.0.0.1 -p ${port} -c fsync=off -c synchronous_commit=off -c max_connections=${maxConnections}`;
    started = true;
    sh(`${quote(join(bin, "pg_ctl"))} -D ${quote(data)} -l ${quote(log)} -o ${quote(settings)} -w -t 60 start`);
    return { port, connectionString: `postgresql://postgres@127.0.0.1:${port}/postgres`, stop };
  } catch (error) {
    const serverLog = existsSync(log) ? readFileSync(log, "utf8") : "";
    stop();
    throw new Error(`could not start PostgreSQL: ${error.stderr?.toString() ?? error.message}\n${serverLog}`);
  }
}

/**
 * Fails the test file on any DeprecationWarning the process emits (issue 28 item 3: `pg` warns of
 * a query sent on a client while another runs, which pg 9 will refuse). Call it once at the top
 * level of a test file: every warning is recorded, and a last `after` hook fails with them.
 */
export function failOnDeprecationWarnings() {
  const deprecations = [];
  process.on("warning", (warning) => {
    if (warning.name === "DeprecationWarning") deprecations.push(`${warning.code ?? ""} ${warning.message}`);
  });
  after(() => {
    if (deprecations.length > 0) throw new Error(`DeprecationWarning emitted:\n${deprecations.join("\n")}`);
  });
}
