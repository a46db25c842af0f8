// Boots Pyodide with numpy, jinja2 and the app package, and exposes the kernel to JavaScript.
// One module for every host: the pages import it as is; a host without fetch-able URLs (Node) passes
// its own `loadPyodide` and `readBytes`.
//
//   import { getKernel } from "./web/boot.mjs";
//   const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, device });
//   const { y, meta } = await kernel({ x: { data, shape }, w: { data, shape }, strides: [2, 2] });
//
// A call's first time with a signature (shapes, dtypes, attributes, variant) goes through Python, which
// validates, plans, renders and compiles, and leaves a launch in the executor (web/executor.mjs). Every
// later call with that signature is checked and run here, in JavaScript, without entering Python.
import * as executorModule from "./executor.mjs";
import { allFinite, DTYPE_BYTES, kernelError } from "./executor.mjs";

const INPUTS = ["x", "w", "b"];
const TYPED = { float32: Float32Array, float16: Uint16Array };
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
  pyodide.registerJsModule("convtranspose_executor", executorModule);
  const sys = pyodide.pyimport("sys");
  sys.path.insert(0, "/home/pyodide/convtranspose");
  sys.destroy();
  const bridge = pyodide.pyimport("app.bridge");
  booted = { pyodide, bridge };
  return { pyodide, bridge, loadMs: performance.now() - started };
}

/** Starts Pyodide once per page (or process); every later call shares it. */
export function bootApp(options = {}) {
  if (!booting) {
    booting = boot({ base: new URL("../../", import.meta.url).href, ...options });
    booting.catch(() => { booting = null; });
  }
  return booting;
}

// Python values that come back as plain JS data; any other Python object (a kernel) stays a PyProxy.
const CONVERTED = new Set(["dict", "list", "tuple", "bytes", "bytearray", "memoryview"]);

function toJs(value) {
  if (!value?.toJs || !CONVERTED.has(value.type)) return value;
  const out = value.toJs({ dict_converter: Object.fromEntries, create_pyproxies: false });
  value.destroy();
  return out;
}

const isPlain = (v) => v !== null && typeof v === "object" && (Array.isArray(v) || Object.getPrototypeOf(v) === Object.prototype);

let booted = null;  // {pyodide, bridge} once booted: callPythonNow needs it

/**
 * The one way from JavaScript into Python: `app.bridge.<name>(...args)`, once booted (callPython waits for
 * the boot). Plain objects and arrays become Python dicts and lists, everything else (typed arrays, GPU
 * objects, functions, Python proxies) travels as it is; the result comes back as plain JS data (GPU
 * objects inside it as themselves), or a Promise of it for the bridge's async functions. The bridge returns
 * the package's exceptions as {__error__: {name, message, field, traceback}}: thrown here as an Error with
 * that name, a one-line message, `field`, and the traceback in `pythonTraceback`.
 */
export function callPythonNow(name, ...args) {
  if (!booted) throw new Error("callPythonNow before the Python runtime booted: await bootApp() first");
  const { pyodide, bridge } = booted;
  const converted = args.map((a) => (isPlain(a) ? pyodide.toPy(a) : a));
  const release = () => converted.forEach((a, i) => { if (a !== args[i]) a?.destroy?.(); });
  const unwrap = (out) => {
    const value = toJs(out);
    if (value?.__error__) {
      const e = value.__error__;
      throw kernelError(e.name, e.message, e.field, e.traceback);
    }
    return value;
  };
  let out;
  try {
    const fn = bridge[name];
    if (typeof fn !== "function") throw new Error(`app.bridge has no function ${name}`);
    out = fn(...converted);
  } catch (err) {
    release();
    throw err;
  }
  if (out && typeof out.then === "function") return Promise.resolve(out).then(unwrap).finally(release);
  try {
    return unwrap(out);
  } finally {
    release();
  }
}

export async function callPython(name, ...args) {
  await bootApp();
  return await callPythonNow(name, ...args);
}

