// Compiles WGSL shaders with Tint (Dawn for Node, npm `webgpu`) and reports every message it gives.
// Usage: node tools/wgsl/tint.mjs SHADERS.json DEVICE   (a JSON list of {id, code, features}; DEVICE null or
// swiftshader); prints one JSON line per shader: {id, device, messages: [{type, message, line, column}], error},
// announced by {start: id} first (should Dawn crash, the caller knows on which shader).
//
// Two Dawn devices, one per process (two Dawn instances in one Node process crash it at random), each with
// the shader's entry point built into a compute pipeline (layout "auto"):
// - "null": Dawn's null backend offers every feature (shader-f16, subgroups, subgroup matrices) and runs
//   Tint's front end (parsing, resolution, validation, uniformity analysis) on every shader;
// - "swiftshader": Chromium's SwiftShader Vulkan driver (VK_ICD_FILENAMES) compiles the shaders whose
//   features it has (no shader-f16, no subgroup matrices) through Tint's SPIR-V writer down to the driver,
//   as Chrome does on a machine without a GPU.
import { readFileSync } from "node:fs";
import { create, globals } from "webgpu";

Object.assign(globalThis, globals);
const shaders = JSON.parse(readFileSync(process.argv[2], "utf8"));
const LIMITS = ["maxComputeWorkgroupStorageSize", "maxComputeInvocationsPerWorkgroup", "maxComputeWorkgroupSizeX",
  "maxComputeWorkgroupSizeY", "maxComputeWorkgroupSizeZ", "maxStorageBuffersPerShaderStage",
  "maxStorageBufferBindingSize", "maxBufferSize"];

async function open(name, flags) {
  // The GPU object is kept for the process's life: once garbage-collected, Dawn's instance goes with it and
  // the device under it crashes the process at random.
  const gpu = create(flags);
  const adapter = await gpu.requestAdapter();
  if (!adapter) return null;
  const requiredFeatures = ["shader-f16", "subgroups", "chromium-experimental-subgroup-matrix"]
    .filter((f) => adapter.features.has(f));
  const requiredLimits = Object.fromEntries(LIMITS.filter((k) => k in adapter.limits).map((k) => [k, adapter.limits[k]]));
  const device = await adapter.requestDevice({ requiredFeatures, requiredLimits });
  return { name, gpu, adapter, device, features: new Set(requiredFeatures),
    subgroupMax: adapter.info.subgroupMaxSize || 1 };
}

async function compile({ name, device, subgroupMax }, { id, code, limits }) {
  const messages = [];
  let error = null;
  let note = null;
  // Messages first, then the pipeline. Dawn for Node hangs in getCompilationInfo() on a module whose error
  // scope is still open, so the scope is popped before asking.
  device.pushErrorScope("validation");
  const module = device.createShaderModule({ code });
  const invalid = await device.popErrorScope();
  if (invalid) error = invalid.message;
  for (const m of (await module.getCompilationInfo()).messages) {
    messages.push({ type: m.type, message: m.message, line: m.lineNum, column: m.linePos });
  }
  // A subgroup-matrix shader's workgroup width must be a multiple of the device's largest subgroup size:
  // the variants plan it for the device they run on, so a pipeline is built only where it fits.
  const width = Number(/@workgroup_size\((\d+)/.exec(code)?.[1] ?? 1);
  const over = Object.entries(limits ?? {}).filter(([k, v]) => v > device.limits[k]).map(([k]) => k);
  if (!error && code.includes("enable chromium_experimental_subgroup_matrix;") && width % subgroupMax) {
    note = `pipeline not built: workgroup width ${width} is planned for another subgroup size than this device's ${subgroupMax}`;
  } else if (!error && over.length) {
    note = `pipeline not built: planned for devices with more than this one's ${over.join(", ")}`;
  } else if (!error) {
    device.pushErrorScope("validation");
    device.pushErrorScope("internal");
    // The synchronous call: the asynchronous one aborted this Dawn for Node build's process (seen before the
    // GPU object was kept alive, which may have been the cause; the synchronous one is simply enough here).
    device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
    for (const scope of ["internal", "validation"]) {
      const e = await device.popErrorScope();
      if (e && !error) error = `${scope}: ${e.message}`;
    }
  }
  return { id, device: name, messages, error, note };
}

const FLAGS = { null: ["backend=null", "enable-dawn-features=allow_unsafe_apis"], swiftshader: ["backend=vulkan"] };
const name = process.argv[3] ?? "null";
const devices = [await open(name, FLAGS[name])];
for (const d of devices) {
  if (!d) process.stdout.write(JSON.stringify({ warning: "a Dawn device could not be opened" }) + "\n");
}
for (const shader of shaders) {
  for (const d of devices) {
    if (!d || !shader.features.every((f) => d.features.has(f))) continue;
    // Announced first: should Dawn crash on a shader, the caller still knows which one.
    process.stdout.write(JSON.stringify({ start: shader.id, device: d.name }) + "\n");
    process.stdout.write(JSON.stringify(await compile(d, shader)) + "\n");
  }
}
process.exit(0);
