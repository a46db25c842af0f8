// navigator.gpu from Dawn (npm `webgpu`) with the toggles every Node process here opens it with: the Node host
// (dawn-node.mjs), the adaptation bench (tools/adapt_bench.mjs) and the GPU machine's probes (tools/gpu/).
//   allow_unsafe_apis exposes experimental features (subgroup matrices) where the GPU has them;
//   vulkan_enable_f16_on_nvidia lifts Dawn's policy block on shader-f16 for NVIDIA GPUs under Vulkan (the driver
//   supports it; Dawn withholds it pending CTS work, crbug.com/42251215): without it no NVIDIA GPU offers shader-f16,
//   nor f16 subgroup-matrix configurations. Both are no-ops elsewhere.
//   Dawn rounds timestamps to 65.5 us steps by default (a browser's defence against timing attacks), coarser than
//   most kernels here take on a real GPU: a local process may have them exact.
import { create, globals } from "webgpu";

export const ENABLED = Object.freeze(["allow_unsafe_apis", "vulkan_enable_f16_on_nvidia"]);
export const DISABLED = Object.freeze(["timestamp_quantization"]);

/** A GPU object (what navigator.gpu holds) opened with ENABLED and `enable` (a probe's extra toggles) on, DISABLED
 * off, after `first` (a backend, say), with Dawn's WebGPU globals (GPUBufferUsage, GPUQueue, ...) made global, as a
 * browser has them. */
export function dawnGpu(first = [], enable = []) {
  Object.assign(globalThis, globals);
  return create([...first, `enable-dawn-features=${[...ENABLED, ...enable].join(",")}`,
    `disable-dawn-features=${DISABLED.join(",")}`]);
}

// Dawn's Node binding rejects a SharedArrayBuffer (or a view of one) as a writeBuffer source, and both ORT
// wasm builds upload from shared memory: such sources are copied into a plain buffer first. Our kernel never
// writes from shared memory, so the copy is ORT's cost alone.
export function shareableWrites(queue = globalThis.GPUQueue.prototype) {
  const writeBuffer = queue.writeBuffer;
  queue.writeBuffer = function (buffer, offset, data, dataOffset, size) {
    const view = ArrayBuffer.isView(data) ? data : null;
    const backing = view ? view.buffer : data;
    if (typeof SharedArrayBuffer !== "undefined" && backing instanceof SharedArrayBuffer) {
      const unit = view?.BYTES_PER_ELEMENT ?? 1;
      const start = (view ? view.byteOffset : 0) + (dataOffset ?? 0) * unit;
      const bytes = size !== undefined ? size * unit : (view ? view.byteLength : backing.byteLength) - (dataOffset ?? 0) * unit;
      return writeBuffer.call(this, buffer, offset, new Uint8Array(backing, start, bytes).slice());
    }
    return writeBuffer.apply(this, arguments);
  };
}