/** One input as the hot path needs it, checked: {data (typed array of the dtype), shape, dtype, constant}
 * or {buffer, shape, dtype, finite}; null when only Python can take it (float16 as plain numbers). */
function tensor(name, t) {
  if (t === null || typeof t !== "object") {
    throw kernelError("ConvTransposeError", `input '${name}' must be {data, shape[, dtype]} or {buffer, shape[, dtype]}`, name);
  }
  const dtype = t.dtype ?? "float32";
  if (!(dtype in DTYPE_BYTES)) {
    throw kernelError("ConvTransposeError", `input '${name}': dtype ${JSON.stringify(dtype)} is not supported; allowed: ['float16', 'float32']`, name);
  }
  const shape = t.shape;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0)) {
    throw kernelError("ConvTransposeError", `input '${name}': shape must be a list of non-negative integers, got ${JSON.stringify(shape)}`, name);
  }
  const count = shape.reduce((a, d) => a * d, 1);
  if (t.buffer !== undefined) {
    if (t.data !== undefined) throw kernelError("ConvTransposeError", `input '${name}': give data or buffer, not both`, name);
    if (typeof t.buffer?.size !== "number") throw kernelError("ConvTransposeError", `input '${name}': buffer must be a GPUBuffer`, name);
    return { buffer: t.buffer, shape, dtype, finite: t.finite !== false };
  }
  let data = t.data;
  if (data instanceof TYPED[dtype]) {
    // the hot path: the caller's own array, written to the GPU as it is
  } else if (dtype === "float16" && globalThis.Float16Array && data instanceof globalThis.Float16Array) {
    data = new Uint16Array(data.buffer, data.byteOffset, data.length);
  } else if (Array.isArray(data) || ArrayBuffer.isView(data)) {
    const bad = Array.prototype.find.call(data, (v) => typeof v !== "number" && typeof v !== "bigint");
    if (bad !== undefined || (Array.isArray(data) && data.length !== data.filter(() => true).length)) {
      throw kernelError("ConvTransposeError", `input '${name}': data must be a flat list of numbers, found ${JSON.stringify(bad ?? null)}`, name);
    }
    if (dtype === "float16") {
      // numbers to float16 bits: Float16Array rounds them as numpy does; without it, numpy does it in Python
      if (!globalThis.Float16Array) return null;
      const halves = globalThis.Float16Array.from(data, Number);
      data = new Uint16Array(halves.buffer, halves.byteOffset, halves.length);
    } else {
      data = Float32Array.from(data, Number);
    }
  } else {
    throw kernelError("ConvTransposeError", `input '${name}': data must be a typed array or a flat list of numbers, got ${data === undefined ? "nothing" : typeof data}`, name);
  }
  if (data.length !== count) {
    throw kernelError("ConvTransposeError", `input '${name}': data has ${data.length} values but shape ${JSON.stringify(shape)} needs ${count}`, name);
  }
  return { data, shape, dtype, constant: t.constant === true };
}

const finiteOf = new WeakMap();  // constant typed arrays -> whether every value is finite (scanned once)
function inputsFinite(tensors) {
  return ["x", "w"].every((name) => {
    const t = tensors[name];
    if (t.buffer) return t.finite !== false;
    if (!t.constant) return allFinite(t.data, t.dtype);
    if (!finiteOf.has(t.data)) finiteOf.set(t.data, allFinite(t.data, t.dtype));
    return finiteOf.get(t.data);
  });
}

/** A JS request -> the plain request Python's bridge.call reads (typed arrays travel without per-element copies). */
function pythonRequest(inputs) {
  const out = { ...inputs };
  for (const name of INPUTS) {
    const t = inputs[name];
    if (t == null) continue;
    const dtype = t.dtype ?? "float32";
    const data = ArrayBuffer.isView(t.data) ? t.data : Array.from(t.data ?? []);
    out[name] = { data, shape: Array.from(t.shape ?? []), dtype };
  }
  return out;
}

