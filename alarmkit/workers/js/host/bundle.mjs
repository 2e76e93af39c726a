// The module as wrangler bundles it: esbuild, ES module output, TypeScript stripped (no type check,
// as wrangler), `cloudflare:*` resolved to this host's copies, and Node's built-ins as the
// compatibility flags make them (workerd: src/workerd/api/node/node.h gates `node:*` behind
// `nodejs_compat`, `node:async_hooks` alone behind `nodejs_als`; wrangler's nodejs_compat plugin
// resolves a bare `path` as `node:path` and turns `require("path")` into an import).
//
// A built-in whose work is pure computation (path, buffer, events, util, url, stream, assert, ...)
// is Node's own module: the same code workerd's polyfills follow. One that would reach outside the
// simulation (the file system, sockets, processes, threads, the machine's DNS) imports as workerd
// lets it import, and every use of it throws `WorkerUnsupported` naming the module and the member
// (refused.mjs): a library that imports `node:http` at its top and never calls it loads, and a call
// never leaves the simulation silently. `node:timers`, `node:perf_hooks` and `node:crypto`'s random
// members run on the virtual clock and the seed, as the globals do; `node:process` is the worker's
// `process` (node-process.mjs).
import { builtinModules } from "node:module";
import { pathToFileURL } from "node:url";

const HERE = new URL(".", import.meta.url).href;
const BUILTINS = new Set(builtinModules.filter((m) => !m.startsWith("_")));
// reach outside the simulation: refused at the call (what each one would reach, for the message)
export const OUTSIDE = {
  fs: "the file system", "fs/promises": "the file system", net: "network sockets", tls: "network sockets",
  http: "the network", https: "the network", http2: "the network", dgram: "network sockets",
  dns: "the machine's DNS", "dns/promises": "the machine's DNS", child_process: "processes",
  cluster: "processes", worker_threads: "threads", inspector: "the debugger", os: "the machine",
  v8: "the JavaScript engine", vm: "the JavaScript engine", repl: "the terminal", readline: "the terminal",
  "readline/promises": "the terminal", tty: "the terminal", trace_events: "the machine", wasi: "the machine",
  module: "the module loader", sqlite: "the file system", "test": "the test runner", sea: "the machine",
};
// on the simulation's clock and seed: the host's own versions
const VIRTUAL = { process: "node-process-module.mjs", timers: "node-timers.mjs", "timers/promises": "node-timers-promises.mjs", perf_hooks: "node-perf-hooks.mjs", crypto: "node-crypto.mjs" };

function builtinOf(spec) {
  const bare = spec.startsWith("node:") ? spec.slice(5) : spec;
  return BUILTINS.has(bare) || spec.startsWith("node:") ? bare : null;
}

// nodejs_compat: the flag, or the compatibility date from 2026-08-04 on unless no_nodejs_compat (workerd
// 1.20261117.1's compatibility table; workerd says "nodejs_compat became the default as of 2026-08-04")
export function nodejsCompat(flags, compat) {
  if (flags.includes("nodejs_compat") || flags.includes("nodejs_compat_v2")) return true;
  return typeof compat === "string" && compat >= "2026-08-04" && !flags.includes("no_nodejs_compat");
}

function flagHint(spec, name, flags) {
  const what = name === "async_hooks" ? '"nodejs_compat" (or "nodejs_als")' : '"nodejs_compat"';
  return `"${spec}" is a Node.js built-in module, which workerd gives a Worker only under the compatibility flag ` +
    `${what} (or a compatibility date from 2026-08-04 on); add it to compatibility_flags in the wrangler file, ` +
    `or pass compatibility_flags= to load_worker (flags now: ${JSON.stringify(flags)})`;
}

