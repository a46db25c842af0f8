// The finite-data policy, JavaScript side (app/finite.py states it for Python). Some variants multiply the
// padding zeros they skip in x or w, so a NaN or Inf in x or w spreads where IEEE arithmetic would not:
// their launches are `finiteOnly`, and a call with non-finite data runs on the exact launch Python plans
// for the same signature with finite=false (the key with EXACT appended). How a call finds out:
// - GPU tensors say so themselves ({buffer, finite: false}); the default is finite;
// - CPU data with y read back: the GPU flags NaN/Inf in it during the call's own submission
//   (NonfiniteCheck, the launch spec's finite_check pipeline), and the call reruns on the exact launch;
// - CPU data with y left on the GPU: scanned here first, constant arrays once (finiteOf).

import { USAGE } from "./usage.mjs";

const EXACT = "!nonfinite";

/** Whether every value of a float32 array is finite (float16 bit patterns: exponent not all ones). */
export function allFinite(data, dtype) {
  if (dtype === "float16") {
    for (let i = 0; i < data.length; i++) if ((data[i] & 0x7c00) === 0x7c00) return false;
    return true;
  }
  let probe = 0;
  for (let i = 0; i < data.length; i++) probe += data[i] * 0;  // NaN as soon as one value is NaN or +-Inf
  return probe === 0;
}

/** A GPU tensor's own word on its data: finite unless it says `finite: false`. */
export const gpuTensorFinite = (t) => t.finite !== false;

const finiteOf = new WeakMap();  // constant typed arrays -> whether every value is finite (scanned once)
function inputsFinite(tensors) {
  return ["x", "w"].every((name) => {
    const t = tensors[name];
    if (t.buffer) return gpuTensorFinite(t);
    if (!t.constant) return allFinite(t.data, t.dtype);
    if (!finiteOf.has(t.data)) finiteOf.set(t.data, allFinite(t.data, t.dtype));
    return finiteOf.get(t.data);
  });
}

/** Known before the call to hold NaN or Inf: a GPU tensor says so, or y stays on the GPU (no readback to
 * carry the GPU's flag) and the CPU data scans non-finite. */
function knownNonfinite(tensors, output) {
  return Object.values(tensors).some((t) => t.finite === false) || (output === "gpu" && !inputsFinite(tensors));
}

/**
 * One call under the policy. launchFor(key, finite) -> the launch for a signature key (planned by Python on
 * its first use, finite: whether it may assume finite data) or null when it has none; run(launch) -> the
 * result; without(key) -> the result for a key that has no launch; planned() marks the launch chosen.
 */
export async function runFinite(key, tensors, output, { launchFor, run, without, planned }) {
  let launch = await launchFor(key, true);
  const exactKey = key + EXACT;
  if (launch?.finiteOnly && knownNonfinite(tensors, output)) {
    launch = await launchFor(exactKey, false);
    key = exactKey;
  }
  planned();
  if (!launch) return without(key);
  const out = await run(launch);
  if (!out.meta.nonfinite) {
    delete out.meta.nonfinite;
    return out;
  }
  const rerun = await launchFor(exactKey, false);
  return rerun ? run(rerun) : without(exactKey);
}

/**
 * The GPU side for a finiteOnly launch: one uniform (the word count) per input that may be checked, the
 * flag they set, and a pool of readbacks for it. hold(size, usage, label) allocates the launch's buffers.
 */
export class NonfiniteCheck {
  constructor(spec, device, hold) {
    this.device = device;
    this.pipeline = spec.finite_check;
    this.inputs = {};
    for (const name of spec.finite_scanned) {
      if (!(name in spec.inputs)) continue;
      const words = Math.ceil(spec.inputs[name] / 4);
      const ubuf = hold(16, USAGE.UNIFORM | USAGE.COPY_DST, "check params");
      device.queue.writeBuffer(ubuf, 0, new Uint32Array([words, 0, 0, 0]));
      const groups = Math.max(1, Math.min(1024, Math.ceil(words / spec.check_workgroup)));
      this.inputs[name] = { ubuf, groups, bindGroups: new WeakMap() };
    }
    this.flag = hold(4, USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST, "nonfinite flag");
    this.layout = this.pipeline.getBindGroupLayout(0);
    this.reads = [];
  }

  /** The inputs a call checks: those uploaded from the CPU, when y is read back anyway. */
  checked(tensors, output) {
    return output === "cpu" ? Object.keys(this.inputs).filter((n) => tensors[n]?.data) : [];
  }

  /** Encodes the check of `names` (bound: their buffers) ahead of the call's passes. */
  encode(encoder, names, bound) {
    encoder.clearBuffer(this.flag);
    const pass = encoder.beginComputePass({ label: "nonfinite check" });
    pass.setPipeline(this.pipeline);
    for (const name of names) {
      pass.setBindGroup(0, this.bindGroup(name, bound[name]));
      pass.dispatchWorkgroups(this.inputs[name].groups);
    }
    pass.end();
  }

  bindGroup(name, buf) {
    const input = this.inputs[name];
    let g = input.bindGroups.get(buf);
    if (!g) {
      g = this.device.createBindGroup({ layout: this.layout, entries: [
        { binding: 0, resource: { buffer: buf } }, { binding: 1, resource: { buffer: this.flag } },
        { binding: 2, resource: { buffer: input.ubuf } }] });
      input.bindGroups.set(buf, g);
    }
    return g;
  }

  /** Copies the flag into a readback buffer (from the pool) in the call's submission; returns it. */
  copyFlag(encoder, hold) {
    const read = this.reads.pop() ?? hold(4, USAGE.MAP_READ | USAGE.COPY_DST, "flag read");
    encoder.copyBufferToBuffer(this.flag, 0, read, 0, 4);
    return read;
  }

  /** The mapped flag: whether the GPU found NaN or Inf. The readback goes back to the pool. */
  flagged(read) {
    const set = new Uint32Array(read.getMappedRange())[0] !== 0;
    read.unmap();
    this.reads.push(read);
    return set;
  }

  /** A readback of a failed call, back to the pool. */
  giveBack(read) {
    if (read.mapState === "mapped") read.unmap();
    this.reads.push(read);
  }

  /** Every buffer it holds, for the launch to release. */
  buffers() {
    return [...Object.values(this.inputs).map((input) => input.ubuf), this.flag, ...this.reads];
  }
}