function typedArray(bytes, dtype) {
  const copy = bytes.slice().buffer;
  return dtype === "float16" ? new Uint16Array(copy) : dtype === "float64" ? new Float64Array(copy) : new Float32Array(copy);
}

let kernels = 0;

/**
 * The kernel as a JS function:
 *   kernel({x, w, b?, ...attributes, variant?}, {output?: "cpu" | "gpu", timing?, profile?}) -> {y, meta}
 * Inputs: {data: Float32Array | Uint16Array (float16 bits) | number[], shape, dtype?, constant?} or
 * {buffer: GPUBuffer, shape, dtype?, finite?} on the kernel's device. y: {data, shape, dtype}, or with
 * output "gpu" {buffer, shape, dtype, dispose} that the caller owns (dispose() hands it back for reuse).
 * `device`: the caller's GPUDevice; without it the package opens (and shares) its own.
 */
export async function getKernel(id, { version = 1, revision = null, limits = null, device = null } = {}) {
  const pyKernel = await callPython("open_kernel", id, version, revision, limits, device);
  const serial = ++kernels;
  let exec = await callPython("executor", pyKernel);
  const pending = new Map();  // signature -> the Python planning under way (concurrent first calls share it)
  const special = new Map();  // signatures that never get a launch: empty outputs, requests split into pieces

  async function plan(key, tensors, attributes, variant, finite, profile) {
    if (!pending.has(key)) {
      const meta = Object.fromEntries(Object.entries(tensors).map(([n, t]) => [n, { shape: t.shape, dtype: t.dtype }]));
      const job = callPython("launch", pyKernel, { ...meta, attributes, variant, finite }, key)
        .finally(() => pending.delete(key));
      pending.set(key, job);
    }
    const out = await pending.get(key);
    if (profile) Object.assign(profile, { python: out.timings });
    if (out.executor) exec = out.executor;
    if (out.launch) return out.launch;
    special.set(key, out);
    return null;
  }

  /** What runs in Python, on numpy arrays: requests split into pieces past the device's limits, and float16
   * given as plain numbers where JavaScript has no Float16Array. Neither takes GPU tensors. */
  async function slowPath(inputs, output, pieces = null) {
    const resident = INPUTS.find((n) => inputs[n]?.buffer !== undefined);
    if (resident || output === "gpu") {
      const why = pieces ? `this request runs as ${pieces} pieces (past the device's limits)`
        : "float16 data given as plain numbers is converted by numpy here (no Float16Array): pass Uint16Array bits";
      throw kernelError("ConvTransposeError", `${why}; GPU-resident tensors and output "gpu" need a request ` +
        "that runs on the GPU in one piece", resident ?? "output");
    }
    const result = await callPython("call", pyKernel, pythonRequest(inputs));
    result.y.data = typedArray(result.y.data, result.y.dtype);
    return result;
  }

  const kernel = async (inputs, { output = "cpu", timing = false, profile = null } = {}) => {
    if (profile) profile.start = performance.now();
    if (inputs === null || typeof inputs !== "object") {
      throw kernelError("ConvTransposeError", "kernel(inputs): inputs must be an object {x, w, b?, ...attributes}");
    }
    if (output !== "cpu" && output !== "gpu") {
      throw kernelError("ConvTransposeError", `output must be "cpu" or "gpu", got ${JSON.stringify(output)}`, "output");
    }
    const tensors = {}, attributes = {};
    let slow = false;
    for (const [k, v] of Object.entries(inputs)) if (!INPUTS.includes(k) && k !== "variant") attributes[k] = v;
    for (const name of INPUTS) {
      if (inputs[name] == null) {
        if (name !== "b") throw kernelError("ConvTransposeError", `input '${name}' is missing`, name);
        continue;
      }
      const t = tensor(name, inputs[name]);
      if (t === null) slow = true;
      else tensors[name] = t;
    }
    if (slow) return slowPath(inputs, output);
    const variant = inputs.variant ?? null;
    let key = JSON.stringify([serial, variant, INPUTS.map((n) => tensors[n] ? [tensors[n].shape, tensors[n].dtype] : null), attributes]);
    if (exec.lost) exec = await callPython("executor", pyKernel);  // reopened after a loss (or the loss reported)
    if (profile) profile.checked = performance.now();
    let launch = exec.cached(key) ?? (special.has(key) ? null : await plan(key, tensors, attributes, variant, true, profile));
    // NaN or Inf in x or w: the variants that multiply padding zeros would spread NaNs that IEEE does not.
    // GPU tensors say so themselves (finite: false); CPU data is flagged on the GPU during the call when y
    // is read back anyway (then rerun below), else scanned here.
    const exactKey = key + "!nonfinite";
    const exact = async () => exec.cached(exactKey) ??
      (special.has(exactKey) ? null : await plan(exactKey, tensors, attributes, variant, false, profile));
    if (launch?.finiteOnly && (INPUTS.some((n) => tensors[n]?.finite === false) || (output === "gpu" && !inputsFinite(tensors)))) {
      launch = await exact();
      key = exactKey;
    }
    if (profile) profile.planned = performance.now();
    if (!launch) {
      const info = special.get(key);
      if (info.empty) {
        const y = output === "gpu"
          ? { buffer: exec.upload(new Uint8Array(4)), shape: info.empty.y_shape, dtype: info.empty.dtype }
          : { data: new TYPED[info.empty.dtype](0), shape: info.empty.y_shape, dtype: info.empty.dtype };
        return { y, meta: { ...info.empty.meta } };
      }
      return slowPath(inputs, output, info.pieces);
    }
    const out = await launch.run(tensors, { output, timing, profile });
    if (!out.meta.nonfinite) {
      delete out.meta.nonfinite;
      return out;
    }
    const rerun = await exact();
    return rerun ? rerun.run(tensors, { output, timing, profile }) : slowPath(inputs, output, special.get(exactKey)?.pieces);
  };

  kernel.device = () => callPythonNow("device_info", pyKernel);
  kernel.memory = () => exec.memory();
  /** The GPUDevice the kernel runs on (the caller's, or the one the package opened). */
  kernel.gpuDevice = () => exec.device;
  /** A typed array or {data, shape, dtype?} copied once into a GPU buffer of this kernel's device: {buffer, shape, dtype}. */
  kernel.upload = (t) => {
    const checked = tensor("upload", t);
    if (!checked?.data) throw kernelError("ConvTransposeError", "upload takes {data: typed array, shape, dtype?}");
    return { buffer: exec.upload(checked.data), shape: checked.shape, dtype: checked.dtype };
  };
  /** After rewriting, in place, a constant weight array or a weight GPUBuffer: its prepared layouts are rebuilt. */
  kernel.forget = (weights) => exec.forget(ArrayBuffer.isView(weights) ? weights : weights?.buffer ?? weights?.data ?? weights);
  kernel.reference = (inputs) => {
    const y = callPythonNow("reference", pythonRequest(inputs));
    y.data = typedArray(y.data, "float64");
    return y;
  };
  /** {} when the request would run, else {error, field}: every refusal, found without GPU work. */
  kernel.validate = (inputs) => callPythonNow("validate", pyKernel, pythonRequest(inputs));
  kernel.loadCases = (text) => callPythonNow("load_cases", text);
  kernel.runCase = (index, variant = null) => callPython("run_loaded_case", pyKernel, index, variant);
  kernel.loadBench = (text, tier) => callPythonNow("load_bench", text, tier);
  kernel.runBenchCase = (index, { runs = 5, warmup = 1 } = {}) => callPython("run_bench_case", pyKernel, index, runs, warmup);
  // Tunes loaded bench cases on this adapter and applies the table to this page's session.
  kernel.tuneBench = (benchText, indices, { runs = 3, progress = () => {} } = {}) =>
    callPython("tune_loaded", pyKernel, benchText, indices, runs, progress);
  return kernel;
}
