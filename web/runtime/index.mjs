// The runtime's public entry: what the exported folder's convtranspose.mjs re-exports and what a page imports.
//
//   import { getKernel } from "./web/runtime/index.mjs";
//   const kernel = await getKernel("webgpu-kernels/ai.onnx.ConvTranspose", { version: 1, device });
//   const { y, meta } = await kernel({ x: { data, shape }, w: { data, shape }, strides: [2, 2] });
export { bootApp, bootPhases } from "./boot.mjs";
export { ConvTransposeError, GpuError, KernelError, KernelNotFoundError } from "./errors.mjs";
export { getKernel } from "./kernel.mjs";
export { callPython, callPythonNow } from "./python.mjs";
