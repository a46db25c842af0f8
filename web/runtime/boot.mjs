// Boots Pyodide with jinja2 and the app package, then numpy, once per page (or process): from snapshot.bin (Python's
// memory with the package imported, made at export) where it is this bundle's, else from scratch. One module for every
// host: the pages import it as is; a host without fetch-able URLs (Node) passes its own `loadPyodide` and
// `readBytes`. What it boots is the verified runtime under pyodide/ and bundle.zip (the Python package,
// templates, contract files and tuning tables): the assets folder.
//
// Start-up is a list of phases (bootPhases(), each with its start and length in ms since the page's or
// process's time origin): bundle.zip is fetched while Pyodide loads, and the npm package's entries start
// the boot as their module loads (bootDefaults({early: true})), so that a page's own work overlaps it.
import * as deviceModule from "./device.mjs";
import { kernelError } from "./errors.mjs";
import * as executorModule from "./executor.mjs";
import { revisionOf } from "./plan-store.mjs";

const PACKAGE_DIR = "/home/pyodide/convtranspose";
// Where the assets are unless told otherwise: the checkout's root (this module is web/runtime/boot.mjs), or
// the npm package's folder; the package's browser entry sets its own (bootDefaults). import.meta.url goes
// through a variable: bundlers rewrite `new URL("…", import.meta.url)` as an asset of their own (Vite
// inlines it as a data: URL).
const here = import.meta.url;
// plans: whether getKernel persists plans by default (the npm package's entries: yes; the checkout's own page, hosts
// and tests, whose first calls must plan: no)
const defaults = { base: new URL("../../", here).href, how: "the default", plans: false };

let current = null;  // the boot under way or done: {base, speculative, planning, complete()}
let booted = null;
let firstCallReady = null;  // booted as far as a first call needs (numpy may still be loading)
let phases = [];
let lastMessage = null;
const listeners = new Set();

function tell(message) {
  lastMessage = message;
  for (const listener of listeners) listener(message);
}

/** A named step of the boot, timed: its start and length go to bootPhases(). */
async function phase(list, name, step) {
  const entry = { phase: name, startMs: performance.now(), ms: null };
  list.push(entry);
  try {
    return await step();
  } finally {
    entry.ms = performance.now() - entry.startMs;
  }
}

/** Whether getKernel persists plans unless told (its `planStore` option): the package's entries turn it on. */
export const storesPlans = () => defaults.plans;

/** What later boots use unless told otherwise: {base, readBytes, loadPyodide, how, plans}; `early: true` starts
 * the boot as soon as this turn ends, unless an app names its own folder first (the package's entries). */
export function bootDefaults({ early = false, ...options }) {
  Object.assign(defaults, options);
  if (early) setTimeout(() => { if (!current) start({ ...defaults }, true); }, 0);
}

/** The assets folder of the npm package's browser entry (`entry`, its file name; `moduleUrl`, its
 * import.meta.url): beside the entry where it is loaded as itself (an import map, a page importing it from
 * node_modules/ or a folder it was copied to); once a bundler moved it into a bundle (its URL is then the
 * bundle's, a file: URL webpack wrote in, or a dev server's pre-bundled copy), `webgpu-convtranspose/` beside
 * the page: the folder docs/npm.md's copy step fills for every bundler. */
export function packageAssets(moduleUrl, entry) {
  const page = globalThis.document?.baseURI ?? globalThis.location?.href;
  const url = new URL(moduleUrl);
  if (url.pathname.endsWith(`/${entry}`) && (!page || new URL(page).protocol === url.protocol)) {
    return { base: new URL("./", url).href, how: "beside the package's entry" };
  }
  return { base: new URL("webgpu-convtranspose/", page ?? url).href,
           how: "the default once bundled, webgpu-convtranspose/ beside the page" };
}

const FILE_NAME = /\/[^/]+\.(m?js|json|zip|whl|wasm|html?|css|tgz)$/i;

/** An `assets` option (URL, path, or relative to the page) as the folder URL the boot joins names to;
 * refused at once (KernelError, field "assets") where it cannot be a folder of files. */
