// The one GPU execution path: replays launches that Python planned (app/gpu.py builds them).
//
// Python validates a request, plans it, renders and compiles its WGSL once per call signature and hands
// this module a launch spec: the passes (pipeline, buffer names in binding order, uniform words, grid),
// the sizes of x, w, b, y and the scratch buffers. Every later call with that signature runs here in
// JavaScript alone: bind, write the caller's typed arrays straight into the launch's buffers, encode,
// submit, read y straight into a typed array. Calls, benchmarks and tuning all run through `run` and
// `time`, so what is timed is what users call.
//
// State per launch (its buffers, uniform buffers, bind groups, query set, readback buffers) lives until
// the launch is evicted from the executor's LRU or the executor is cleared: nothing is created per call
// except y when the caller keeps it on the GPU ({output: "gpu"}).

import { kernelError } from "./errors.mjs";
import { NonfiniteCheck } from "./finite.mjs";
import { TYPED_ARRAYS } from "./typed-arrays.mjs";
import { MAP_MODE_READ, USAGE } from "./usage.mjs";

export const LAUNCH_CACHE_SIZE = 32;  // launches kept (per executor), least recently used destroyed first
export const PIPELINE_CACHE_SIZE = 64;  // compiled pipelines kept, by template + structural parameters
const SPARE_OUTPUTS = 2;  // disposed output buffers kept per size
const MAX_QUERIES = 4096;  // WebGPU caps a timestamp query set at 4096 queries
const MAX_SPINS = 20000;  // repetitions of one busy-keeping submission (tiny kernels: ~0.2 s of work at most)

const padded = (n) => Math.max(4, Math.ceil(n / 4) * 4);
const now = () => performance.now();

let nextId = 1;
const ids = new WeakMap();  // GPUBuffer -> small integer: bind groups are cached by the buffers they bind
const idOf = (buf) => { let id = ids.get(buf); if (!id) { id = nextId++; ids.set(buf, id); } return id; };

export class Executor {
  constructor(device) {
    this.device = device;
    this.timed = device.features.has("timestamp-query");
    this.pipelines = new Map();
    this.pipelineCacheSize = PIPELINE_CACHE_SIZE;
    this.launches = new Map();
    this.launchCacheSize = LAUNCH_CACHE_SIZE;
    this.spareOutputs = new Map();  // buffer size -> disposed output buffers
    this.ours = new WeakSet();  // buffers this executor created (y buffers it handed out included)
    this.checked = new WeakSet();  // caller buffers already proven to belong to this device
    this.live = 0;  // bytes of buffers this executor holds (launch state); y handed to callers not counted
    this.largest = 0;  // largest buffer created since the counter was last reset (split tests)
    this.executions = 0;  // launches submitted (tests prove refusals happen before GPU work)
    this.weightPreparations = 0;  // weight-side passes run (skipped while the same constant weights return)
    this.lost = null;
    device.lost.then((info) => { this.lost = `${info.reason}: ${info.message}`; });
    this.deferred = null;  // the error of a call nobody waited for (y kept on the GPU), thrown by the next call
  }

  buffer(size, usage, { counted = true, label } = {}) {
    const buf = this.device.createBuffer({ size: padded(size), usage, label });
    this.ours.add(buf);
    if (counted) this.live += buf.size;
    this.largest = Math.max(this.largest, buf.size);
    return buf;
  }

  /** A typed array copied into a new GPU buffer that the caller owns (STORAGE | COPY_SRC | COPY_DST). */
  upload(data) {
    const buf = this.buffer(data.byteLength, USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST, { counted: false, label: "upload" });
    writeTyped(this.device, buf, data);
    return buf;
  }

  /** A buffer for y kept on the GPU: a disposed one of the same size when there is one (allocating GPU
   * memory per call costs more than the call), else a new one. The caller owns it. */
  outputBuffer(size) {
    const spare = this.spareOutputs.get(padded(size))?.pop();
    if (spare) { this.live -= spare.size; return spare; }
    this.device.pushErrorScope("out-of-memory");
    const buf = this.buffer(size, USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST, { counted: false, label: "y" });
    this.device.popErrorScope().then((error) => {
      if (error) this.deferred ??= `allocating y (${size} bytes): WebGPU ${error.constructor?.name ?? "error"}: ${error.message}`;
    }, () => {});
    return buf;
  }

