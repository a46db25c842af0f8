// Boots Pyodide with numpy, jinja2 and the app package, once per page (or process). One module for every
// host: the pages import it as is; a host without fetch-able URLs (Node) passes its own `loadPyodide` and
// `readBytes`. What it boots is the verified runtime under pyodide/ and bundle.zip (the Python package,
// templates, contract files and tuning tables), both found beside web/.
import * as executorModule from "./executor.mjs";

const PACKAGE_DIR = "/home/pyodide/convtranspose";
let booting = null;
let bootedFrom = null;  // the assets folder the runtime booted from (one per page or process)
let booted = null;
// Where pyodide/ and bundle.zip are (the assets): beside web/ unless an entry says otherwise. The npm package's
// browser entry names its own folder, because a bundler moves this module into the app's bundle and its
// import.meta.url becomes the bundle's; getKernel's `assets` option overrides both.
const defaults = { base: new URL("../../", import.meta.url).href };

/** What later boots use unless told otherwise: {base, readBytes, loadPyodide} (the package's entries). */
export function bootDefaults(options) {
  Object.assign(defaults, options);
}

/** An `assets` option (URL, path, or relative to the page) as the folder URL the boot joins names to. */
export function assetsBase(assets) {
  let base = assets instanceof URL ? assets.href : String(assets);
  if (!base.endsWith("/")) base += "/";
  const page = globalThis.document?.baseURI ?? globalThis.location?.href;
  return page ? new URL(base, page).href : base;
}

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function boot({ base, loadPyodide, readBytes = fetchBytes, progress = () => {} }) {
  const started = performance.now();
  progress("Loading the Python runtime (Pyodide)…");
  // a run-time URL: bundlers must leave it alone (esbuild does; webpack and Vite are told to)
  if (!loadPyodide) ({ loadPyodide } = await import(/* webpackIgnore: true */ /* @vite-ignore */ `${base}pyodide/pyodide.mjs`));
  const pyodide = await loadPyodide({
    indexURL: `${base}pyodide/`,
    lockFileURL: `${base}pyodide/pyodide-lock.json`,
    fullStdLib: false,
  });
  progress("Loading numpy and jinja2…");
  const failures = [];
  await pyodide.loadPackage(["numpy", "jinja2"], { errorCallback: (m) => failures.push(m), messageCallback: () => {} });
  if (failures.length) throw new Error(`loading packages failed: ${failures.join("; ")}`);
  progress("Loading the ConvTranspose package…");
  pyodide.unpackArchive(await readBytes(`${base}bundle.zip`), "zip", { extractDir: PACKAGE_DIR });
  pyodide.registerJsModule("convtranspose_executor", executorModule);
  const sys = pyodide.pyimport("sys");
  sys.path.insert(0, PACKAGE_DIR);
  sys.destroy();
  const bridge = pyodide.pyimport("app.bridge");
  // the op contract the bundle carries: the JS input checks read its type constraints
  const manifest = JSON.parse(pyodide.FS.readFile(`${PACKAGE_DIR}/manifest.json`, { encoding: "utf8" }));
  booted = { pyodide, bridge, manifest };
  return { pyodide, bridge, manifest, loadMs: performance.now() - started };
}

/** Starts Pyodide once per page (or process); every later call shares it:
 * {pyodide, bridge (app.bridge), manifest (manifest.json), loadMs}. options.assets (or base): the folder
 * holding pyodide/ and bundle.zip; a later call naming another folder is refused. */
export function bootApp({ assets = null, ...options } = {}) {
  if (assets !== null) options.base = assetsBase(assets);
  if (booting && options.base && options.base !== bootedFrom) {
    return Promise.reject(new Error(`the runtime is already loaded from ${bootedFrom}: ` +
      `one assets folder per page (or process), asked for ${options.base}`));
  }
  if (!booting) {
    const settings = { ...defaults, ...options };
    bootedFrom = settings.base;
    booting = boot(settings);
    booting.catch(() => { booting = null; });
  }
  return booting;
}

/** {pyodide, bridge, manifest} once booted, else null: for the calls that cannot wait. */
export const bootedApp = () => booted;