export function assetsBase(assets, how = "getKernel's `assets` option") {
  const given = assets instanceof URL ? assets.href : String(assets);
  if (/^(data|blob|javascript):/i.test(given)) {
    throw kernelError("KernelError", `${given.slice(0, 60)}${given.length > 60 ? "…" : ""} cannot be the assets ` +
      `folder (${how}): a ${given.split(":")[0]}: URL holds no files; name the folder that serves pyodide/ and ` +
      "bundle.zip (a bundler that inlined it: give getKernel's `assets` option, docs/npm.md)", "assets");
  }
  if (FILE_NAME.test(given.split(/[?#]/)[0])) {
    throw kernelError("KernelError", `${given} names a file, not the assets folder (${how}): give the folder ` +
      "that holds pyodide/ and bundle.zip", "assets");
  }
  const base = given.endsWith("/") ? given : `${given}/`;
  const page = globalThis.document?.baseURI ?? globalThis.location?.href;
  return page ? new URL(base, page).href : base;
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

/** Why a file of the assets folder could not be used, as a KernelError naming it and the `assets` option. */
async function assetError(url, settings, err, probe = false) {
  let why = String(err?.message ?? err).split("\n")[0];
  if (probe && /^https?:/.test(url)) {
    try {  // the browser's import error says nothing of why: ask the server
      const response = await fetch(url, { method: "HEAD" });
      const type = response.headers.get("content-type") ?? "no content type";
      why = response.ok ? `served as ${type}${/html/.test(type) ? " (a page, not the file: a server's fallback?)" : ""}`
        : `HTTP ${response.status}`;
    } catch { /* keep the first reason */ }
  }
  return kernelError("KernelError", `${url}: ${why}. The assets folder (${settings.how}: ${settings.base}) must ` +
    "serve pyodide/ and bundle.zip: copy node_modules/webgpu-convtranspose there, or give getKernel's `assets` " +
    "option the folder that serves them (docs/npm.md)", "assets");
}

function boot(settings, list) {
  const { base, readBytes = fetchBytes } = settings;
  const started = performance.now();
  tell("Loading the Python runtime (Pyodide)…");
  // bundle.zip while Pyodide loads (a zip starts with PK: a server's fallback page is not one)
  const bundleUrl = `${base}bundle.zip`;
  const bundle = phase(list, "fetch bundle.zip", async () => {
    let bytes;
    try {
      bytes = await readBytes(bundleUrl);
    } catch (err) {
      throw await assetError(bundleUrl, settings, err);
    }
    if (bytes[0] !== 0x50 || bytes[1] !== 0x4b) throw await assetError(bundleUrl, settings, "not a zip file");
    return bytes;
  });
  list.revision = bundle.then(revisionOf);
  list.revision.catch(() => {});
  // a bad bundle.zip fails the boot at once, not after Pyodide has loaded
  return Promise.race([load(settings, list, bundle, started), bundle.then(() => new Promise(() => {}))]);
}

// What may hold Python's start back (kernel.mjs: on a revisit, until the stored plans' first call has run, so
// that Pyodide's start, which keeps the thread busy for seconds, does not delay it): gate(revision) -> a promise.
let gate = null;
export function gatePython(fn) { gate = fn; }

const SNAPSHOT_MAGIC = "convtranspose-snapshot 1\n";

/** The heap of a snapshot made from this very bundle.zip, as a promise (gunzipped while Pyodide's script loads; it
 * rejects where the heap is not whole: gzip's CRC, the header's length), or null where the frame is not this
 * bundle's: the frame app/host/snapshot.py writes. */
function snapshotHeap(framed, revision) {
  const magic = new TextDecoder().decode(framed.subarray(0, SNAPSHOT_MAGIC.length));
  const end = framed.indexOf(0x0a, SNAPSHOT_MAGIC.length);
  let header = null;
  try {
    if (magic === SNAPSHOT_MAGIC && end > 0) header = JSON.parse(new TextDecoder().decode(framed.subarray(SNAPSHOT_MAGIC.length, end)));
  } catch { /* not a frame of ours */ }
  const why = header === null ? "not a snapshot of this package"
    : header.revision !== revision ? "made from another bundle.zip" : null;
  if (why) {
    console.warn(`webgpu-convtranspose: snapshot.bin not used (${why}): Python starts from scratch`);
    return null;
  }
  const stream = new Blob([framed.subarray(end + 1)]).stream().pipeThrough(new DecompressionStream("gzip"));
  return new Response(stream).arrayBuffer().then((buffer) => {
    if (buffer.byteLength !== header.bytes) throw new Error(`${buffer.byteLength} bytes where its header says ${header.bytes}`);
    return new Uint8Array(buffer);
  });
}

// jinja2 and what it imports: pure Python (web/views/snapshot-make.mjs unpacks the same into its snapshot)
const PURE_PACKAGES = ["jinja2", "markupsafe"];
const SITE_PACKAGES = "/lib/python3.12/site-packages";

/** Pure-Python wheels of the runtime's lock, unpacked into site-packages as they are. */
async function unpackWheels(pyodide, { base, readBytes = fetchBytes }, names) {
  const lock = JSON.parse(new TextDecoder().decode(await readBytes(`${base}pyodide/pyodide-lock.json`)));
  await Promise.all(names.map(async (name) => {
    const wheel = await readBytes(`${base}pyodide/${lock.packages[name].file_name}`);
    pyodide.unpackArchive(wheel, "zip", { extractDir: SITE_PACKAGES });
  }));
}

async function loadPackages(pyodide, names) {
  const failures = [];
  await pyodide.loadPackage(names, { errorCallback: (m) => failures.push(m), messageCallback: () => {} });
  if (failures.length) throw kernelError("KernelError", `loading packages failed: ${failures.join("; ")}`, "assets");
}

async function load(settings, list, bundle, started) {
  const { base, loadPyodide, readBytes = fetchBytes } = settings;
  let revision = null;
  try { revision = await list.revision; } catch { /* the bundle's error ends the boot */ }
  if (gate && revision) await phase(list, "wait for stored plans", () => gate(revision));
  // the interpreter's memory as a first call needs it (app/host/snapshot.py): fetched once Python is to start (a
  // revisit's stored plans run first, without its 7 MB in flight); a host without one starts Python from scratch
  const snapshot = phase(list, "fetch snapshot.bin", () => readBytes(`${base}snapshot.bin`).catch(() => null));
  let loader = loadPyodide;
  if (!loader) {
    const url = `${base}pyodide/pyodide.mjs`;
    ({ loadPyodide: loader } = await phase(list, "import pyodide.mjs", async () => {
      try {
        // a run-time URL: bundlers must leave it alone (esbuild does; webpack and Vite are told to)
        return await import(/* webpackIgnore: true */ /* @vite-ignore */ url);
      } catch (err) {
        throw await assetError(url, settings, err, true);
      }
    }));
  }
  const options = { indexURL: `${base}pyodide/`, lockFileURL: `${base}pyodide/pyodide-lock.json`, fullStdLib: false };
  const framed = await snapshot;
  const heap = framed?.length ? snapshotHeap(framed, revision) : null;
  heap?.catch(() => {});  // Pyodide awaits it: a heap that is not whole fails the start below
  let pyodide = null;
  if (heap) {
    try {
      pyodide = await phase(list, "start Python from the snapshot", () => loader({ ...options, _loadSnapshot: heap }));
    } catch (err) {  // not whole, another Pyodide build's (its build id), or a heap this runtime cannot take
      console.warn(`webgpu-convtranspose: snapshot.bin not used (${String(err?.message ?? err).split("\n")[0]}): ` +
        "Python starts from scratch");
    }
  }
  const restored = pyodide !== null;
  pyodide ??= await phase(list, "start Python", () => loader(options));
  tell("Loading the ConvTranspose package…");
  // what Python's app.gpu imports: the executor, and the device opener the JS side shares with it
  const executor = () => pyodide.registerJsModule("convtranspose_executor", { ...executorModule, ...deviceModule });
  if (restored) {
    executor();
    const bridge = await phase(list, "take the package from the snapshot", async () => {
      // every restored interpreter would draw the same numbers; hash randomisation stays the snapshot's
      pyodide.runPython("import random; random.seed()");
      return pyodide.pyimport("app.bridge");
    });
    // a first call needs neither numpy nor the package's files (app/snapshot.py): they come once one has been
    // planned, or something needs them (bootApp); before, their unpacking and loading would hold the thread it plans on
    let wanted;
    const rest = new Promise((resolve) => { wanted = resolve; }).then(async () => {
      // jinja2's files beside its modules (unpacked as the snapshot's maker did: loadPackage takes seconds after a
      // restore), the package's for what it imports later, then numpy
      await phase(list, "unpack jinja2 and the package", async () => {
        await unpackWheels(pyodide, settings, PURE_PACKAGES);
        pyodide.unpackArchive(await bundle, "zip", { extractDir: PACKAGE_DIR });
      });
      await phase(list, "load numpy", () => loadPackages(pyodide, ["numpy"]));
    });
    rest.catch(() => {});
    // the op contract as the snapshot read it from this bundle (app/snapshot.py): the JS input checks read its types
    const manifest = JSON.parse(pyodide.runPython("import json; from app import contract; json.dumps(contract.manifest())"));
    return { pyodide, bridge, manifest, restored, rest, loadRest: () => wanted(), loadMs: performance.now() - started };
  }
  await phase(list, "load numpy and jinja2", () => loadPackages(pyodide, ["numpy", ...PURE_PACKAGES]));
  pyodide.unpackArchive(await bundle, "zip", { extractDir: PACKAGE_DIR });
  executor();
  const bridge = await phase(list, "import the package", async () => {
    const sys = pyodide.pyimport("sys");
    sys.path.insert(0, PACKAGE_DIR);
    sys.destroy();
    return pyodide.pyimport("app.bridge");
  });
  // the op contract the bundle carries: the JS input checks read its type constraints
  const manifest = JSON.parse(pyodide.FS.readFile(`${PACKAGE_DIR}/manifest.json`, { encoding: "utf8" }));
  return { pyodide, bridge, manifest, restored, rest: Promise.resolve(), loadRest: () => {}, loadMs: performance.now() - started };
}

function start(settings, speculative) {
  const list = [];
  const entry = { base: settings.base, speculative, planning: null };
  entry.planning = boot(settings, list).then((app) => {
    if (current === entry) firstCallReady = app;
    return app;
  });
  entry.planning.catch(() => { if (current === entry) current = null; });
  entry.whole = null;  // entry.planning, and numpy loaded: made on first demand (bootApp)
  entry.complete = () => {
    entry.whole ??= entry.planning.then(async (app) => {
      app.loadRest();
      await app.rest;
      if (current === entry) booted = app;
      return app;
    });
    entry.whole.catch(() => { if (current === entry) current = null; });
    return entry.whole;
  };
  current = entry;
  phases = list;
  return entry;
}

/** The boot under way or done for these options (see bootApp); throws where it cannot be. */
function ensureBoot({ assets = null, progress = null, ...options }) {
  if (progress) {
    listeners.add(progress);
    if (lastMessage) progress(lastMessage);
  }
  if (assets !== null) Object.assign(options, { base: assetsBase(assets), how: "getKernel's `assets` option" });
  else if (!current && !options.base) assetsBase(defaults.base, defaults.how);  // a bundler's data: URL, say
  if (current && options.base && options.base !== current.base) {
    if (!current.speculative) {
      throw kernelError("KernelError", `the runtime is already loaded from ${current.base}: ` +
        `one assets folder per page (or process), asked for ${options.base}`, "assets");
    }
    current = null;  // the early start from the default folder gives way to the one named
  }
  if (!current) start({ ...defaults, ...options }, false);
  else current.speculative = false;
  return current;
}

/** Starts Pyodide once per page (or process); every later call shares it:
 * {pyodide, bridge (app.bridge), manifest (manifest.json), loadMs}. options.assets (or base): the folder
 * holding pyodide/ and bundle.zip; a later call naming another folder is refused, unless the boot under way
 * was only started early by the package's entry (then the named folder replaces it). progress(message):
 * told each step, the current one at once. */
export function bootApp(options = {}) {
  try {
    return ensureBoot(options).complete();
  } catch (err) {
    return Promise.reject(err);
  }
}

/** As bootApp, resolved as soon as a first call's Python can run (python.mjs FIRST_CALL): from a snapshot,
 * before numpy has loaded. */
export function bootForFirstCall(options = {}) {
  try {
    return ensureBoot(options).planning;
  } catch (err) {
    return Promise.reject(err);
  }
}

/** {pyodide, bridge, manifest} once booted, else null: for the calls that cannot wait. */
export const bootedApp = () => booted;

/** {pyodide, bridge, manifest} once a first call's Python can run (bootForFirstCall), else null. */
export const firstCallApp = () => firstCallReady;

/** The start-up phases of the boot under way or done: [{phase, startMs, ms (null while running)}]. */
export const bootPhases = () => phases.map((p) => ({ ...p }));

/** A step outside the boot that a first result waits for (opening the device, a stored plan), among its phases. */
export function timedPhase(name, step) {
  return phase(phases, name, step);
}

/** The package revision the boot under way loads (sha-256 of bundle.zip, known once it is fetched), or null. */
export const bootRevision = () => phases.revision ?? null;