// build: the wrangler file's `define` (text substituted at bundle time) and `alias` (a module name to
// the module bundled in its place: a package name, or an absolute path Python resolved). `meta`: return
// `{ text, metafile }`, esbuild's account of every input (bundle-compare.mjs reads it)
export async function bundle(entry, esbuildPath, flags = [], build = {}, compat = null, meta = false) {
  const esbuild = await import(pathToFileURL(esbuildPath).href);
  const nodejs = nodejsCompat(flags, compat);
  const als = nodejs || flags.includes("nodejs_als");
  const host = (file) => new URL(file, HERE).href;
  const out = await (esbuild.build || esbuild.default.build)({
    entryPoints: [entry],
    absWorkingDir: entry.slice(0, entry.lastIndexOf("/")) || "/",
    bundle: true,
    write: false,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    conditions: ["workerd", "worker", "browser"],
    mainFields: ["browser", "module", "main"],
    logLevel: "silent",
    metafile: meta,
    define: build.define || {},
    alias: build.alias || {},
    plugins: [{
      name: "alarmkit-cloudflare",
      setup(b) {
        b.onResolve({ filter: /^cloudflare:workers$/ }, () => ({ path: host("cloudflare-workers.mjs"), external: true }));
        b.onResolve({ filter: /^cloudflare:email$/ }, () => ({ path: host("cloudflare-email.mjs"), external: true }));
        b.onResolve({ filter: /^cloudflare:sockets$/ }, () => ({ path: host("cloudflare-sockets.mjs"), external: true }));
        b.onResolve({ filter: /^cloudflare:/ }, (a) => ({ path: a.path, external: true }));
        b.onResolve({ filter: /^file:/, namespace: "alarmkit-refused" }, (a) => ({ path: a.path, external: true }));
        b.onResolve({ filter: /^[a-z_/:0-9]+$/ }, (a) => {
          const name = builtinOf(a.path);
          if (name === null) return undefined; // a package of node_modules
          if (!(name === "async_hooks" ? als : nodejs)) return { errors: [{ text: flagHint(a.path, name, flags) }] };
          if (!BUILTINS.has(name)) return { errors: [{ text: `"${a.path}" is not a Node.js built-in module` }] };
          if (a.kind === "require-call") return { path: name, namespace: "alarmkit-require" };
          if (name in OUTSIDE) return { path: name, namespace: "alarmkit-refused" };
          if (name in VIRTUAL) return { path: host(VIRTUAL[name]), external: true };
          return { path: `node:${name}`, external: true };
        });
        // require("path") in a CommonJS package: the module's namespace as module.exports (wrangler does the same)
        b.onLoad({ filter: /.*/, namespace: "alarmkit-require" }, (a) => ({
          contents: `import * as m from "node:${a.path}"; module.exports = m.default ?? m;`,
          loader: "js",
          resolveDir: "/",
        }));
        b.onLoad({ filter: /.*/, namespace: "alarmkit-refused" }, async (a) => ({
          contents: await refusedSource(a.path, host("refused.mjs")),
          loader: "js",
        }));
      },
    }],
  });
  return meta ? { text: out.outputFiles[0].text, metafile: out.metafile } : out.outputFiles[0].text;
}

// A module with the names of Node's own, each a stand-in that throws when used (refused.mjs)
async function refusedSource(name, refusedUrl) {
  let real = {};
  try {
    real = await import(`node:${name}`);
  } catch {} // a module this Node lacks (node:sqlite before 22): no named exports
  const names = Object.keys(real).filter((k) => k !== "default" && /^[A-Za-z_$][\w$]*$/.test(k));
  const why = OUTSIDE[name];
  const lines = [`import { refusedModule } from ${JSON.stringify(refusedUrl)};`,
    `const m = refusedModule(${JSON.stringify(name)}, ${JSON.stringify(why)});`, "export default m;"];
  for (const k of names) lines.push(`export const ${k} = m[${JSON.stringify(k)}];`);
  return lines.join("\n");
}

export function isBuiltin(spec) {
  return builtinOf(spec) !== null;
}