  /** y.dispose(): the caller is done with an output buffer; kept for the next output of its size. */
  recycle(buf) {
    const pool = this.spareOutputs.get(buf.size) ?? [];
    this.spareOutputs.set(buf.size, pool);
    if (pool.includes(buf)) return;
    if (pool.length >= SPARE_OUTPUTS) { buf.destroy(); return; }
    pool.push(buf);
    this.live += buf.size;
  }

  release(buf) {
    this.live -= buf.size;
    buf.destroy();
  }

  /** The compiled pipeline for a cache key (template + structural parameters), compiling `source` once. */
  async pipeline(key, source, label) {
    const hit = this.pipelines.get(key);
    if (hit) { this.pipelines.delete(key); this.pipelines.set(key, hit); return hit; }
    // In an error scope: a shader that does not compile is this call's error, not the device's uncaptured one.
    // (popped before any await, so that concurrent calls' scopes do not interleave with it)
    this.device.pushErrorScope("validation");
    const module = this.device.createShaderModule({ code: source, label });
    const pending = this.device.createComputePipelineAsync({ label, layout: "auto", compute: { module, entryPoint: "main" } });
    const popped = this.device.popErrorScope();
    let pipeline = null, failure = null;
    try {
      pipeline = await pending;
    } catch (err) {
      failure = err;
    }
    const scoped = await popped;
    if (failure || scoped) {
      const info = await module.getCompilationInfo();
      const messages = info.messages.map((m) => `line ${m.lineNum}: ${m.message}`).join("; ");
      throw kernelError("GpuError", `variant ${label}: the shader did not compile or link: ` +
        `${messages || String((failure ?? scoped)?.message ?? failure ?? scoped)}`);
    }
    this.pipelines.set(key, pipeline);
    // GPUComputePipeline has no destroy(): dropping the last reference frees it (launches keep theirs).
    while (this.pipelines.size > this.pipelineCacheSize) this.pipelines.delete(this.pipelines.keys().next().value);
    return pipeline;
  }

  cached(signature) {
    const launch = this.launches.get(signature);
    if (launch) { this.launches.delete(signature); this.launches.set(signature, launch); }
    return launch;
  }

  /** Keeps a launch under `signature` (null: not cached, the caller destroys it after use). */
  launch(spec, signature = null) {
    const launch = new Launch(this, spec);
    if (signature !== null) {
      this.launches.get(signature)?.destroy();
      this.launches.set(signature, launch);
      while (this.launches.size > this.launchCacheSize) {
        const [oldest, evicted] = this.launches.entries().next().value;
        this.launches.delete(oldest);
        evicted.destroy();
      }
    }
    return launch;
  }

  /** Drops every launch and pipeline (their GPU memory goes back to the device). */
  clear() {
    for (const pool of this.spareOutputs.values()) for (const buf of pool) this.release(buf);
    this.spareOutputs.clear();
    for (const launch of this.launches.values()) launch.destroy();
    this.launches.clear();
    this.pipelines.clear();
  }

  /** Forgets prepared weight layouts made from this buffer or typed array (after the caller rewrote it). */
  forget(weights) {
    for (const launch of this.launches.values()) {
      if (launch.weightsFrom === weights) launch.weightsFrom = null;
      for (const [name, data] of Object.entries(launch.constants)) if (data === weights) delete launch.constants[name];
    }
  }

  memory() {
    let cached = 0;
    for (const launch of this.launches.values()) cached += launch.bytes;
    for (const pool of this.spareOutputs.values()) for (const buf of pool) cached += buf.size;
    return { live_bytes: this.live, cached_bytes: cached, launches: this.launches.size, pipelines: this.pipelines.size,
             executions: this.executions,
             launch_cache_size: this.launchCacheSize, pipeline_cache_size: this.pipelineCacheSize };
  }
}

