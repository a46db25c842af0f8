// Compiles WGSL shaders with Tint (Dawn for Node, npm `webgpu`) and reports every message it gives.
// Usage: node tools/wgsl/tint.mjs DEVICE   (DEVICE null or swiftshader). It first prints {ready, device} (or
// {warning} when no Dawn device opens), then reads one JSON shader {id, code, features, limits} per line of
// stdin and answers each with one line {id, device, messages: [{type, message, line, column}], error, note,
// cpu_ms} before reading the next (tools/wgsl/check.py feeds several of these processes, one shader at a time, so
// should Dawn crash or hang it knows on which shader).
//
// One Dawn device per process (two Dawn instances in one Node process crash it at random), the shader's
// entry point built into a compute pipeline (layout "auto"):
// - "null": Dawn's null backend offers every feature (shader-f16, subgroups, subgroup matrices) and runs
//   Tint's front end (parsing, resolution, validation, uniformity analysis) on every shader;
// - "swiftshader": Chromium's SwiftShader Vulkan driver (VK_ICD_FILENAMES) compiles the shaders whose
//   features it has (no shader-f16, no subgroup matrices) through Tint's SPIR-V writer down to the driver,
//   as Chrome does on a machine without a GPU.
// The pipeline is made with the synchronous call: createComputePipelineAsync, four in flight, took 2x the CPU
// time on SwiftShader (54 s against 27 s for 60 shaders: Dawn for Node polls for its completion), so the
// caller uses both cores with two processes instead (docs/testing.md).
import { createInterface } from "node:readline";
import { create, globals } from "webgpu";

Object.assign(globalThis, globals);
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
    device.createComputePipeline({ layout: "auto", compute: { module, entryPoint: "main" } });
    for (const scope of ["internal", "validation"]) {
      const e = await device.popErrorScope();
      if (e && !error) error = `${scope}: ${e.message}`;
    }
  }
  return { id, device: name, messages, error, note };
}

const FLAGS = { null: ["backend=null", "enable-dawn-features=allow_unsafe_apis"], swiftshader: ["backend=vulkan"] };
const name = process.argv[2] ?? "null";
const device = await open(name, FLAGS[name]);
if (!device) {
  process.stdout.write(JSON.stringify({ warning: `the Dawn device ${name} could not be opened` }) + "\n");
  process.exit(0);
}
process.stdout.write(JSON.stringify({ ready: true, device: name, features: [...device.features] }) + "\n");
for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const shader = JSON.parse(line);
  const cpu = process.cpuUsage();
  const reply = shader.features.every((f) => device.features.has(f))
    ? await compile(device, shader)
    : { id: shader.id, device: name, skipped: `needs ${shader.features.filter((f) => !device.features.has(f))}` };
  const used = process.cpuUsage(cpu);
  reply.cpu_ms = Math.round((used.user + used.system) / 1000);  // the process's CPU time on it, every thread
  process.stdout.write(JSON.stringify(reply) + "\n");
}
process.exit(0);
