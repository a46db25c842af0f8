// Boots Pyodide with numpy, jinja2 and the app package, once per page (or process). One module for every
// host: the pages import it as is; a host without fetch-able URLs (Node) passes its own `loadPyodide` and
// `readBytes`. What it boots is the verified runtime under pyodide/ and bundle.zip (the Python package,
// templates, contract files and tuning tables), both found beside web/.
import * as executorModule from "./executor.mjs";

const PACKAGE_DIR = "/home/pyodide/convtranspose";
let booting = null;
let booted = null;

async function fetchBytes(url) {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: HTTP ${response.status}`);
  return new Uint8Array(await response.arrayBuffer());
}

async function boot({ base, loadPyodide, readBytes = fetchBytes, progress = () => {} }) {
  const started = performance.now();
  progress("Loading the Python runtime (Pyodide)…");
  if (!loadPyodide) ({ loadPyodide } = await import(`${base}pyodide/pyodide.mjs`));
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
 * {pyodide, bridge (app.bridge), manifest (manifest.json), loadMs}. */
export function bootApp(options = {}) {
  if (!booting) {
    booting = boot({ base: new URL("../../", import.meta.url).href, ...options });
    booting.catch(() => { booting = null; });
  }
  return booting;
}

/** {pyodide, bridge, manifest} once booted, else null: for the calls that cannot wait. */
export const bootedApp = () => booted;