class Launch {
  constructor(executor, spec) {
    this.executor = executor;
    this.spec = spec;
    this.variant = spec.variant;
    this.finiteOnly = spec.finite_only;
    this.bytes = 0;
    this.weightsFrom = null;  // the constant weights (typed array or GPUBuffer) the prepared buffers hold
    this.constants = {};  // input name -> the constant typed array its staging buffer holds
    this.buffers = {};  // launch-owned buffers by name: scratch, prepared, and staging for CPU inputs and y
    this.groups = new Map();  // bind groups by the ids of the buffers they bind
    this.readbacks = [];
    this.stampReads = [];
    const own = (name, size, usage) => { this.buffers[name] = this.hold(size, usage, name); };
    for (const [name, size] of Object.entries(spec.scratch)) own(name, size, USAGE.STORAGE);
    for (const [name, size] of Object.entries(spec.prepared)) own(name, size, USAGE.STORAGE);
    const device = executor.device;
    const pass = (p) => {
      const words = new Int32Array(p.uniforms.length ? p.uniforms : [0]);
      const ubuf = this.hold(Math.ceil(words.byteLength / 16) * 16, USAGE.UNIFORM | USAGE.COPY_DST, "params");
      device.queue.writeBuffer(ubuf, 0, words);
      return { pipeline: p.pipeline, bindings: p.bindings, ubuf, workgroups: p.workgroups,
               layout: p.pipeline.getBindGroupLayout(0) };
    };
    this.prepare = spec.prepare.map(pass);
    this.passes = spec.passes.map(pass);
    this.stampCount = 2 * (this.prepare.length + this.passes.length);
    this.finiteCheck = spec.finite_check ? new NonfiniteCheck(spec, device, this.hold.bind(this)) : null;
    if (executor.timed) {
      this.querySet = device.createQuerySet({ type: "timestamp", count: this.stampCount });
      this.resolved = this.hold(8 * this.stampCount, USAGE.QUERY_RESOLVE | USAGE.COPY_SRC, "timestamps");
    }
  }

  hold(size, usage, label) {
    const buf = this.executor.buffer(size, usage, { label });
    this.bytes += buf.size;
    return buf;
  }

  destroy() {
    for (const buf of Object.values(this.buffers)) this.executor.release(buf);
    for (const p of [...this.prepare, ...this.passes]) this.executor.release(p.ubuf);
    for (const buf of [...this.readbacks, ...this.stampReads, ...(this.finiteCheck?.buffers() ?? [])]) {
      this.executor.release(buf);
    }
    if (this.resolved) this.executor.release(this.resolved);
    this.querySet?.destroy();
    this.buffers = {}; this.readbacks = []; this.stampReads = []; this.finiteCheck = null;
    this.groups.clear();
    for (const p of [...this.prepare, ...this.passes]) p.lastBound = p.lastGroup = null;
    this.bytes = 0;
  }

  /** A launch-owned buffer, created on first use. */
  own(name, size, usage) {
    return this.buffers[name] ??= this.hold(size, usage, name);
  }

  /** The launch-owned buffer behind a binding name: scratch and prepared buffers, staging for CPU inputs, y. */
  slot(name) {
    const spec = this.spec;
    if (name in spec.inputs) return this.own(`in_${name}`, spec.inputs[name], USAGE.STORAGE | USAGE.COPY_DST);
    if (name === "y") return this.own("y", spec.y_bytes, USAGE.STORAGE | USAGE.COPY_SRC);
    return this.buffers[name];
  }

  /** The caller's GPU buffers, checked before any GPU work: big enough, STORAGE usage, and (once per
   * buffer, awaited) bindable on this device. */
  async checkInputs(tensors) {
    const spec = this.spec, exec = this.executor;
    const unchecked = [];
    for (const [name, nbytes] of Object.entries(spec.inputs)) {
      const buf = tensors[name].buffer;
      if (!buf) continue;
      if (buf.size < nbytes) {
        throw kernelError("ConvTransposeError", `input '${name}': its GPUBuffer holds ${buf.size} bytes but shape ` +
          `${JSON.stringify(tensors[name].shape)} (${spec.dtype}) needs ${nbytes}`, name);
      }
      if (buf.usage !== undefined && !(buf.usage & USAGE.STORAGE)) {
        throw kernelError("ConvTransposeError", `input '${name}': its GPUBuffer lacks GPUBufferUsage.STORAGE ` +
          `(usage ${buf.usage}); create it with STORAGE to bind it`, name);
      }
      if (!exec.ours.has(buf) && !exec.checked.has(buf)) unchecked.push([name, buf]);
    }
    if (unchecked.length) await this.checkDevice(unchecked);
  }

