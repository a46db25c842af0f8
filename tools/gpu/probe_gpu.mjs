// The GPU the probes (mma_probe.mjs, kernel_probe.mjs) run on, opened as web/views/node-host.mjs opens it, and the
// one timer they share. PROBE_NULL=1 opens Dawn's null backend instead: shaders compile, times are garbage.
import { dawnGpu } from "../../web/views/dawn-gpu.mjs";

/** A device with subgroup matrices, f16 and exact timestamps, with the adapter's own values of `limits`. */
export async function openDevice(limits) {
  const gpu = dawnGpu(process.env.PROBE_NULL ? ["backend=null"] : []);
  const adapter = await gpu.requestAdapter();
  const device = await adapter.requestDevice({
    requiredFeatures: ["chromium-experimental-subgroup-matrix", "shader-f16", "subgroups", "timestamp-query"],
    requiredLimits: Object.fromEntries(limits.map((k) => [k, adapter.limits[k]])),
  });
  device.addEventListener?.("uncapturederror", (e) => console.log("GPU error:", e.error.message.split("\n")[0]));
  return { gpu, device };  // the GPU object lives as long as the device: collected, it takes the device down
}

/** A timer: `encode(encoder, querySet)` records passes that write timestamps 0 (begin) and 1 (end); resolves
 *  to the milliseconds between them. */
export function timer(device) {
  const querySet = device.createQuerySet({ type: "timestamp", count: 2 });
  const resolved = device.createBuffer({ size: 16, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC });
  const readback = device.createBuffer({ size: 16, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST });
  return async (encode) => {
    const enc = device.createCommandEncoder();
    encode(enc, querySet);
    enc.resolveQuerySet(querySet, 0, 2, resolved, 0);
    enc.copyBufferToBuffer(resolved, 0, readback, 0, 16);
    device.queue.submit([enc.finish()]);
    await readback.mapAsync(GPUMapMode.READ);
    const t = new BigUint64Array(readback.getMappedRange().slice(0));
    readback.unmap();
    return Number(t[1] - t[0]) / 1e6;
  };
}
