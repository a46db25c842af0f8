// The one GPU execution path: replays launches that Python planned (app/gpu.py compile_launch).
//
// A launch (class Launch) is one plan made ready to run on one device: its compiled pipelines, bindings,
// uniforms and grids, and the buffers it creates on first use; the executor keeps one per call signature.
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
// except y when the caller keeps it on the GPU ({output: "gpu"}). Constant weights and weight GPUBuffers
// keep their GPU copy and prepared layouts in a WeightCache (weight-cache.mjs) of the calling kernel,
// across launches.

import { kernelError } from "./errors.mjs";
import { NonfiniteCheck } from "./finite.mjs";
import { TYPED_ARRAYS } from "./typed-arrays.mjs";
import { MAP_MODE_READ, USAGE } from "./usage.mjs";
import { WeightCache } from "./weight-cache.mjs";

export const LAUNCH_CACHE_SIZE = 32;  // launches kept (per executor), least recently used destroyed first
export const PIPELINE_CACHE_SIZE = 64;  // compiled pipelines kept, by template + structural parameters
// Pipelines kept once a test has recorded (record): every one a page's test files compile, so that a later
// file's recording finds what an earlier one compiled there (a few hundred SwiftShader pipelines).
const RECORDING_CACHE_SIZE = 1024;
const SPARE_OUTPUTS = 2;  // disposed output buffers kept per size
const MAX_QUERIES = 4096;  // WebGPU caps a timestamp query set at 4096 queries
const MAX_SPINS = 20000;  // repetitions of one busy-keeping submission (tiny kernels: ~0.2 s of work at most)
const BIND_GROUPS = 64;  // bind groups kept per pass (one per set of buffers: layers sharing a launch)

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
    // the most recently used launch and its signature: a repeat of the last call's signature finds it by
    // comparing strings, without the Map's hashing and the move to the LRU's end (it is there already)
    this.recent = null;
    this.recentSignature = null;
    this.spareOutputs = new Map();  // buffer size -> disposed output buffers
    // GPUBuffer -> its size, for buffers that a call may bind as an input without asking WebGPU again: ours
    // with STORAGE usage (y buffers handed out included) and callers' proven STORAGE and bindable on this
    // device. Size and usage never change; reading them is a call into the WebGPU implementation each time
    // (Dawn's Node binding: a native getter), a repeat call's costliest checks.
    this.bindable = new WeakMap();
    this.queue = device.queue;
    this.live = 0;  // bytes of buffers this executor holds (launch state); y handed to callers not counted
    this.largest = 0;  // largest buffer created since the counter was last reset (split tests)
    this.executions = 0;  // launches submitted (tests prove refusals happen before GPU work)
    this.weightPreparations = 0;  // weight-side passes run (skipped while cached weights come back)
    this.bytesWritten = 0;  // bytes of caller data calls wrote to the GPU (x, w, b)
    this.weightBytesWritten = 0;  // ... of them, w's and b's
    this.caches = new Map();  // owner (a JS kernel's serial; null: calls that name no cache) -> WeightCache
    this.pipelineKeys = new WeakMap();  // pipeline -> its cache key (part of a launch's prepare key)
    this.compileTimes = new WeakMap();  // pipeline -> the ms its compile took (module and pipeline, to resolved)
    this.compiling = new Set();  // pipelines compiling now, on Dawn's threads (idle() waits for them)
    this.recordedKeys = null;  // while recording (record): the cache key of every pipeline a call used
    this.lost = null;
    device.lost.then((info) => { this.lost = `${info.reason}: ${info.message}`; });
    this.deferred = null;  // the error of a call nobody waited for (y kept on the GPU), thrown by the next call
    this.verified = new WeakSet();  // bind groups submitted by a call whose validation scope came back clean
  }

  buffer(size, usage, { counted = true, label } = {}) {
    const bytes = padded(size);
    const buf = this.device.createBuffer({ size: bytes, usage, label });
    if (usage & USAGE.STORAGE) this.bindable.set(buf, bytes);
    if (counted) this.live += bytes;
    this.largest = Math.max(this.largest, bytes);
    return buf;
  }

  /** A call's CPU data for input `name` into a GPU buffer, counted. */
  write(buffer, data, name) {
    writeTyped(this.queue, buffer, data);
    this.bytesWritten += data.byteLength;
    if (name !== "x") this.weightBytesWritten += data.byteLength;
  }

  /** The verdict of a resident call's validation scope: an error is thrown by the next call; a clean one
   * proves the call's new bind groups (`fresh`). */
  deferVerdict(variant, fresh) {
    return (error) => {
      if (error) this.deferred ??= `variant ${variant}: WebGPU ${error.constructor?.name ?? "error"}: ${error.message}`;
      else for (const g of fresh) this.verified.add(g);
    };
  }

  /** A typed array copied into a new GPU buffer that the caller owns (STORAGE | COPY_SRC | COPY_DST). */
  upload(data) {
    const buf = this.buffer(data.byteLength, USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST, { counted: false, label: "upload" });
    writeTyped(this.queue, buf, data);
    return buf;
  }

  /** A buffer for y kept on the GPU: a disposed one of the same size when there is one (allocating GPU
   * memory per call costs more than the call), else a new one. The caller owns it. */
  outputBuffer(size) {
    const bytes = padded(size);
    const spare = this.spareOutputs.get(bytes)?.pop();
    if (spare) { this.live -= bytes; return spare; }
    return this.allocate(size, USAGE.STORAGE | USAGE.COPY_SRC | USAGE.COPY_DST, { counted: false, label: "y" });
  }

  /** A buffer made in an out-of-memory error scope of its own, for calls that do not wait: a failure is
   * thrown by the next call. */
  allocate(size, usage, options) {
    this.device.pushErrorScope("out-of-memory");
    const buf = this.buffer(size, usage, options);
    this.device.popErrorScope().then((error) => {
      if (error) this.deferred ??= `allocating ${options.label} (${size} bytes): WebGPU ${error.constructor?.name ?? "error"}: ${error.message}`;
    }, ignore);
    return buf;
  }

  /** y.dispose(): the caller is done with an output buffer of `bytes` (its size); kept for the next output of its size. */
  recycle(buf, bytes) {
    let pool = this.spareOutputs.get(bytes);
    if (!pool) this.spareOutputs.set(bytes, pool = []);
    if (pool.includes(buf)) return;
    if (pool.length >= SPARE_OUTPUTS) { buf.destroy(); return; }
    pool.push(buf);
    this.live += bytes;
  }

  release(buf) {
    this.live -= buf.size;
    buf.destroy();
  }

  /** The compiled pipeline for a cache key (template + structural parameters), compiling `source` once. */
  async pipeline(key, source, label) {
    // Pyodide builds a Python str's JS string a character at a time: in V8 a rope of 32 bytes per character,
    // kept whole by whatever holds the source (RecordingExecutor's, 0.6 MB per 19 KB shader); reading a
    // character flattens it in place, to a byte per character
    source.charCodeAt(0);
    const hit = this.pipelines.get(key);
    if (hit) { this.pipelines.delete(key); this.pipelines.set(key, hit); this.recordedKeys?.add(key); return hit; }
    // In an error scope: a shader that does not compile is this call's error, not the device's uncaptured one.
    // (popped before any await, so that concurrent calls' scopes do not interleave with it)
    const started = performance.now();
    this.device.pushErrorScope("validation");
    const module = this.device.createShaderModule({ code: source, label });
    const pending = this.device.createComputePipelineAsync({ label, layout: "auto", compute: { module, entryPoint: "main" } });
    const popped = this.device.popErrorScope();
    this.compiling.add(pending);
    let pipeline = null, failure = null;
    try {
      pipeline = await pending;
    } catch (err) {
      failure = err;
    } finally {
      this.compiling.delete(pending);
    }
    const scoped = await popped;
    if (failure || scoped) {
      const info = await module.getCompilationInfo();
      const messages = info.messages.map((m) => `line ${m.lineNum}: ${m.message}`).join("; ");
      throw kernelError("GpuError", `variant ${label}: the shader did not compile or link: ` +
        `${messages || String((failure ?? scoped)?.message ?? failure ?? scoped)}`);
    }
    this.compileTimes.set(pipeline, performance.now() - started);
    this.pipelines.set(key, pipeline);
    this.pipelineKeys.set(pipeline, key);
    this.recordedKeys?.add(key);
    // GPUComputePipeline has no destroy(): dropping the last reference frees it (launches keep theirs).
    while (this.pipelines.size > this.pipelineCacheSize) this.pipelines.delete(this.pipelines.keys().next().value);
    return pipeline;
  }

  /** What a launch spec's pipelines took to compile here, together (ms; a pipeline compiled elsewhere counts 0). */
  compileMs(spec) {
    const pipelines = [...spec.prepare, ...spec.passes].map((p) => p.pipeline).concat(spec.finite_check ?? []);
    return pipelines.reduce((sum, p) => sum + (this.compileTimes.get(p) ?? 0), 0);
  }

  cached(signature) {
    if (signature === this.recentSignature) return this.recent;
    const launch = this.launches.get(signature);
    if (launch) {
      this.launches.delete(signature);
      this.launches.set(signature, launch);
      this.recent = launch;
      this.recentSignature = signature;
    }
    return launch;
  }

  /** A new launch from Python's launch spec, kept under `signature` (null: not cached, the caller destroys
   * it after use). */
  buildLaunch(spec, signature = null) {
    const launch = new Launch(this, spec);
    if (signature !== null) {
      this.launches.get(signature)?.destroy();
      this.launches.delete(signature);  // a replaced launch goes to the LRU's end too (Map.set keeps the place)
      this.launches.set(signature, launch);
      this.recent = launch;
      this.recentSignature = signature;
      while (this.launches.size > this.launchCacheSize) {
        const [oldest, evicted] = this.launches.entries().next().value;
        this.launches.delete(oldest);
        if (evicted === this.recent) this.recent = this.recentSignature = null;
        evicted.destroy();
      }
    }
    return launch;
  }

  /** Drops the launch of a signature (destroyed once no call is running it). */
  evict(signature) {
    const launch = this.launches.get(signature);
    if (!launch) return;
    this.launches.delete(signature);
    if (launch === this.recent) this.recent = this.recentSignature = null;
    launch.retire();
  }

  /** The launch of `from` serves `to` from now on; the one `to` had is dropped (destroyed once no call runs it). */
  rekey(from, to) {
    const launch = this.launches.get(from);
    if (!launch) return;
    this.launches.delete(from);
    this.evict(to);
    this.launches.set(to, launch);
    if (launch === this.recent) this.recent = this.recentSignature = null;
  }

  /** The weight cache of `owner` (a kernel; null: the one for calls that name none, Python's), made with
   * `limit` bytes on first use. */
  weightCache(owner = null, limit = undefined) {
    let cache = this.caches.get(owner);
    if (!cache) {
      cache = new WeightCache(this, limit);
      this.caches.set(owner, cache);
    }
    return cache;
  }

  /** Drops every launch, pipeline and cached weight (their GPU memory goes back to the device). */
  clear() {
    this.dropLaunches();
    this.pipelines.clear();
  }

  /** Drops every launch, spare output and cached weight; compiled pipelines stay. */
  dropLaunches() {
    for (const pool of this.spareOutputs.values()) for (const buf of pool) this.release(buf);
    this.spareOutputs.clear();
    for (const launch of this.launches.values()) launch.destroy();
    this.launches.clear();
    this.recent = this.recentSignature = null;
    for (const cache of this.caches.values()) cache.clear();
  }

  /** Records, until `recorded`, the key of every pipeline a later call uses: the tests read which shaders
   * their run had compiled on this device, by one of its calls or by an earlier test's in the same page.
   * Launches are dropped, so that every call fetches its pipelines here; compiled pipelines stay, and from
   * now on the cache keeps RECORDING_CACHE_SIZE of them. */
  record() {
    this.dropLaunches();
    this.pipelineCacheSize = Math.max(this.pipelineCacheSize, RECORDING_CACHE_SIZE);
    this.recordedKeys = new Set();
  }

  /** The keys recorded since `record`, which stops recording. */
  recorded() {
    const keys = [...(this.recordedKeys ?? [])];
    this.recordedKeys = null;
    return keys;
  }

  /** Drops what every weight cache keeps for this buffer or typed array (after the caller rewrote it). */
  forget(weights) {
    for (const cache of this.caches.values()) cache.forget(weights);
  }

  /** What this executor holds (every kernel's launches and weight caches), and the counters; the weight
   * cache's figures are those of `owner`'s. */
  memory(owner = null) {
    let cached = 0;
    for (const launch of this.launches.values()) cached += launch.bytes;
    for (const pool of this.spareOutputs.values()) for (const buf of pool) cached += buf.size;
    for (const cache of this.caches.values()) cached += cache.bytes;
    return { live_bytes: this.live, cached_bytes: cached, launches: this.launches.size, pipelines: this.pipelines.size,
             executions: this.executions, weight_preparations: this.weightPreparations,
             bytes_written: this.bytesWritten, weight_bytes_written: this.weightBytesWritten,
             launch_cache_size: this.launchCacheSize, pipeline_cache_size: this.pipelineCacheSize,
             compiling: this.compiling.size,
             ...this.weightCache(owner).stats() };
  }
}

