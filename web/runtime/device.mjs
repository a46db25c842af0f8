// The GPU device the package opens when the caller gives none, and the one executor per device. JavaScript
// opens it, for Python (app/gpu.py Gpu.open calls openDevice with the features and limits it plans with)
// and for a revisit's calls that run before Python has booted (kernel.mjs, plan-store.mjs): both get the
// same device and executor, so launches made on either side serve the other.
import { kernelError } from "./errors.mjs";
import { Executor } from "./executor.mjs";

let opening = null;  // {key, promise} of the shared device (a lost one is opened again)
const executors = new WeakMap();  // GPUDevice -> Executor

const inNode = () => typeof globalThis.process?.versions?.node === "string" && !globalThis.document;

/** Why there is no adapter, in the terms of the host this runs in. */
function noAdapterHint() {
  if (inNode()) {
    return "no WebGPU adapter: in Node.js navigator.gpu is npm webgpu's (Dawn), which found no GPU driver " +
      "(Vulkan on Linux: install the GPU's Vulkan driver, or Mesa's or SwiftShader's and point " +
      "VK_ICD_FILENAMES at its ICD file, e.g. /usr/lib/chromium/vk_swiftshader_icd.json)";
  }
  return "no WebGPU adapter: the browser offers none (a GPU it blocks, or WebGPU turned off; headless Chromium " +
    "without a GPU needs --enable-unsafe-webgpu)";
}

// navigator.gpu while the Node entry has the app's navigator set aside (Pyodide starting: node.mjs)
let asideGpu = null;
export function holdGpu(gpu) { asideGpu = gpu ?? null; }

async function open(features, limitNames) {
  const gpu = globalThis.navigator?.gpu ?? asideGpu;
  if (!gpu) {
    throw kernelError("GpuError", inNode()
      ? "WebGPU is not available here: in Node.js give navigator.gpu from npm webgpu (docs/npm.md)"
      : "WebGPU is not available here (navigator.gpu is missing: a browser without WebGPU, or not a secure context)");
  }
  const adapter = await gpu.requestAdapter({ powerPreference: "high-performance" });
  if (!adapter) throw kernelError("GpuError", noAdapterHint());
  const wanted = features.filter((f) => adapter.features.has(f));
  const limits = Object.fromEntries(limitNames.map((name) => [name, adapter.limits[name]]));
  const device = await adapter.requestDevice({ requiredFeatures: wanted, requiredLimits: limits });
  const info = adapter.info ?? {};
  return { device, features: wanted, adapterFeatures: [...adapter.features], limits, info,
           isFallback: Boolean(adapter.isFallbackAdapter || info.isFallbackAdapter) };
}

/** The shared device with the optional `features` the adapter has and `limitNames` raised to the adapter's:
 * {device, features, adapterFeatures, limits, info, isFallback}, one per page (or process) until it is lost. */
export function openDevice(features, limitNames) {
  features = [...features];
  limitNames = [...limitNames];
  const key = JSON.stringify([features, limitNames]);
  if (opening?.key !== key || opening.lost) {
    const entry = { key, features, limitNames, lost: false, promise: open(features, limitNames) };
    entry.promise.then(({ device }) => device.lost.then(() => { entry.lost = true; }), () => {
      if (opening === entry) opening = null;
    });
    opening = entry;
  }
  return opening.promise;
}

/** An executor that remembers each pipeline's WGSL, so that a launch can be stored (plan-store.mjs). */
class RecordingExecutor extends Executor {
  constructor(device) {
    super(device);
    this.sources = new WeakMap();  // pipeline -> {key, source, label}
  }

  async pipeline(key, source, label) {
    const made = await super.pipeline(key, source, label);
    this.sources.set(made, { key, source, label });
    return made;
  }
}

/** The shared device as last asked for: {features, limitNames (what it was asked with), promise} or null. */
export const sharedDevice = () => (opening && !opening.lost ? opening : null);

/** The executor of a device: one per device, whoever asks (Python's Gpu or the JS side). */
export function executorFor(device) {
  let executor = executors.get(device);
  if (!executor || executor.lost) executors.set(device, executor = new RecordingExecutor(device));
  return executor;
}

/** The adapter and what the device was opened with, as one string: part of every persisted plan's key. */
export function adapterKey({ info, features, limits }) {
  const text = (name) => String(info?.[name] ?? "");
  return JSON.stringify([text("vendor"), text("architecture"), text("device"), text("description"),
    [...features].sort(), Object.entries(limits).sort()]);
}
