// Plans persisted between visits, so that a revisit runs the signatures it has seen before Python has booted.
//
// What a signature's first call leaves in the executor (a launch: its passes' WGSL, bindings, uniforms and grids,
// buffer sizes) is plain data but for its compiled pipelines; stored with each pipeline's WGSL instead, it is
// rebuilt here, compiled, and run, with no Python. One record per package revision (the sha-256 of bundle.zip,
// which holds the Python package, the templates and the tuning tables that decide every plan): the features and
// limits the device was opened with, and per adapter (device.mjs adapterKey) the tuning tables' revision the
// plans followed (`planning`), the entries by signature, each {digest, spec, starter?} (starter: {digest, plan: the
// entry's digest, spec, mainMs, runMs}, a quick first kernel where the plan compiles slowly: kernel.mjs), and what adaptation learned by
// signature ({variant, params, why}: adapt.mjs), which Python takes as the planner's measured step, and what
// adaptation measured of the cost model (`calibration`: per rate key the sums of log(measured / predicted) and of the
// share of the prediction the rate decides that least squares needs), which Python applies to its predictions
// (app/calibration.py).
//
// A record is untrusted text (store.mjs holds it by the store's rules): read whole or not at all, each part
// checked before use (`checkedSpec`: its digest, then its shapes, sizes, grids, bindings and dtype against the
// request and the device), and never trusted over the package: once Python is up, kernel.mjs plans every
// signature that ran from the store again and drops an entry that differs. docs/reliability.md says what this
// does and does not protect against.

import { DTYPES } from "./contract.mjs";
import { outputShape } from "./output-shape.mjs";
import { gatherWork } from "./quick-start.mjs";
import { warnStore } from "./store.mjs";

const FORMAT = 2;
const MAX_ENTRIES = 64;  // signatures kept per adapter, the least recently planned dropped first
const MAX_LEARNED = 256;  // adaptation's choices kept per adapter, the least recently learned dropped first
const MAX_PASSES = 16;  // a plan has at most a few weight passes and a few main passes
const MAX_UNIFORMS = 256;
const MAX_SOURCE = 1 << 20;  // one pass's WGSL: tens of KB as rendered
const NAME = /^[a-z][a-z0-9_]{0,63}$/;  // variants, scratch and prepared buffers
// Calibration's bounds, app/calibration.py's (tests/test_calibration.py holds them equal): a sample's ratio within
// [1/maxFactor, maxFactor], a key's count scaled back to maxCount (its other sums alike: old samples fade), maxKeys
// keys
export const CALIBRATION = { maxFactor: 32, maxCount: 64, maxKeys: 256 };
const SUMS = ["n", "w", "ww", "log", "wlog"];  // what is kept per rate key (app/calibration.py SUMS)
const RATE_KEY = /^[a-z][a-z0-9_]{0,63}(\/[a-z][a-z0-9-]{0,63})?\/[a-z0-9]{1,16}$/;  // app/cost_model.py rate_key
const INPUT_NAMES = ["x", "w", "b"];
const ITEMSIZE = { float32: 4, float16: 2 };