class Launch {
  constructor(executor, spec) {
    this.executor = executor;
    this.spec = spec;
    this.variant = spec.variant;
    this.finiteOnly = spec.finite_only;
    this.bytes = 0;
    this.inputs = Object.entries(spec.inputs);  // [name, bytes] of the inputs the passes bind
    this.inputNames = this.inputs.map(([name]) => name);
    this.inputBytes = this.inputs.map(([, bytes]) => bytes);
    this.buffers = {};  // launch-owned buffers by name: scratch, prepared (weights not cached), staging, y
    this.readbacks = [];
    this.stampReads = [];
    this.running = 0;  // calls under way (run): a retired launch is destroyed when the last ends
    this.retired = false;
    for (const [name, size] of Object.entries(spec.scratch)) this.own(name, size, USAGE.STORAGE);
    const device = executor.device;
    const pass = (p) => {
      const words = new Int32Array(p.uniforms.length ? p.uniforms : [0]);
      const ubuf = this.hold(Math.ceil(words.byteLength / 16) * 16, USAGE.UNIFORM | USAGE.COPY_DST, "params");
      device.queue.writeBuffer(ubuf, 0, words);
      const [x, y, z] = p.workgroups;
      return { pipeline: p.pipeline, bindings: p.bindings, ubuf, x, y, z, layout: p.pipeline.getBindGroupLayout(0),
               groups: new Map(), lastBound: null, lastGroup: null };  // bind groups by the ids of their buffers
    };
    this.prepare = spec.prepare.map(pass);
    this.passes = spec.passes.map(pass);
    this.all = [...this.prepare, ...this.passes];
    this.stampCount = 2 * this.all.length;
    // The weight passes' outputs depend on w and on this key alone (their pipelines, uniforms, grids and
    // buffer sizes): a weight cache keeps the layouts of one w per key, whichever launch prepared them.
    const reads = new Set(this.prepare.flatMap((p) => p.bindings).filter((n) => !(n in spec.prepared)));
    const pipelineKeys = this.prepare.map((p) => executor.pipelineKeys.get(p.pipeline));
    this.prepareKey = this.prepare.length && reads.size === 1 && reads.has("w") && !pipelineKeys.includes(undefined)
      ? JSON.stringify([pipelineKeys, spec.prepare.map((p) => [p.bindings, p.uniforms, p.workgroups]), spec.prepared])
      : null;
    // Whether w itself is bound on every call (else only when its layouts are prepared: a constant w is
    // then not kept in the cache, its prepared layouts are)
    this.bindsW = !this.prepare.length || this.prepareKey === null || this.passes.some((p) => p.bindings.includes("w"));
    this.bound = { ...this.buffers };  // the buffers of the call being bound (reused: bind to submit is synchronous)
    this.boundLayout = null;  // the cached layout the call being bound prepares, if any
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
    for (const p of this.all) this.executor.release(p.ubuf);
    for (const buf of [...this.readbacks, ...this.stampReads, ...(this.finiteCheck?.buffers() ?? [])]) {
      this.executor.release(buf);
    }
    if (this.resolved) this.executor.release(this.resolved);
    this.querySet?.destroy();
    this.buffers = {}; this.bound = {}; this.readbacks = []; this.stampReads = []; this.finiteCheck = null;
    for (const p of this.all) { p.groups.clear(); p.lastBound = p.lastGroup = null; }
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
    if (name in spec.prepared) return this.own(name, spec.prepared[name], USAGE.STORAGE);
    return this.buffers[name];
  }

