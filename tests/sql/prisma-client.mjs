// Prisma 7's client for the tests, generated from tests/sql/prisma/schema.prisma with the
// `prisma-client` generator (TypeScript, no query engine binary: queries run through
// @prisma/adapter-pg) into tests/artifacts/prisma/generated, then bundled by esbuild into one
// ES module Node 20 can import (the generated files import each other as `./x.ts`).
//
// `prisma generate` first checks for the schema engine, a binary it downloads from
// binaries.prisma.sh and that only migrations use: offline, that check fails before generating
// (`getaddrinfo ENOTFOUND binaries.prisma.sh`). PRISMA_SCHEMA_ENGINE_BINARY names a file in its
// place (it is never run by generate), so the client is generated offline.
import { execFile } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { promisify } from "node:util";

const repo = fileURLToPath(new URL("../../", import.meta.url));
const run = promisify(execFile);
let generated;

/** Generates (once per process) and imports the client: `{ PrismaClient, … }`. */
export function prismaClient() {
  generated ??= (async () => {
    const bin = join(repo, "node_modules", ".bin");
    const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: "1", CHECKPOINT_DISABLE: "1" };
    env.PRISMA_SCHEMA_ENGINE_BINARY ??= "/bin/false";
    await run(join(bin, "prisma"), ["generate", "--schema", join(repo, "tests", "sql", "prisma", "schema.prisma")], { cwd: repo, env, timeout: 120_000 });
    const out = join(repo, "tests", "artifacts", "prisma", "client.mjs");
    await run(join(bin, "esbuild"), [join(repo, "tests", "artifacts", "prisma", "generated", "client.ts"), "--bundle", "--platform=node", "--format=esm", "--packages=external", `--outfile=${out}`, "--log-level=warning"], { cwd: repo, timeout: 120_000 });
    return import(pathToFileURL(out).href);
  })();
  return generated;
}
