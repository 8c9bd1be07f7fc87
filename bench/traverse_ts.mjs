// One crawl by Traverse (npm @kontourai/traverse), the TypeScript library traverse_crawl
// follows, for bench/vs_traverse.py:
//
//     node bench/traverse_ts.mjs INSTALL_DIR SEED_URL PAGES OUT.json
//
// INSTALL_DIR holds node_modules/ with the package (bench/vs_traverse.py installs it).
// Traverse's crawlSource runs a sequential BFS (one request at a time) of the seed's
// origin; its transport is forage's guarded fetch, the one Traverse uses by default,
// with the bench server's loopback origin allowed (the default denies loopback). The
// politeness delay is 0, as in the bench's own crawls; robots.txt is obeyed. Writes
// {pages, errors, truncated, crawl_ms} to OUT.json: the bench checks every page was
// fetched, and crawl_ms is crawlSource's own duration.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [dir, seedUrl, pagesArg, out] = process.argv.slice(2);
const load = (path) => import(pathToFileURL(join(dir, "node_modules", path)).href);
const { crawlSource } = await load("@kontourai/traverse/dist/src/fetch/index.js");
const { createGuardedFetch } = await load("@kontourai/forage/dist/src/egress-index.js");

const origin = new URL(seedUrl).origin;
const started = performance.now();
const manifest = await crawlSource(
  { id: "bench", url: seedUrl, minDelayMs: 0, respectRobots: true },
  {
    maxPages: Number(pagesArg),
    maxDepth: 10,
    mode: "live",
    fetchOptions: { fetch: createGuardedFetch({ testOnlyAllowedLoopbackOrigins: [origin] }) },
  },
);
const crawlMs = performance.now() - started;
const errors = {};
for (const page of manifest.pages) {
  const kind = page.fetch.error?.kind;
  if (kind) errors[kind] = (errors[kind] ?? 0) + 1;
}
writeFileSync(
  out,
  JSON.stringify({
    pages: manifest.pages.length,
    errors,
    truncated: manifest.truncated,
    crawl_ms: crawlMs,
  }),
);