  /** The caller's GPU buffers, checked before any GPU work: big enough, STORAGE usage, and (once per
   * buffer, awaited) bindable on this device. A promise only when a buffer is new to this executor. */
  checkInputs(tensors) {
    const exec = this.executor;
    let unchecked = null;
    for (let i = 0; i < this.inputNames.length; i++) {
      const name = this.inputNames[i], nbytes = this.inputBytes[i];
      const buf = tensors[name].buffer;
      if (!buf) continue;
      const known = exec.bindable.get(buf);
      if (known >= nbytes) continue;
      if (buf.size < nbytes) {
        throw kernelError("ConvTransposeError", `input '${name}': its GPUBuffer holds ${buf.size} bytes but shape ` +
          `${JSON.stringify(tensors[name].shape)} (${this.spec.dtype}) needs ${nbytes}`, name);
      }
      if (buf.usage !== undefined && !(buf.usage & USAGE.STORAGE)) {
        throw kernelError("ConvTransposeError", `input '${name}': its GPUBuffer lacks GPUBufferUsage.STORAGE ` +
          `(usage ${buf.usage}); create it with STORAGE to bind it`, name);
      }
      if (known === undefined) (unchecked ??= []).push([name, buf]);
    }
    return unchecked && this.checkDevice(unchecked);
  }