/** The sha-256 of bytes (an ArrayBuffer or view) or of a string's UTF-8, as hex. */
export async function sha256(data) {
  const bytes = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** The sha-256 of bundle.zip's bytes, as hex: the package revision every stored plan belongs to. */
export const revisionOf = (bytes) => sha256(bytes);

/** A launch spec as stored: each pipeline replaced by its {key, source, label} (sources: pipeline -> that). */
export function storable(spec, sources) {
  const pipeline = (p) => {
    const source = sources.get(p);
    if (!source) throw new Error("a pipeline of the launch has no recorded source");
    return source;
  };
  const pass = (p) => ({ ...p, pipeline: pipeline(p.pipeline) });
  return { ...spec, prepare: spec.prepare.map(pass), passes: spec.passes.map(pass),
           finite_check: spec.finite_check ? pipeline(spec.finite_check) : null };
}

/** A stored spec made runnable on `executor`: its pipelines compiled (or found in the executor's cache). The
 * executor's cache, which Python's plans share, is keyed by each source's sha-256 (app/gpu.py pipeline_key): a
 * stored key that is not its source's would put that source where Python finds it for another, so it is refused. */
export async function runnable(stored, executor) {
  const compile = async (p) => {
    if (!p.key.endsWith(`|${await sha256(p.source)}`)) throw new Error(`pipeline ${p.label}: its key is not its source's digest`);
    return executor.pipeline(p.key, p.source, p.label);
  };
  const pass = async (p) => ({ ...p, pipeline: await compile(p.pipeline) });
  return { ...stored, prepare: await Promise.all(stored.prepare.map(pass)), passes: await Promise.all(stored.passes.map(pass)),
           finite_check: stored.finite_check ? await compile(stored.finite_check) : null };
}

const isObject = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const isCount = (v, max) => Number.isSafeInteger(v) && v >= 1 && v <= max;
const sameList = (a, b) => Array.isArray(a) && a.length === b.length && a.every((v, i) => v === b[i]);

/** Why a stored spec cannot run the request on this device (null: it can, as far as can be known before Python
 * plans it). request: {tensors: {name: {shape, dtype}}, attributes}; limits: the device's GPUSupportedLimits. */
export function storedSpecFault(spec, { tensors, attributes }, limits) {
  if (!isObject(spec)) return "the entry is not an object";
  const dtype = tensors.x.dtype;
  if (!DTYPES.includes(dtype) || spec.dtype !== dtype) return `dtype ${String(spec.dtype).slice(0, 20)} for a ${dtype} request`;
  if (typeof spec.variant !== "string" || !NAME.test(spec.variant)) return "no variant name";
  if (typeof spec.reason !== "string") return "no reason";
  const want = outputShape(tensors.x.shape, tensors.w.shape, attributes);
  if (!sameList(spec.y_shape, want)) return `y_shape ${JSON.stringify(spec.y_shape)?.slice(0, 60)}, the request's is [${want}]`;
  const maxBytes = Math.min(limits.maxStorageBufferBindingSize, limits.maxBufferSize);
  const yBytes = want.reduce((n, d) => n * d, ITEMSIZE[dtype]);
  if (spec.y_bytes !== yBytes || yBytes > maxBytes) return `y_bytes ${spec.y_bytes} for y [${want}] (${dtype})`;
  if (!isObject(spec.inputs)) return "no inputs";
  for (const [name, bytes] of Object.entries(spec.inputs)) {
    const t = tensors[name];
    if (!INPUT_NAMES.includes(name) || !t) return `input ${name.slice(0, 20)} is not the request's`;
    if (bytes !== t.shape.reduce((n, d) => n * d, ITEMSIZE[dtype])) return `input ${name}: ${bytes} bytes for [${t.shape}]`;
  }
  const buffers = new Set([...Object.keys(spec.inputs), "y"]);
  for (const group of ["scratch", "prepared"]) {
    if (!isObject(spec[group])) return `no ${group} buffers`;
    for (const [name, bytes] of Object.entries(spec[group])) {
      if (!NAME.test(name) || INPUT_NAMES.includes(name) || name === "y" || buffers.has(name)) return `${group} buffer ${name.slice(0, 20)}`;
      if (!isCount(bytes, maxBytes)) return `${group} buffer ${name}: ${bytes} bytes`;
      buffers.add(name);
    }
  }
  if (typeof spec.finite_only !== "boolean" || !Array.isArray(spec.finite_scanned)) return "no finite policy";
  if (!isCount(spec.check_workgroup, limits.maxComputeInvocationsPerWorkgroup)) return "check_workgroup";
  const pipelineFault = (p) => isObject(p) && typeof p.key === "string" && typeof p.label === "string" &&
    typeof p.source === "string" && p.source.length <= MAX_SOURCE ? null : "a pipeline is not {key, source, label}";
  if (spec.finite_check !== null && pipelineFault(spec.finite_check)) return pipelineFault(spec.finite_check);
  for (const group of ["prepare", "passes"]) {
    const passes = spec[group];
    if (!Array.isArray(passes) || passes.length > MAX_PASSES || (group === "passes" && !passes.length)) return `${group}`;
    for (const p of passes) {
      if (!isObject(p) || pipelineFault(p.pipeline)) return `a pass of ${group}: ${pipelineFault(p?.pipeline) ?? "not an object"}`;
      if (!Array.isArray(p.bindings) || !isCount(p.bindings.length, limits.maxStorageBuffersPerShaderStage) ||
          !p.bindings.every((n) => buffers.has(n))) return `a pass binds ${JSON.stringify(p.bindings)?.slice(0, 80)}`;
      if (!Array.isArray(p.uniforms) || p.uniforms.length > MAX_UNIFORMS ||
          !p.uniforms.every((u) => Number.isInteger(u) && u >= -(2 ** 31) && u < 2 ** 31)) return "a pass's uniforms";
      if (!Array.isArray(p.workgroups) || p.workgroups.length !== 3 ||
          !p.workgroups.every((g) => isCount(g, limits.maxComputeWorkgroupsPerDimension))) {
        return `a pass's grid ${JSON.stringify(p.workgroups)?.slice(0, 60)} (at most ${limits.maxComputeWorkgroupsPerDimension} a dimension)`;
      }
    }
  }
  return null;
}

const digestOf = (spec) => sha256(JSON.stringify(spec));

/** Why a stored calibration entry ({n, w, ww, log, wlog} under a rate key) is not one (null: it is): the checks of
 * app/calibration.py `_why_not`, which checks again what Python is given. */
function calibrationFault(key, entry) {
  if (!RATE_KEY.test(key)) return "not a rate key";
  if (!isObject(entry) || Object.keys(entry).length !== SUMS.length || !SUMS.every((k) => Number.isFinite(entry[k]))) {
    return `not {${SUMS.join(", ")}} of finite numbers`;
  }
  const { n, w, ww, log, wlog } = entry, slack = 1 + 1e-9, bound = Math.log(CALIBRATION.maxFactor) * slack;
  if (!(n > 0 && n <= CALIBRATION.maxCount)) return `a count outside (0, ${CALIBRATION.maxCount}]`;
  // each sample's share is in (0, 1]: so 0 < ww <= w <= n, and w^2 <= n * ww
  if (!(ww > 0 && ww <= w * slack && w <= n * slack && w * w <= n * ww * slack)) {
    return "shares no samples could add up to";
  }
  if (Math.abs(log) > n * bound || Math.abs(wlog) > w * bound) return `a mean ratio past ${CALIBRATION.maxFactor}x`;
  return null;
}

/** A stored calibration as {key: {n, w, ww, log, wlog}} of what holds; each part that does not is dropped with a
 * warning naming the store (Python checks what it is given again: app/calibration.py checked). */
function checkedCalibration(value, name) {
  const out = Object.create(null);
  if (value === undefined) return out;
  if (!isObject(value)) {
    warnStore(name, "a stored calibration is not an object; dropped");
    return out;
  }
  for (const [key, entry] of Object.entries(value)) {
    const fault = Object.keys(out).length === CALIBRATION.maxKeys ? `past the ${CALIBRATION.maxKeys} keys kept`
      : calibrationFault(key, entry);
    if (fault === null) out[key] = Object.fromEntries(SUMS.map((k) => [k, entry[k]]));
    else warnStore(name, `a stored calibration of ${JSON.stringify(key.slice(0, 80))} dropped (${fault})`);
  }
  return out;
}

/** `sums` ({key: {n, w, ww, log, wlog}}) with adaptation's `samples` ([{key, model_ms, fixed_ms, ms}]:
 * Trial.samples) added, as app/calibration.py reads them: w, the share of the prediction the rate decides
 * (1 - fixed_ms / model_ms), and r = log(ms / model_ms) (clamped to +-log(maxFactor)) add 1, w, w^2, r and w * r; a
 * count past maxCount scales all five back, the keys most recently measured kept past maxKeys. A sample that is not
 * a rate key with positive finite times and a share of its prediction to a rate is left out. */
export function calibrated(sums, samples) {
  const out = Object.assign(Object.create(null), sums);
  const bound = Math.log(CALIBRATION.maxFactor);
  for (const { key, model_ms: model, fixed_ms: fixed, ms } of samples) {
    if (typeof key !== "string" || !RATE_KEY.test(key) || !(model > 0 && ms > 0 && Number.isFinite(model) && Number.isFinite(ms)) ||
        !(fixed >= 0 && fixed < model)) continue;
    const w = 1 - fixed / model;
    const r = Math.min(bound, Math.max(-bound, Math.log(ms / model)));
    const was = out[key] ?? Object.fromEntries(SUMS.map((k) => [k, 0]));
    delete out[key];
    const add = { n: 1, w, ww: w * w, log: r, wlog: w * r };
    const scale = Math.min(1, CALIBRATION.maxCount / (was.n + 1));
    out[key] = Object.fromEntries(SUMS.map((k) => [k, (was[k] + add[k]) * scale]));
  }
  const keys = Object.keys(out);
  for (const key of keys.slice(0, Math.max(0, keys.length - CALIBRATION.maxKeys))) delete out[key];
  return out;
}

function strings(value, max) {
  return Array.isArray(value) && value.length <= max && value.every((s) => typeof s === "string" && s.length <= 256);
}

/** A record's text as data: {format, revision, device, adapters}, with contexts that are not {planning, entries}
 * left out (warned); throws when the record as a whole is not one this revision wrote. */
function parseRecord(text, revision, name) {
  const data = JSON.parse(text);
  if (!isObject(data) || data.format !== FORMAT || data.revision !== revision) {
    throw new Error(`format ${data?.format}, revision ${String(data?.revision).slice(0, 12)}`);
  }
  if (!isObject(data.adapters)) throw new Error("its adapters are not an object");
  const device = isObject(data.device) && strings(data.device.features, 64) && strings(data.device.limitNames, 128)
    ? { features: data.device.features, limitNames: data.device.limitNames } : null;
  const adapters = Object.create(null);
  for (const [adapter, context] of Object.entries(data.adapters)) {
    if (isObject(context) && typeof context.planning === "string" && isObject(context.entries)) {
      adapters[adapter] = { planning: context.planning, entries: Object.assign(Object.create(null), context.entries),
                            learned: Object.assign(Object.create(null), isObject(context.learned) ? context.learned : {}),
                            calibration: checkedCalibration(context.calibration, name) };
    } else {
      warnStore(name, `stored plans for an adapter are not {planning, entries}; ignored`);
    }
  }
  return { format: FORMAT, revision, device, adapters };
}

/** The record's part for an adapter under `planning` (the device it was opened with noted): made afresh where
 * there is none, or one planned under other tables (what was learned and measured under those goes with it). */
function contextOf(data, { adapter, planning, features, limitNames }) {
  data.device = { features, limitNames };
  let context = data.adapters[adapter];
  if (!context || context.planning !== planning) {
    context = data.adapters[adapter] = { planning, entries: Object.create(null), learned: Object.create(null),
                                         calibration: Object.create(null) };
  }
  return context;
}

/** The plans of one package revision in a store: read once; each signature planned is merged into the stored
 * record (what other kernels and processes stored since is kept). */
export class PlanRecord {
  constructor(store, revision, text) {
    this.store = store;
    this.name = store.name ?? "plan store";
    this.key = `plans|${revision}`;
    this.revision = revision;
    this.data = { format: FORMAT, revision, device: null, adapters: Object.create(null) };
    if (text === null) return;
    try {
      this.data = parseRecord(text, revision, this.name);
    } catch (err) {
      warnStore(this.name, `stored plans under ${this.key} ignored (${err.message}); planned afresh`);
    }
  }

  static async open(store, revision) {
    let text = null;
    try {
      text = await store.get(`plans|${revision}`);
    } catch (err) {
      warnStore(store.name ?? "plan store", `could not be read (${err?.message ?? err}); planned afresh`);
    }
    return new PlanRecord(store, revision, typeof text === "string" ? text : null);
  }

  /** What the device must be opened with for the stored plans to hold: {features, limitNames} or null. */
  get device() {
    return this.data.device;
  }

  planning(adapter) {
    return this.data.adapters[adapter]?.planning ?? null;
  }

  /** The stored spec of a signature on this adapter, planned under `planning`, checked against the request and
   * the device; null when there is none or it fails a check (then dropped, with a warning naming why). */
  async checkedSpec(adapter, planning, signature, request, limits) {
    const context = this.data.adapters[adapter];
    if (!context || context.planning !== planning) return null;
    const entry = context.entries[signature];
    if (entry === undefined) return null;
    let fault = !isObject(entry) || typeof entry.digest !== "string" ? "not {digest, spec}"
      : await digestOf(entry.spec) !== entry.digest ? "its digest does not match its content" : null;
    fault ??= storedSpecFault(entry.spec, request, limits);
    if (fault === null) return entry.spec;
    warnStore(this.name, `a stored plan was dropped (${fault}); planned afresh`);
    await this.drop(adapter, signature);
    return null;
  }

  /** What adaptation learned for a signature on this adapter, under `planning`: {variant, params, why} or null (a
   * choice not of that shape is ignored; Python takes one only where it covers the request). */
  learned(adapter, planning, signature) {
    const context = this.data.adapters[adapter];
    const choice = context?.planning === planning ? context.learned[signature] : undefined;
    if (choice === undefined) return null;
    const params = choice?.params;
    if (isObject(choice) && typeof choice.variant === "string" && NAME.test(choice.variant) && typeof choice.why === "string" &&
        (params === null || (isObject(params) && Object.values(params).every((v) => Number.isInteger(v) || typeof v === "boolean")))) {
      return { variant: choice.variant, params, why: choice.why.slice(0, 200) };
    }
    warnStore(this.name, "a learned choice is not {variant, params, why}; ignored");
    return null;
  }

  /** Keeps what adaptation chose for a signature (merged into the stored record, as `keep`). */
  async learn(context, signature, choice) {
    await this.put(context, "learned", signature, choice, MAX_LEARNED);
  }

  /** What adaptation measured of the cost model on this adapter, under `planning`: {key: {n, w, ww, log, wlog}},
   * checked when read (a copy; empty when there is none). */
  calibration(adapter, planning) {
    const context = this.data.adapters[adapter];
    return context?.planning === planning ? calibrated(context.calibration, []) : Object.create(null);
  }

  /** Adds a trial's samples to this adapter's calibration (merged into the stored record, as `keep`). */
  async calibrate(context, samples) {
    const change = (data) => {
      const own = contextOf(data, context);
      own.calibration = calibrated(own.calibration, samples);
    };
    change(this.data);
    await this.write(change);
  }

  /** The calibration's tag a signature's entry was planned under (`keep`), or null. */
  calibratedAs(adapter, signature) {
    const tag = this.data.adapters[adapter]?.entries[signature]?.calibration;
    return typeof tag === "string" ? tag : null;
  }

  /** A signature's starter on this adapter (its quick first kernel where its plan compiles slowly: kernel.mjs),
   * checked as a stored plan is, and its times {spec, mainMs, runMs} (the plan's measured compile and predicted run,
   * the starter's predicted run); null when there is none or it fails a check (then it alone is dropped, with a
   * warning naming why). */
  async checkedStarter(adapter, planning, signature, request, limits) {
    const context = this.data.adapters[adapter];
    const entry = context?.planning === planning ? context.entries[signature] : undefined;
    const starter = entry?.starter;
    if (starter === undefined) return null;
    const ms = (v) => typeof v === "number" && v > 0 && v < 1e6;
    let fault = !isObject(starter) || typeof starter.digest !== "string" || !ms(starter.mainMs) || !ms(starter.runMs)
      ? "not {digest, plan, spec, mainMs, runMs}" : starter.plan !== entry.digest
        ? "it was made beside another plan" : await digestOf(starter.spec) !== starter.digest
          ? "its digest does not match its content" : null;
    fault ??= storedSpecFault(starter.spec, request, limits);
    if (fault === null) return { spec: starter.spec, mainMs: starter.mainMs, runMs: starter.runMs };
    warnStore(this.name, `a stored starter was dropped (${fault}); its plan runs first`);
    await this.dropStarter(adapter, signature);
    return null;
  }

  /** The pipeline of a stored starter that is the `variant` gather kernel for `dtype`, with a bias or not (its
   * WGSL depends on those alone: quick-start.mjs), checked against its digest: {pipeline, checkWorkgroup,
   * signature (the entry it came from), runMs (its predicted run), work (gatherWork)}, or null. */
  async starterPipeline(adapter, planning, variant, dtype, hasBias) {
    const context = this.data.adapters[adapter];
    if (context?.planning !== planning) return null;
    for (const [signature, entry] of Object.entries(context.entries)) {
      const spec = entry?.starter?.spec;
      if (!isObject(spec) || spec.variant !== variant || spec.dtype !== dtype || !isObject(spec.inputs) ||
          ("b" in spec.inputs) !== hasBias || !Array.isArray(spec.passes) || spec.passes.length !== 1) continue;
      const pipeline = spec.passes[0]?.pipeline;
      const work = gatherWork(spec);
      if (!(entry.starter.runMs > 0) || !(work > 0) || !isObject(pipeline) ||
          typeof pipeline.source !== "string" || typeof pipeline.key !== "string" || typeof pipeline.label !== "string" ||
          await digestOf(spec) !== entry.starter.digest) continue;
      return { pipeline, checkWorkgroup: spec.check_workgroup, signature, runMs: entry.starter.runMs, work };
    }
    return null;
  }

  /** Forgets a signature's starter (its plan stays), here and in the store. */
  async dropStarter(adapter, signature) {
    const change = (data) => { delete data.adapters[adapter]?.entries[signature]?.starter; };
    change(this.data);
    await this.write(change);
  }

  /** Whether a plan on this adapter, under `planning`, took `compileMs` or more to compile and run (a starter
   * kept beside it measured so): then a signature seen for the first time runs its starter first too (kernel.mjs). */
  slowCompiles(adapter, planning, compileMs) {
    const context = this.data.adapters[adapter];
    return context?.planning === planning && Object.values(context.entries).some((e) => e?.starter?.mainMs >= compileMs);
  }

  /** Keeps a starter beside the entry of `signature` whose spec is `main` (none where the entry changed since). */
  async keepStarter(context, signature, main, spec, mainMs, runMs) {
    const digest = await digestOf(main);
    const starter = { digest: await digestOf(spec), plan: digest, spec, mainMs, runMs };
    const change = (data) => {
      const entry = contextOf(data, context).entries[signature];
      if (isObject(entry) && entry.digest === digest) entry.starter = starter;
    };
    change(this.data);
    await this.write(change);
  }

  /** Forgets a signature's entry, here and in the store. */
  async drop(adapter, signature) {
    delete this.data.adapters[adapter]?.entries[signature];
    await this.write((data) => { delete data.adapters[adapter]?.entries[signature]; });
  }

  /** Keeps a signature's spec: merged into the stored record under the store's rules (a failed write is a
   * warning, never the call's error); `calibration`: a tag of the calibration it was planned with, if any. */
  async keep(context, signature, spec, calibration = null) {
    await this.put(context, "entries", signature,
      { digest: await digestOf(spec), spec, ...(calibration ? { calibration } : {}) }, MAX_ENTRIES);
  }

  /** `value` under `signature` in the adapter's `part` (entries or learned), the most recent of at most `max`, here
   * and in the store; a context planned under other tables starts afresh. */
  async put(context, part, signature, value, max) {
    const change = (data) => {
      const items = contextOf(data, context)[part];
      delete items[signature];
      items[signature] = value;
      const names = Object.keys(items);
      for (const name of names.slice(0, Math.max(0, names.length - max))) delete items[name];
    };
    change(this.data);
    await this.write(change);
  }

  async write(change) {
    try {
      await this.store.update(this.key, (text) => {
        let data = { format: FORMAT, revision: this.revision, device: null, adapters: Object.create(null) };
        if (text !== null) {
          try { data = parseRecord(text, this.revision, this.name); } catch { /* written afresh */ }
        }
        change(data);
        return JSON.stringify(data);
      });
    } catch (err) {
      warnStore(this.name, `could not be written (${err?.message ?? err})`);
    }
  }
}