  /** The buffers of one call (synchronous, so that a call's error scopes never interleave with another's):
   * caller GPU buffers as they are, CPU data written into launch-owned buffers. Constant CPU data
   * ({data, constant: true}) is written once while the same typed array comes back; prepared weight
   * layouts are kept while the same constant array or GPUBuffer comes back as w. */
  bind(tensors, output, profile) {
    const spec = this.spec, exec = this.executor;
    const bound = { ...this.buffers };
    const w = tensors.w;
    const weights = w.buffer ?? (w.constant ? w.data : null);
    const prepare = this.prepare.length > 0 && (weights === null || this.weightsFrom !== weights);
    for (const name of Object.keys(spec.inputs)) {
      const t = tensors[name];
      if (t.buffer) {
        bound[name] = t.buffer;
        continue;
      }
      bound[name] = this.slot(name);
      if (t.constant && this.constants[name] === t.data) continue;  // already on the GPU
      writeTyped(exec.device, bound[name], t.data);
      this.constants[name] = t.constant ? t.data : null;
    }
    if (profile) profile.upload = now();
    const y = output === "gpu" ? exec.outputBuffer(spec.y_bytes) : this.slot("y");
    bound.y = y;
    return { bound, prepare, weights, y };
  }

  /** A caller's buffer from another GPUDevice is refused before any submission: binding it is a validation
   * error, caught in an error scope around a throwaway bind group of the first pass that binds it. */
  async checkDevice(unchecked) {
    const device = this.executor.device;
    for (const [name, buf] of unchecked) {
      const pass = [...this.prepare, ...this.passes].find((p) => p.bindings.includes(name));
      device.pushErrorScope("validation");
      let thrown = null;
      try {
        const entries = pass.bindings.map((n, j) => ({ binding: j, resource: { buffer: n === name ? buf : this.slot(n) } }));
        entries.push({ binding: entries.length, resource: { buffer: pass.ubuf } });
        device.createBindGroup({ layout: pass.layout, entries });
      } catch (err) {
        thrown = err;
      }
      const error = (await device.popErrorScope()) ?? thrown;
      if (error) {
        throw kernelError("ConvTransposeError", `input '${name}': its GPUBuffer cannot be bound on this kernel's ` +
          `GPUDevice (is it from another device, or destroyed?): ${String(error.message).split("\n")[0]}`, name);
      }
      this.executor.checked.add(buf);
    }
  }

  group(p, bound) {
    // the hot path binds what it bound last time: compare before building a key
    const last = p.lastBound;
    if (last && p.bindings.every((n, j) => last[j] === bound[n])) return p.lastGroup;
    const key = p.bindings.map((n) => idOf(bound[n])).join(",");
    let g = this.groups.get(key);
    if (!g) {
      const entries = p.bindings.map((n, j) => ({ binding: j, resource: { buffer: bound[n] } }));
      entries.push({ binding: entries.length, resource: { buffer: p.ubuf } });
      g = this.executor.device.createBindGroup({ layout: p.layout, entries });
      if (this.groups.size >= 8) this.groups.delete(this.groups.keys().next().value);
      this.groups.set(key, g);
    }
    p.lastBound = p.bindings.map((n) => bound[n]);
    p.lastGroup = g;
    return g;
  }

  /** The passes into `encoder`: each in a compute pass of its own when timestamped, else all dispatches in
   * one pass (WebGPU orders dispatches within a pass, storage writes visible to the next; fewer calls on
   * the host path). */
  encode(encoder, passes, bound, stamps, first = 0) {
    if (!stamps) {
      const pass = encoder.beginComputePass({ label: this.variant });
      for (const p of passes) {
        pass.setPipeline(p.pipeline);
        pass.setBindGroup(0, this.group(p, bound));
        pass.dispatchWorkgroups(...p.workgroups);
      }
      pass.end();
      return;
    }
    passes.forEach((p, i) => {
      const at = 2 * (first + i);
      const pass = encoder.beginComputePass({ label: `${this.variant}#${i}`,
        timestampWrites: { querySet: this.querySet, beginningOfPassWriteIndex: at, endOfPassWriteIndex: at + 1 } });
      pass.setPipeline(p.pipeline);
      pass.setBindGroup(0, this.group(p, bound));
      pass.dispatchWorkgroups(...p.workgroups);
      pass.end();
    });
  }

