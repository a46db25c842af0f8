// The finite-data policy, JavaScript side (Python's `app.finite` states it there). Some variants multiply the
// padding zeros they skip in x or w, so a NaN or Inf in x or w spreads where IEEE arithmetic would not:
// their launches are `finiteOnly`, and a call with non-finite data runs on the exact launch Python plans
// for the same signature with finite=false (the key with EXACT appended). How a call finds out:
// - GPU tensors say so themselves ({buffer, finite: false}); the default is finite;
// - constant CPU arrays ({data, constant: true}): scanned here once per array (finiteOf, until
//   forgetFinite), whatever the output: they are not scanned again on the GPU;
// - other CPU data with y read back: the GPU flags NaN/Inf in it during the call's own submission
//   (NonfiniteCheck, the launch spec's finite_check pipeline), and the call reruns on the exact launch;
// - other CPU data with y left on the GPU: scanned here first.

import { USAGE } from "./usage.mjs";

export const EXACT = "!nonfinite";

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
const gpuTensorFinite = (t) => t.finite !== false;

// constant typed arrays -> whether every value is finite: scanned once per array, as the weight cache
// (weight-cache.mjs) uploads it once; both forget it together (kernel.forget)
const finiteOf = new WeakMap();
const SCANNED = ["x", "w"];  // the inputs whose NaN or Inf a finiteOnly variant does not carry exactly

function constantFinite(t) {
  let finite = finiteOf.get(t.data);
  if (finite === undefined) finiteOf.set(t.data, finite = allFinite(t.data, t.dtype));
  return finite;
}

/** A constant array changed in place: its next call scans it again. */
export function forgetFinite(data) {
  finiteOf.delete(data);
}

/** Known before the call to hold NaN or Inf: a GPU tensor says so, a constant array scans non-finite (once),
 * or y stays on the GPU (no readback to carry the GPU's flag) and the other CPU data scans non-finite. */
function knownNonfinite(tensors, output) {
  if (tensors.b?.finite === false) return true;
  for (const name of SCANNED) {
    const t = tensors[name];
    if (t.buffer ? !gpuTensorFinite(t)
      : t.constant ? !constantFinite(t)
        : output === "gpu" && !allFinite(t.data, t.dtype)) return true;
  }
  return false;
}

/**
 * One call under the policy. call: the call's {tensors, output, ...} (handed back to the policy's functions
 * as it is); policy, made once per kernel: cached(key) -> the launch kept for a signature key, or undefined;
 * launchFor(key, finite, call) -> the launch for a key (planned by Python on its first use, finite: whether
 * it may assume finite data) or null when it has none; run(launch, call) -> the result; without(key, call)
 * -> the result for a key that has no launch; planned(call) marks the launch chosen.
 */
export async function runFinite(key, call, policy) {
  let launch = policy.cached(key) ?? await policy.launchFor(key, true, call);
  if (launch?.finiteOnly && knownNonfinite(call.tensors, call.output)) {
    key += EXACT;
    launch = policy.cached(key) ?? await policy.launchFor(key, false, call);
  }
  policy.planned(call);
  if (!launch) return policy.without(key, call);
  const out = await policy.run(launch, call);
  if (!out.meta.nonfinite) {
    if ("nonfinite" in out.meta) delete out.meta.nonfinite;
    return out;
  }
  const exactKey = key + EXACT;
  const rerun = policy.cached(exactKey) ?? await policy.launchFor(exactKey, false, call);
  return rerun ? policy.run(rerun, call) : policy.without(exactKey, call);
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
    this.names = Object.keys(this.inputs);
    this.flag = hold(4, USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST, "nonfinite flag");
    this.layout = this.pipeline.getBindGroupLayout(0);
    this.reads = [];
  }

  /** The inputs a call with y read back checks: those written from the CPU on this call (not constant
   * arrays: knownNonfinite scans those once); null when none. */
  checked(tensors) {
    let names = null;
    for (const name of this.names) {
      const t = tensors[name];
      if (t?.data && !t.constant) (names ??= []).push(name);
    }
    return names;
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
