// The built package, installed for the suites that resolve `ratebound` as a user's project does:
// tests/node_modules/ratebound, a link to pkg/ (git ignores it). Vite and Node then pick the entry
// from the package's exports under their own conditions, with nothing aliased.
import { lstatSync, mkdirSync, readlinkSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Links tests/node_modules/ratebound to pkg/ (once; again if it points elsewhere), or to the build
 * in RATEBOUND_TEST_PKG (to run a suite on another build of the package, an older one say).
 */
export function installBuiltPackage() {
  const link = join(repo, "tests", "node_modules", "ratebound");
  const target = process.env.RATEBOUND_TEST_PKG ?? join(repo, "pkg");
  try {
    if (lstatSync(link).isSymbolicLink() && readlinkSync(link) === target) return link;
    rmSync(link, { recursive: true, force: true });
  } catch {
    // not there yet
  }
  mkdirSync(join(repo, "tests", "node_modules"), { recursive: true });
  symlinkSync(target, link, "dir");
  return link;
}