  /** The buffers of one call into this.bound (synchronous, so that a call's error scopes never interleave
   * with another's); whether the weight passes run. Caller GPU buffers are bound as they are; constant CPU
   * data ({data, constant: true}) as its copy in the weight cache (written on its first use); other CPU data
   * is written into launch-owned buffers. Prepared weight layouts come from the cache for a constant w or a
   * GPUBuffer w (the weight passes run when they are new: this.boundLayout), else are made every call. */
  bind(tensors, output, profile, cache) {
    const exec = this.executor, bound = this.bound, w = tensors.w;
    let prepare = this.prepare.length > 0, layout = null;
    if (prepare) {
      const key = w.buffer ?? (w.constant ? w.data : null);
      if (key !== null && cache !== null && this.prepareKey !== null) layout = cache.layout(key, this.prepareKey, this.spec.prepared);
      if (layout?.ready) prepare = false;
      if (layout) Object.assign(bound, layout.buffers);
      else for (const name in this.spec.prepared) bound[name] = this.slot(name);
    }
    this.boundLayout = prepare ? layout : null;
    for (const [name, size] of this.inputs) {
      const t = tensors[name];
      if (t.buffer) {
        bound[name] = t.buffer;
        continue;
      }
      if (name === "w" && !this.bindsW) {
        // only the weight passes read w: written (into the launch's buffer) when they run
        if (prepare) exec.write(bound.w = this.slot("w"), t.data, name);
        continue;
      }
      const kept = t.constant && cache !== null ? cache.upload(t.data, size, name) : null;
      if (kept !== null) bound[name] = kept;
      else exec.write(bound[name] = this.slot(name), t.data, name);
    }
    if (cache !== null && cache.bytes > cache.limit) cache.trim(Object.values(tensors).map((t) => t.buffer ?? t.data));
    if (profile) profile.upload = now();
    bound.y = output === "gpu" ? exec.outputBuffer(this.spec.y_bytes) : this.slot("y");
    return prepare;
  }