  /** One call. tensors: {x, w, b?} each {data: typed array, constant?} or {buffer: GPUBuffer}.
   * output "cpu": y read back into a typed array; "gpu": y = {buffer, shape, dtype}, owned by the caller.
   * timing: GPU ms from timestamp-query (free with a CPU output: the stamps ride along with y's readback).
   * profile: an object that receives performance.now() marks of the stages. */
  async run(tensors, { output = "cpu", timing = false, profile = null } = {}) {
    const exec = this.executor, device = exec.device, spec = this.spec;
    if (exec.lost) throw kernelError("GpuError", `the WebGPU device was lost (${exec.lost})`);
    if (exec.deferred) {
      const message = exec.deferred;
      exec.deferred = null;
      throw kernelError("GpuError", `an earlier call that kept y on the GPU failed: ${message}`);
    }
    // A call that waits anyway (y or timestamps to read, or a launch's first run, which creates its buffers)
    // runs in validation and out-of-memory error scopes and waits for them too. A resident call that does
    // not wait scopes its submission for validation only (it allocates nothing, but for a new y, which is
    // scoped on its own) and leaves the verdict to the next call, which throws it.
    await this.checkInputs(tensors);
    // From here to the submission nothing awaits.
    const stamps = exec.timed && (timing || output === "cpu");
    const scoped = !this.submitted || output === "cpu" || stamps;
    if (scoped) { device.pushErrorScope("out-of-memory"); device.pushErrorScope("validation"); }
    const { bound, prepare, weights, y } = this.bind(tensors, output, profile);
    exec.executions += 1;
    const passes = prepare ? [...this.prepare, ...this.passes] : this.passes;
    const stampBytes = stamps ? 8 * this.stampCount : 0;
    const encoder = device.createCommandEncoder();
    // Data uploaded from the CPU, on a variant exact only for finite data, with y read back anyway: the
    // GPU flags NaN/Inf in it during the same submission (finite.mjs: the caller reruns on an exact variant).
    const check = this.finiteCheck;
    const checked = check ? check.checked(tensors, output) : [];
    if (checked.length) check.encode(encoder, checked, bound);
    this.encode(encoder, passes, bound, stamps, prepare ? 0 : this.prepare.length);
    // Readback buffers come from per-launch pools: y's, and the timestamps' (mapped in the same wait).
    let readback = null, stampRead = null;
    if (output === "cpu") {
      readback = this.readbacks.pop() ?? this.hold(spec.y_bytes, USAGE.MAP_READ | USAGE.COPY_DST, "readback");
      encoder.copyBufferToBuffer(y, 0, readback, 0, padded(spec.y_bytes));
    }
    const flagRead = checked.length ? check.copyFlag(encoder, this.hold.bind(this)) : null;
    if (stamps) {
      stampRead = this.stampReads.pop() ?? this.hold(stampBytes, USAGE.MAP_READ | USAGE.COPY_DST, "timestamps read");
      encoder.resolveQuerySet(this.querySet, 0, this.stampCount, this.resolved, 0);
      encoder.copyBufferToBuffer(this.resolved, 0, stampRead, 0, stampBytes);
    }
    let verdict;
    if (scoped) {
      device.queue.submit([encoder.finish()]);
      verdict = Promise.all([device.popErrorScope(), device.popErrorScope()]);  // popped at once: calls interleave
    } else {
      device.pushErrorScope("validation");
      device.queue.submit([encoder.finish()]);
      device.popErrorScope().then((error) => {
        if (error) exec.deferred ??= `variant ${this.variant}: WebGPU ${error.constructor?.name ?? "error"}: ${error.message}`;
      }, () => {});
    }
    if (profile) profile.submit = now();
    if (prepare) {
      this.weightsFrom = weights;
      exec.weightPreparations += 1;
    }
    const meta = { variant: this.variant, reason: spec.reason, gpu_ms: null, y_shape: spec.y_shape, pieces: 1 };
    let data = null;
    if (scoped) {
      const mapped = (buf) => buf?.mapAsync(MAP_MODE_READ).then(() => null, (err) => err ?? new Error("mapAsync failed"));
      // the pops are taken at once: another call's scopes may be pushed while this one waits
      const [[validation, oom], yFailed, stampsFailed, flagFailed] = await Promise.all(
        [verdict, mapped(readback), mapped(stampRead), mapped(flagRead)]);
      if (profile) profile.mapped = now();
      const failed = validation ?? oom ?? yFailed ?? stampsFailed ?? flagFailed;
      if (failed) {
        this.weightsFrom = null;
        for (const [buf, pool] of [[readback, this.readbacks], [stampRead, this.stampReads]]) {
          if (!buf) continue;
          if (buf.mapState === "mapped") buf.unmap();
          pool.push(buf);
        }
        if (flagRead) check.giveBack(flagRead);
        if (output === "gpu") y.destroy();
        if (validation ?? oom) {
          throw kernelError("GpuError", `variant ${this.variant}: WebGPU ${failed.constructor?.name ?? "error"}: ${failed.message}`);
        }
        const why = exec.lost ? `the WebGPU device was lost during the call (${exec.lost})` : String(failed?.message ?? failed);
        throw kernelError("GpuError", `variant ${this.variant}: reading the output back failed: ${why}`);
      }
      this.submitted = true;
      if (readback) {
        data = new TYPED_ARRAYS[spec.dtype](readback.getMappedRange(0, padded(spec.y_bytes)).slice(0, spec.y_bytes));
        readback.unmap();
        this.readbacks.push(readback);
      }
      if (flagRead) meta.nonfinite = check.flagged(flagRead);
      if (stampRead) {
        // passes skipped this call (weight-side ones) were never written: they resolve to 0
        meta.gpu_ms = gpuMs(new BigUint64Array(stampRead.getMappedRange()), this.stampCount / 2);
        stampRead.unmap();
        this.stampReads.push(stampRead);
      }
    }
    if (profile) profile.done = now();
    const result = output === "gpu"
      ? { buffer: y, shape: spec.y_shape, dtype: spec.dtype, dispose: () => exec.recycle(y) }
      : { data, shape: spec.y_shape, dtype: spec.dtype };
    return { y: result, meta };
  }

