// `alarmkit worker --compare-wrangler`: wrangler's own `deploy --dry-run --outdir` bundle beside the one
// the host runs (bundle.mjs). node bundle-compare.mjs '<json>' with {entry, esbuild, flags, build, compat,
// outdir, root}; prints one JSON object: the modules each bundle holds (the project's files and its
// packages' files, by path under root, with a digest of the text each bundled) and the `cloudflare:*`
// modules each leaves to the runtime. What each side supplies itself is counted, never compared:
// wrangler's polyfills (unenv, @cloudflare/unenv-preset, its templates) and the host's stand-ins.
// A bundle wrangler did not write as expected is {"error": "..."}.
import { createHash } from "node:crypto";
import { readFileSync, readdirSync, realpathSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { bundle } from "./bundle.mjs";

const SHIMS = /\/node_modules\/(wrangler|unenv|@cloudflare\/unenv-preset|miniflare)\/|_virtual_/;
const HOST = { "cloudflare-workers.mjs": "cloudflare:workers", "cloudflare-email.mjs": "cloudflare:email",
               "cloudflare-sockets.mjs": "cloudflare:sockets" };
const digest = (text) => createHash("sha256").update(text).digest("hex").slice(0, 16);
const real = (p) => { try { return realpathSync(p); } catch { return p; } };
// a source map's sources are URLs: esbuild writes "ï" as %C3%AF, "%" as %25, "#" as %23 (spaces as they are)
const unurl = (s) => { try { return decodeURIComponent(String(s)); } catch { return String(s); } };

function cloudflareImports(text) {
  const out = new Set();
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^;]*?["']([^"']+)["']/gm)) {
    const spec = m[1];
    const host = Object.keys(HOST).find((f) => spec.endsWith("/" + f));
    if (host) out.add(HOST[host]);
    else if (spec.startsWith("cloudflare:")) out.add(spec);
  }
  return [...out].sort();
}

function wranglerSide(outdir) {
  let files;
  try {
    files = readdirSync(outdir);
  } catch (err) {
    return { error: `wrangler's dry run left no output folder (${err.code || err.message})` };
  }
  const maps = files.filter((f) => f.endsWith(".js.map") || f.endsWith(".mjs.map"));
  if (!maps.length) return { error: `wrangler's dry run wrote no bundle with a source map in its --outdir (found: ${files.join(", ").slice(0, 120) || "nothing"})` };
  const modules = new Map();
  let shims = 0;
  let imports = new Set();
  for (const f of maps) {
    let map;
    try {
      map = JSON.parse(readFileSync(join(outdir, f), "utf8"));
      imports = new Set([...imports, ...cloudflareImports(readFileSync(join(outdir, f.slice(0, -4)), "utf8"))]);
    } catch (err) {
      return { error: `wrangler's bundle ${f.slice(0, -4)} could not be read: ${String(err.message).slice(0, 120)}` };
    }
    if (!Array.isArray(map.sources) || !Array.isArray(map.sourcesContent)) {
      return { error: `wrangler's source map ${f} has no sources with their text (sources, sourcesContent)` };
    }
    map.sources.forEach((src, i) => {
      const abs = real(resolve(outdir, unurl(map.sourceRoot || ""), unurl(src)));
      if (SHIMS.test(abs)) shims += 1;
      else modules.set(abs, digest(String(map.sourcesContent[i] ?? "")));
    });
  }
  return { modules, shims, imports: [...imports].sort() };
}

async function oursSide(a) {
  const { text, metafile } = await bundle(a.entry, a.esbuild, a.flags, a.build, a.compat, true);
  const cwd = dirname(a.entry);
  const modules = new Map();
  let shims = 0;
  for (const key of Object.keys(metafile.inputs)) {
    if (/^[a-z-]+:/.test(key) && !key.startsWith("file:")) { shims += 1; continue; } // a host namespace
    const abs = real(resolve(cwd, key));
    modules.set(abs, digest(readFileSync(abs, "utf8")));
  }
  return { modules, shims, imports: cloudflareImports(text) };
}

const a = JSON.parse(process.argv[2]);
const theirs = wranglerSide(a.outdir);
if (theirs.error) {
  process.stdout.write(JSON.stringify({ error: theirs.error }) + "\n");
} else {
  let ours;
  try {
    ours = await oursSide(a);
  } catch (err) {
    const first = err.errors?.[0];
    const why = first ? `${first.text}${first.location ? ` (${first.location.file}:${first.location.line})` : ""}` : String(err.message || err);
    process.stdout.write(JSON.stringify({ error: `alarmkit's own bundle does not build: ${why.split("\n")[0].slice(0, 200)}` }) + "\n");
    process.exit(0);
  }
  const root = real(a.root);
  const name = (p) => (p.startsWith(root + "/") ? relative(root, p) : p);
  const only = (x, y) => [...x.modules.keys()].filter((k) => !y.modules.has(k)).map(name).sort();
  const differ = [...theirs.modules.keys()].filter((k) => ours.modules.has(k) && ours.modules.get(k) !== theirs.modules.get(k)).map(name).sort();
  const onlyWrangler = only(theirs, ours);
  const onlyOurs = only(ours, theirs);
  const agree = !onlyWrangler.length && !onlyOurs.length && !differ.length &&
    JSON.stringify(theirs.imports) === JSON.stringify(ours.imports);
  process.stdout.write(JSON.stringify({
    agree, modules: [...theirs.modules.keys()].filter((k) => ours.modules.has(k)).length,
    only_wrangler: onlyWrangler, only_ours: onlyOurs, differ,
    cloudflare: { wrangler: theirs.imports, ours: ours.imports },
    shims: { wrangler: theirs.shims, ours: ours.shims },
  }) + "\n");
}