  /** A caller's buffer from another GPUDevice is refused before any submission: binding it is a validation
   * error, caught in an error scope around a throwaway bind group of the first pass that binds it. */
  async checkDevice(unchecked) {
    const device = this.executor.device;
    for (const [name, buf] of unchecked) {
      const pass = this.all.find((p) => p.bindings.includes(name));
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
      this.executor.bindable.set(buf, buf.size);
    }
  }

  /** The bind group of pass p over the buffers in `bound`: the one it bound last time (compared buffer by
   * buffer, no key built), else one kept per set of buffers (layers sharing this launch), else a new one. */
  group(p, bound) {
    const names = p.bindings, n = names.length;
    let last = p.lastBound;
    if (last !== null) {
      let j = 0;
      while (j < n && last[j] === bound[names[j]]) j++;
      if (j === n) return p.lastGroup;
    }
    let key = "";
    for (let j = 0; j < n; j++) key += `${idOf(bound[names[j]])},`;
    let g = p.groups.get(key);
    if (g) {
      p.groups.delete(key);
    } else {
      const entries = names.map((name, j) => ({ binding: j, resource: { buffer: bound[name] } }));
      entries.push({ binding: n, resource: { buffer: p.ubuf } });
      g = this.executor.device.createBindGroup({ layout: p.layout, entries });
      if (p.groups.size >= BIND_GROUPS) p.groups.delete(p.groups.keys().next().value);
    }
    p.groups.set(key, g);
    last = p.lastBound ??= new Array(n);
    for (let j = 0; j < n; j++) last[j] = bound[names[j]];
    p.lastGroup = g;
    return g;
  }