  /** y as the last run left it in the launch's own buffer: benchmarks check what they timed. */
  async output() {
    const spec = this.spec, device = this.executor.device;
    const readback = this.readbacks.pop() ?? this.hold(spec.y_bytes, USAGE.MAP_READ | USAGE.COPY_DST, "readback");
    const encoder = device.createCommandEncoder();
    encoder.copyBufferToBuffer(this.slot("y"), 0, readback, 0, padded(spec.y_bytes));
    device.queue.submit([encoder.finish()]);
    try {
      await readback.mapAsync(MAP_MODE_READ);
      const data = new TYPED_ARRAYS[spec.dtype](readback.getMappedRange(0, padded(spec.y_bytes)).slice(0, spec.y_bytes));
      readback.unmap();
      return data;
    } finally {
      this.readbacks.push(readback);
    }
  }

  /** Benchmarks: the main passes submitted `repeats` times back to back in one command buffer (a real GPU
   * then stays at its working clocks, as inside a model), inputs bound as given (GPU buffers or CPU data
   * written once), y left on the GPU. Per run: wall ms to onSubmittedWorkDone and GPU ms from timestamps,
   * both per repetition. Weight-side passes run once, before. */
  async time(tensors, { warmup = 1, runs = 5, repeats = 1, busyMs = 0 } = {}) {
    const exec = this.executor, device = exec.device;
    if (exec.lost) throw kernelError("GpuError", `the WebGPU device was lost (${exec.lost})`);
    await this.checkInputs(tensors);
    const { bound, prepare, weights } = this.bind(tensors, "cpu", null);
    device.pushErrorScope("validation");
    if (prepare) {
      const encoder = device.createCommandEncoder();
      this.encode(encoder, this.prepare, bound, false);
      device.queue.submit([encoder.finish()]);
      this.weightsFrom = weights;
    }
    // A timestamp query set holds at most MAX_QUERIES queries: fewer repetitions rather than a refusal.
    repeats = Math.max(1, Math.min(repeats, Math.floor(MAX_QUERIES / (2 * this.passes.length))));
    const count = 2 * this.passes.length * repeats;
    const querySet = exec.timed ? device.createQuerySet({ type: "timestamp", count }) : null;
    const resolved = querySet ? device.createBuffer({ size: 8 * count, usage: USAGE.QUERY_RESOLVE | USAGE.COPY_SRC }) : null;
    const read = querySet ? device.createBuffer({ size: 8 * count, usage: USAGE.MAP_READ | USAGE.COPY_DST }) : null;
    const samples = [];
    try {
      let perRepetition = 0;  // ms, from the previous run
      for (let i = 0; i < warmup + runs; i++) {
        // A GPU left idle between runs drops its clocks (an H200 sat at 345-705 MHz of 1980 through a sweep):
        // with busyMs, the same passes run untimed for about that long right before the timed ones, in the
        // same queue with no gap, as a model's layers keep it busy (the cuDNN timings get the same).
        if (busyMs > 0 && perRepetition > 0) this.spin(Math.min(MAX_SPINS, Math.ceil(busyMs / perRepetition)), bound);
        const start = now();
        const encoder = device.createCommandEncoder();
        for (let r = 0; r < repeats; r++) {
          this.passes.forEach((p, j) => {
            const at = 2 * (r * this.passes.length + j);
            const pass = encoder.beginComputePass(querySet ? { timestampWrites: { querySet, beginningOfPassWriteIndex: at, endOfPassWriteIndex: at + 1 } } : {});
            pass.setPipeline(p.pipeline);
            pass.setBindGroup(0, this.group(p, bound));
            pass.dispatchWorkgroups(...p.workgroups);
            pass.end();
          });
        }
        if (querySet) {
          encoder.resolveQuerySet(querySet, 0, count, resolved, 0);
          encoder.copyBufferToBuffer(resolved, 0, read, 0, 8 * count);
        }
        device.queue.submit([encoder.finish()]);
        await device.queue.onSubmittedWorkDone();
        const wall = (now() - start) / repeats;
        let gpu = null;
        if (querySet) {
          await read.mapAsync(MAP_MODE_READ);
          gpu = gpuMs(new BigUint64Array(read.getMappedRange()), this.passes.length * repeats) / repeats;
          read.unmap();
        }
        if (i >= warmup) samples.push([wall, gpu]);
        perRepetition = gpu ?? wall;
      }
    } finally {
      const error = await device.popErrorScope();
      querySet?.destroy(); resolved?.destroy(); read?.destroy();
      if (error) throw kernelError("GpuError", `variant ${this.variant}: WebGPU ${error.constructor?.name ?? "error"}: ${error.message}`);
    }
    return samples;
  }

  /** Submits `times` untimed repetitions of the passes in one compute pass (keeps the GPU busy). */
  spin(times, bound) {
    const encoder = this.executor.device.createCommandEncoder();
    this.encode(encoder, Array(times).fill(this.passes).flat(), bound, false);
    this.executor.device.queue.submit([encoder.finish()]);
  }
}

function gpuMs(ticks, passes) {
  let ns = 0n;
  for (let i = 0; i < 2 * passes; i += 2) ns += ticks[i + 1] - ticks[i];
  return Number(ns) / 1e6;
}

/** queue.writeBuffer straight from the caller's typed array (a byte length not a multiple of 4, as an odd
 * count of float16 values has, goes through a padded copy: writeBuffer needs whole 4-byte words). */
function writeTyped(device, buffer, data) {
  if (data.byteLength % 4 === 0) {
    device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
  } else {
    const copy = new Uint8Array(padded(data.byteLength));
    copy.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    device.queue.writeBuffer(buffer, 0, copy);
  }
}
