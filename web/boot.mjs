// Boots Pyodide with numpy, jinja2 and the app package, and exposes the kernel to JavaScript.
// One module for every host: the pages import it as is; a host without fetch-able URLs (Node) passes
// its own `loadPyodide` and `readBytes`.
//
//   import { getKernel } from "./web/boot.mjs";
//   const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1 });
//   const { y, meta } = await kernel({ x: { data, shape }, w: { data, shape }, strides: [2, 2] });

const INPUTS = ["x", "w", "b"];
let booting = null;

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
  pyodide.unpackArchive(await readBytes(`${base}bundle.zip`), "zip", { extractDir: "/home/pyodide/convtranspose" });
  pyodide.runPython("import sys; sys.path.insert(0, '/home/pyodide/convtranspose')");
  const bridge = pyodide.pyimport("app.bridge");
  return { pyodide, bridge, loadMs: performance.now() - started };
}

/** Starts Pyodide once per page (or process); every later call shares it. */
export function bootApp(options = {}) {
  if (!booting) {
    booting = boot({ base: new URL("../", import.meta.url).href, ...options });
    booting.catch(() => { booting = null; });
  }
  return booting;
}

function toJs(proxy) {
  const value = proxy.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
  proxy.destroy();
  return value;
}

function typedArray(bytes, dtype) {
  const copy = bytes.slice().buffer;
  return dtype === "float16" ? new Uint16Array(copy) : dtype === "float64" ? new Float64Array(copy) : new Float32Array(copy);
}

/** Plain JS request -> the object the Python bridge reads (typed arrays travel without copies per element). */
function request(inputs) {
  const out = { ...inputs };
  for (const name of INPUTS) {
    const t = inputs[name];
    if (t == null) continue;
    const dtype = t.dtype ?? "float32";
    const data = ArrayBuffer.isView(t.data) ? t.data : dtype === "float16" ? new Uint16Array(t.data) : new Float32Array(t.data);
    out[name] = { data, shape: Array.from(t.shape), dtype };
  }
  return out;
}

/** The kernel as a JS function: kernel({x, w, b?, ...attributes, variant?}) -> {y: {data, shape, dtype}, meta}. */
export async function getKernel(id, { version = 1, revision = null, limits = null } = {}) {
  const { bridge, pyodide } = await bootApp();
  const pyLimits = limits ? pyodide.toPy(limits) : null;
  const pyKernel = await bridge.open_kernel(id, version, revision, pyLimits);
  pyLimits?.destroy();
  const kernel = async (inputs) => {
    const args = pyodide.toPy(request(inputs));
    try {
      const result = toJs(await bridge.call(pyKernel, args));
      result.y.data = typedArray(result.y.data, result.y.dtype);
      return result;
    } finally {
      args.destroy();
    }
  };
  kernel.device = () => toJs(bridge.device_info(pyKernel));
  kernel.reference = (inputs) => {
    const args = pyodide.toPy(request(inputs));
    try {
      const y = toJs(bridge.reference(args));
      y.data = typedArray(y.data, "float64");
      return y;
    } finally {
      args.destroy();
    }
  };
  /** {} when the request would run, else {error, field}: every refusal, found without GPU work. */
  kernel.validate = (inputs) => {
    const args = pyodide.toPy(request(inputs));
    try {
      return toJs(bridge.validate(pyKernel, args));
    } finally {
      args.destroy();
    }
  };
  kernel.loadCases = (text) => toJs(bridge.load_cases(text));
  kernel.runCase = async (index, variant = null) => toJs(await bridge.run_loaded_case(pyKernel, index, variant));
  kernel.loadBench = (text, tier) => toJs(bridge.load_bench(text, tier));
  kernel.runBenchCase = async (index, { runs = 5, warmup = 1 } = {}) =>
    toJs(await bridge.run_bench_case(pyKernel, index, runs, warmup));
  // Tunes loaded bench cases on this adapter and applies the table to this page's session.
  kernel.tuneBench = async (benchText, indices, { runs = 3, progress = () => {} } = {}) =>
    toJs(await bridge.tune_loaded(pyKernel, benchText, indices, runs, progress));
  return kernel;
}