  /** The passes into `encoder`: each in a compute pass of its own when timestamped, else all dispatches in
   * one pass (WebGPU orders dispatches within a pass, storage writes visible to the next; fewer calls on
   * the host path). Returns the bind groups no clean call has submitted yet, or null. */
  encode(encoder, passes, bound, stamps, first = 0) {
    let fresh = null;
    if (!stamps) {
      // no descriptor, no label: converting and attaching the variant's name took about 2.5 us of
      // beginComputePass's 6-8 in Dawn for Node on SwiftShader; a failing call's error names the variant itself
      const pass = encoder.beginComputePass();
      for (const p of passes) {
        const g = this.dispatch(pass, p, bound);
        if (g) (fresh ??= []).push(g);
      }
      pass.end();
      return fresh;
    }
    passes.forEach((p, i) => {
      const at = 2 * (first + i);
      const pass = encoder.beginComputePass({ label: `${this.variant}#${i}`,
        timestampWrites: { querySet: this.querySet, beginningOfPassWriteIndex: at, endOfPassWriteIndex: at + 1 } });
      const g = this.dispatch(pass, p, bound);
      if (g) (fresh ??= []).push(g);
      pass.end();
    });
    return fresh;
  }

  /** One pass's dispatch into `pass`; returns its bind group when no clean call has submitted it yet. */
  dispatch(pass, p, bound) {
    const g = this.group(p, bound);
    pass.setPipeline(p.pipeline);
    pass.setBindGroup(0, g);
    pass.dispatchWorkgroups(p.x, p.y, p.z);
    return this.executor.verified.has(g) ? null : g;
  }

  /** One call. tensors: {x, w, b?} each {data: typed array, constant?} or {buffer: GPUBuffer}.
   * output "cpu": y read back into a typed array; "gpu": y = {buffer, shape, dtype}, owned by the caller.
   * timing: GPU ms from timestamp-query (free with a CPU output: the stamps ride along with y's readback).
   * profile: an object that receives performance.now() marks of the stages. weights: the WeightCache of the
   * calling kernel (default: the executor's own, for callers that name none). */
  async run(tensors, options) {
    this.running += 1;
    try {
      return await this.runOnce(tensors, options);
    } finally {
      if (--this.running === 0 && this.retired) this.destroy();
    }
  }

  /** Destroys the launch once no call is running it (a call may still be reading y back). */
  retire() {
    this.retired = true;
    if (!this.running) this.destroy();
  }

  async runOnce(tensors, { output = "cpu", timing = false, profile = null, weights = undefined, into = null } = {}) {
    const exec = this.executor, device = exec.device, spec = this.spec;
    if (into !== null && into.byteLength !== spec.y_bytes) {
      throw kernelError("ConvTransposeError", `into holds ${into.length} values, y has ${spec.y_bytes / into.BYTES_PER_ELEMENT} ` +
        `(shape [${spec.y_shape}])`, "into");
    }
    if (exec.lost) throw kernelError("GpuError", `the WebGPU device was lost (${exec.lost})`);
    if (exec.deferred) {
      const message = exec.deferred;
      exec.deferred = null;
      throw kernelError("GpuError", `an earlier call that kept y on the GPU failed: ${message}`);
    }
    // A call that waits anyway (y or timestamps to read, or a launch's first run, which creates its buffers)
    // runs in validation and out-of-memory error scopes and waits for them too. A resident call that does
    // not wait scopes its submission for validation only (what it allocates, a new y or new cached weights,
    // is scoped on its own) and leaves the verdict to the next call, which throws it; and only when it binds
    // a bind group no clean call has submitted: a repeat of proven buffers skips the scope (popErrorScope
    // is the costliest WebGPU call of a repeat call after submit). What it could still meet is a buffer
    // the caller destroyed and passed again: WebGPU reports that as an uncaptured error.
    const unchecked = this.checkInputs(tensors);
    if (unchecked) await unchecked;
    // From here to the submission nothing awaits.
    const stamps = exec.timed && (timing || output === "cpu");
    const scoped = !this.submitted || output === "cpu" || stamps;
    if (scoped) { device.pushErrorScope("out-of-memory"); device.pushErrorScope("validation"); }
    const prepare = this.bind(tensors, output, profile, weights ?? exec.weightCache());
    const layout = this.boundLayout, bound = this.bound, y = bound.y;
    exec.executions += 1;
    const encoder = device.createCommandEncoder();
    // Data uploaded from the CPU, on a variant exact only for finite data, with y read back anyway: the
    // GPU flags NaN/Inf in it during the same submission (finite.mjs: the caller reruns on an exact variant).
    const check = output === "cpu" ? this.finiteCheck : null;
    const checked = check ? check.checked(tensors) : null;
    if (checked) check.encode(encoder, checked, bound);
    const skipped = prepare ? 0 : this.prepare.length;  // weight-side passes not run this call (their layouts kept)
    const fresh = this.encode(encoder, prepare ? this.all : this.passes, bound, stamps, skipped);
    // Readback buffers come from per-launch pools: y's, and the timestamps' (mapped in the same wait).
    let readback = null, stampRead = null;
    if (output === "cpu") {
      readback = this.readbacks.pop() ?? this.hold(spec.y_bytes, USAGE.MAP_READ | USAGE.COPY_DST, "readback");
      encoder.copyBufferToBuffer(y, 0, readback, 0, padded(spec.y_bytes));
    }
    const flagRead = checked ? check.copyFlag(encoder, this.hold.bind(this)) : null;
    if (stamps) {
      const stampBytes = 8 * this.stampCount;
      stampRead = this.stampReads.pop() ?? this.hold(stampBytes, USAGE.MAP_READ | USAGE.COPY_DST, "timestamps read");
      // only the queries this call wrote: Dawn resolves a query written by an earlier call to that call's time
      // (a skipped weight pass read as its first run's, 0.14 ms added to every call of a 0.05 ms kernel on an H100)
      encoder.resolveQuerySet(this.querySet, 2 * skipped, this.stampCount - 2 * skipped, this.resolved, 0);
      encoder.copyBufferToBuffer(this.resolved, 0, stampRead, 0, stampBytes - 16 * skipped);
    }
    let verdict;
    if (scoped) {
      exec.queue.submit([encoder.finish()]);
      verdict = Promise.all([device.popErrorScope(), device.popErrorScope()]);  // popped at once: calls interleave
    } else if (fresh) {
      device.pushErrorScope("validation");
      exec.queue.submit([encoder.finish()]);
      device.popErrorScope().then(exec.deferVerdict(this.variant, fresh), ignore);
    } else {
      exec.queue.submit([encoder.finish()]);
    }
    if (profile) profile.submit = now();
    if (prepare) {
      if (layout) layout.ready = true;
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
        if (prepare && layout) layout.ready = false;
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
      if (fresh) for (const g of fresh) exec.verified.add(g);
      if (readback) {
        const mapped = readback.getMappedRange(0, padded(spec.y_bytes));
        if (into) (data = into).set(new TYPED_ARRAYS[spec.dtype](mapped, 0, into.length));
        else data = new TYPED_ARRAYS[spec.dtype](mapped.slice(0, spec.y_bytes));
        readback.unmap();
        this.readbacks.push(readback);
      }
      if (flagRead) meta.nonfinite = check.flagged(flagRead);
      if (stampRead) {
        meta.gpu_ms = gpuMs(new BigUint64Array(stampRead.getMappedRange()), this.stampCount / 2 - skipped);
        stampRead.unmap();
        this.stampReads.push(stampRead);
      }
    }
    if (profile) profile.done = now();
    const result = output === "gpu"
      ? { buffer: y, shape: spec.y_shape, dtype: spec.dtype, dispose: () => exec.recycle(y, padded(spec.y_bytes)) }
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
   * written once, into the launch's own buffers: the timing keeps no weights), y left on the GPU. Per run:
   * wall ms to onSubmittedWorkDone and GPU ms from timestamps, both per repetition. Weight-side passes run
   * once, before. */
  async time(tensors, { warmup = 1, runs = 5, repeats = 1, busyMs = 0 } = {}) {
    const exec = this.executor, device = exec.device;
    if (exec.lost) throw kernelError("GpuError", `the WebGPU device was lost (${exec.lost})`);
    await this.checkInputs(tensors);
    const prepare = this.bind(tensors, "cpu", null, null);
    const bound = { ...this.bound };  // kept across the awaits below: calls in between rebind this.bound
    device.pushErrorScope("validation");
    if (prepare) {
      const encoder = device.createCommandEncoder();
      this.encode(encoder, this.prepare, bound, false);
      device.queue.submit([encoder.finish()]);
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
            pass.dispatchWorkgroups(p.x, p.y, p.z);
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

const ignore = () => {};

/** queue.writeBuffer straight from the caller's typed array (a byte length not a multiple of 4, as an odd
 * count of float16 values has, goes through a padded copy: writeBuffer needs whole 4-byte words). */
function writeTyped(queue, buffer, data) {
  if (data.byteLength % 4 === 0) {
    queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
  } else {
    const copy = new Uint8Array(padded(data.byteLength));
    copy.set(new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
    queue.writeBuffer(buffer, 0, copy);
  }
}
